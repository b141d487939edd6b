"""Cell, AWSApplicationLoadBalancerConfig, AWSNetworkLoadBalancerConfig, AWSTargetGroup,
Pause and VersionBlocklist.

Manifests written for the original okra (`okra.mumoshu.github.io` docs) keep
their field names: `ingress.awsApplicationLoadBalancer.listenerARN`,
`targetGroupSelector`, `replicas`, `version`, `versionedBy.label`,
`updateStrategy.canary.{analysis,steps}` with Argo Rollouts' step kinds, and
`forwardTargetGroups` on the load balancer config. The original's Go API spells a few
fields elsewhere (`targetGroupSelector.versionLabels`, `listener.rule`, the `experiment`
and `setCanaryScale` steps): accepted and read as okra spells them (`spelling`).
"""

from __future__ import annotations

import datetime
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1 import spelling
from okra_controllers.api.v1alpha1.argocd import (
    ArgoCDApplicationSet as ArgoCDApplicationSet,
)
from okra_controllers.api.v1alpha1.argocd import (
    ArgoCDClusterSecret as ArgoCDClusterSecret,
)
from okra_controllers.api.v1alpha1.argocd import (
    ArgoCDUpdateStrategy as ArgoCDUpdateStrategy,
)
from okra_controllers.api.v1alpha1.argocd import (
    CellArgoCD as CellArgoCD,
)
from okra_controllers.api.v1alpha1.backends import NLBListener, Route53Records
from okra_controllers.api.v1alpha1.common import (
    ARN_MAX_LENGTH,
    ApiModel,
    Condition,
    OkraObject,
    PendingNotification,
    condition_column,
    okra_crd,
)
from okra_controllers.api.v1alpha1.history import RolloutRecord
from okra_controllers.api.v1alpha1.listener import (
    HeaderCondition as HeaderCondition,
)
from okra_controllers.api.v1alpha1.listener import (
    LabelSelector as LabelSelector,
)
from okra_controllers.api.v1alpha1.listener import (
    ListenerRule as ListenerRule,
)
from okra_controllers.api.v1alpha1.listener import (
    QueryStringCondition as QueryStringCondition,
)
from okra_controllers.api.v1alpha1.strategy import (
    RolloutCheck,
    UpdateStrategy,
    VersionedBy,
)
from okra_controllers.api.v1alpha1.system import (
    ApplicationStatus,
    FailurePolicy,
    SystemApplication,
    SystemCluster,
    SystemClusterStatus,
)
from okra_controllers.api.v1alpha1.traffic import TrafficConfirmation, TrafficStatus
from okra_runtime.crdgen import CRDInfo, PrinterColumn

DEFAULT_VERSION_LABEL = "okra.mumo.co/version"
_ARN = r"^arn:[a-z0-9-]+:elasticloadbalancing:"
_ROLE_ARN = r"^arn:[a-z0-9-]+:iam::[0-9]{12}:role/.+"


class TargetGroupSelector(LabelSelector):
    version_labels: list[str] | None = Field(default=None, max_length=8)
    """The original okra's place for `spec.versionLabels`; read as that (with a
    `DeprecatedSpelling` Event)."""


class OriginalForwardTargetGroup(ApiModel):
    name: str = ""
    arn: str = ""
    weight: int = Field(default=0, ge=0, le=999)


class OriginalForward(ApiModel):
    target_groups: list[OriginalForwardTargetGroup] = Field(default_factory=list, max_length=5)


class OriginalListenerRule(ApiModel):
    """The original okra's listener rule: conditions as in `listenerRule`, but `headers`
    a map of name to values and `queryStrings` a map of key to value."""

    priority: int = Field(default=0, ge=0, le=50000)
    """0: okra's default (50000)."""
    hosts: list[str] = Field(default_factory=list, max_length=5)
    path_patterns: list[str] = Field(default_factory=list, max_length=5)
    methods: list[str] = Field(default_factory=list, max_length=5)
    source_i_ps: list[str] = Field(default_factory=list, max_length=5, alias="sourceIPs")
    headers: dict[str, list[str]] = Field(default_factory=dict, max_length=5)
    query_strings: dict[str, str] = Field(default_factory=dict, max_length=5)
    forward: OriginalForward | None = None


class OriginalListener(ApiModel):
    """The original okra's spelling of `listenerRule` (and, on a load balancer config,
    `forwardTargetGroups`): `listener.rule`."""

    rule: OriginalListenerRule = Field(default_factory=OriginalListenerRule)


class CellALB(ApiModel):
    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.listener) || !has(self.listenerRule)",
                    "message": "listener.rule (the original okra's spelling) and listenerRule "
                    "say the same thing: write listenerRule only",
                }
            ]
        }
    }
    listener_arn: str = Field(alias="listenerARN", pattern=_ARN, max_length=ARN_MAX_LENGTH)
    target_group_selector: TargetGroupSelector = Field(default_factory=TargetGroupSelector)
    listener_rule: ListenerRule | None = None
    """Defaults to a catch-all (`pathPatterns: ["/*"]`) at priority 50000."""
    listener: OriginalListener | None = None
    """The original okra's spelling of `listenerRule` (`listener.rule`); read as that."""
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=_ROLE_ARN, max_length=ARN_MAX_LENGTH
    )
    """An IAM role to assume for the listener (the ALB in another account)."""


class CellNLB(NLBListener):
    target_group_selector: TargetGroupSelector = Field(default_factory=TargetGroupSelector)


class CellRoute53(Route53Records):
    """A weighted DNS name in front of one load balancer per cluster: okra owns the
    records of `recordName`/`recordType` in the zone (an AWSRoute53RecordSetConfig), one
    per selected target group, named by it (`SetIdentifier`) and pointing at the load
    balancer the target group is attached to. A version's share (0..100) is the weight
    of its records."""

    target_group_selector: TargetGroupSelector = Field(default_factory=TargetGroupSelector)


class CellIngress(ApiModel):
    """Where the Cell's traffic comes in. `AWSApplicationLoadBalancer`: okra owns one
    listener rule (`awsApplicationLoadBalancer`). `AWSNetworkLoadBalancer`: okra owns the
    listener's default action (`awsNetworkLoadBalancer`; the original okra's docs nest
    it under `awsApplicationLoadBalancer`, which is accepted with a warning Event).
    `AWSRoute53`: okra owns the weighted records of one DNS name (`awsRoute53`), one per
    cluster's load balancer."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "self.type != 'AWSNetworkLoadBalancer' || "
                    "has(self.awsNetworkLoadBalancer) || has(self.awsApplicationLoadBalancer)",
                    "message": "type AWSNetworkLoadBalancer needs awsNetworkLoadBalancer "
                    "(listenerARN, targetGroupSelector)",
                },
                {
                    "rule": "self.type != 'AWSApplicationLoadBalancer' || "
                    "has(self.awsApplicationLoadBalancer)",
                    "message": "type AWSApplicationLoadBalancer needs awsApplicationLoadBalancer "
                    "(listenerARN, targetGroupSelector)",
                },
                {
                    "rule": "self.type == 'AWSNetworkLoadBalancer' || "
                    "!has(self.awsNetworkLoadBalancer)",
                    "message": "awsNetworkLoadBalancer is for type AWSNetworkLoadBalancer",
                },
                {
                    "rule": "self.type != 'AWSRoute53' || has(self.awsRoute53)",
                    "message": "type AWSRoute53 needs awsRoute53 (hostedZoneID, recordName, "
                    "targetGroupSelector)",
                },
                {
                    "rule": "self.type == 'AWSRoute53' || !has(self.awsRoute53)",
                    "message": "awsRoute53 is for type AWSRoute53",
                },
                {
                    "rule": "self.type != 'AWSRoute53' || !has(self.awsApplicationLoadBalancer)",
                    "message": "awsApplicationLoadBalancer is not read with type AWSRoute53 "
                    "(okra owns the weighted records of awsRoute53, no listener rule): remove "
                    "ingress.awsApplicationLoadBalancer",
                },
                {
                    "rule": "!has(self.awsNetworkLoadBalancer) || "
                    "!has(self.awsApplicationLoadBalancer)",
                    "message": "awsApplicationLoadBalancer beside awsNetworkLoadBalancer is not "
                    "read (an NLB Cell reads awsNetworkLoadBalancer): remove "
                    "ingress.awsApplicationLoadBalancer",
                },
            ]
        }
    }
    type: Literal["AWSApplicationLoadBalancer", "AWSNetworkLoadBalancer", "AWSRoute53"] = (
        "AWSApplicationLoadBalancer"
    )
    aws_application_load_balancer: CellALB | None = None
    aws_network_load_balancer: CellNLB | None = None
    aws_route53: CellRoute53 | None = Field(default=None, alias="awsRoute53")

    @property
    def network(self) -> bool:
        return self.type == "AWSNetworkLoadBalancer"

    @property
    def route53(self) -> bool:
        return self.type == "AWSRoute53"

    def listener(self) -> CellALB | CellNLB | CellRoute53 | None:
        """The traffic section that applies: for an NLB `awsNetworkLoadBalancer`, else the
        original okra's spelling (`awsApplicationLoadBalancer`) if only that is given; for
        Route 53 `awsRoute53`."""
        if self.route53:
            return self.aws_route53
        if self.network:
            return self.aws_network_load_balancer or self.aws_application_load_balancer
        return self.aws_application_load_balancer

    def misspelled(self) -> bool:
        """An NLB given under `awsApplicationLoadBalancer` (the original docs' spelling)."""
        return (
            self.network
            and self.aws_network_load_balancer is None
            and self.aws_application_load_balancer is not None
        )


class CellSpec(ApiModel):
    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.ingress) || has(self.argocd) || "
                    "has(self.clusters) || has(self.applications)",
                    "message": "a Cell needs spec.ingress (a load balancer) or spec.argocd "
                    "(Argo CD cluster Secrets), or both; or, for a system of several "
                    "clusters and applications, spec.clusters and spec.applications",
                },
                {
                    "rule": "!(has(self.clusters) || has(self.applications)) || "
                    "!(has(self.ingress) || has(self.argocd) || has(self.prechecks) || "
                    "has(self.postchecks))",
                    "message": "a Cell is either one application (spec.ingress, spec.argocd, "
                    "spec.prechecks, spec.postchecks) or a system (spec.clusters and "
                    "spec.applications), not both: move "
                    "the application's settings into an entry of spec.applications",
                },
                {
                    "rule": "!has(self.clusters) || !has(self.version)",
                    "message": "spec.version pins a single-application Cell's version; a "
                    "system Cell's version is its spec.clusters (edit the list to move, put "
                    "the clusters that served back to roll back): remove spec.version",
                },
                {
                    "rule": "!has(self.clusters) || !has(self.replicas) || self.replicas == 1",
                    "message": "spec.replicas is for a single-application Cell (how many new "
                    "target groups it waits for); a system Cell waits for every cluster of "
                    "spec.clusters (requireReady, readyTimeout): remove spec.replicas",
                },
                {
                    "rule": "!has(self.clusters) || (!has(self.versionedBy) && "
                    "!has(self.versionLabels))",
                    "message": "spec.versionedBy and spec.versionLabels name the version label "
                    "of a single-application Cell's target groups; a system Cell numbers its "
                    "cluster sets itself: remove them",
                },
                {
                    "rule": "!has(self.clusters) || !has(self.updateStrategy)",
                    "message": "spec.updateStrategy is for a single-application Cell; a system "
                    "Cell moves each application by its own steps: write "
                    "spec.applications[].alb.updateStrategy (or nlb.updateStrategy, "
                    "route53.updateStrategy: stepWeight, totalWeight)",
                },
                {
                    "rule": "!has(self.progressDeadlineAbort) || !self.progressDeadlineAbort || "
                    "has(self.progressDeadlineSeconds)",
                    "message": "spec.progressDeadlineAbort acts when a progress deadline "
                    "passes, and there is none: set spec.progressDeadlineSeconds too (Argo "
                    "Rollouts' default is 600)",
                },
                {
                    "rule": "has(self.clusters) == has(self.applications)",
                    "message": "a system Cell needs both spec.clusters and spec.applications",
                },
                {
                    "rule": "!has(self.clusters) || self.clusters.all(c, "
                    "self.clusters.exists_one(d, d.name == c.name))",
                    "message": "spec.clusters: each name once",
                },
                {
                    "rule": "!has(self.applications) || self.applications.all(a, "
                    "self.applications.exists_one(b, b.name == a.name))",
                    "message": "spec.applications: each name once",
                },
                {
                    "rule": "!has(self.trafficConfirmation) || (has(self.ingress) && "
                    "(!has(self.ingress.type) || "
                    "self.ingress.type != 'AWSNetworkLoadBalancer'))",
                    "message": "trafficConfirmation needs ingress type "
                    "AWSApplicationLoadBalancer or AWSRoute53 (an NLB counts flows per load "
                    "balancer, not requests per target group: docs/traffic.md)",
                },
                {
                    "rule": "!has(self.ingress) || !has(self.argocd) || "
                    "!has(self.argocd.updateStrategy) || !has(self.argocd.updateStrategy.type) "
                    "|| self.argocd.updateStrategy.type != 'DeleteBeforeCreate'",
                    "message": "argocd.updateStrategy.type DeleteBeforeCreate is for apps with "
                    "no load balancer (traffic would reach clusters with no app): remove "
                    "spec.ingress, or use CreateBeforeDelete",
                },
            ]
        }
    }
    ingress: CellIngress | None = None
    """The load balancer in front of the clusters. None: an app with no load balancer
    (background jobs), rolled out through `argocd` alone."""
    argocd: CellArgoCD | None = None
    """Argo CD cluster Secrets of the Cell's versions and how to move the app between them."""
    replicas: int = Field(default=1, ge=1)
    """How many target groups of a new version must exist before it rolls out."""
    version: str | None = None
    """Pin (or roll back to) this version instead of the newest."""
    versioned_by: VersionedBy | None = None
    version_labels: list[str] = Field(default_factory=list, max_length=8)
    """Labels carrying a target group's version; the first present wins.
    Default: versionedBy.label, else okra.mumo.co/version."""
    update_strategy: UpdateStrategy = Field(default_factory=UpdateStrategy)
    progress_deadline_seconds: int | None = Field(default=None, ge=1)
    """A rollout that makes no progress this long (weights not shown by AWS, an
    analysis still running, a health gate holding, a timed pause not ending) is reported:
    condition `Progressing` False with reason `ProgressDeadlineExceeded` and an Event.
    Waiting for the user (an indefinite pause, an inconclusive analysis) does not count,
    as in Argo Rollouts. Unset: no deadline (Argo Rollouts' default is 600)."""
    prechecks: list[RolloutCheck] = Field(default_factory=list, max_length=8)
    """Run, in order, before any traffic moves to a new version."""
    postchecks: list[RolloutCheck] = Field(default_factory=list, max_length=8)
    """Run, in order, once the new version serves 100%, before the rollout completes."""
    rollback_delay_seconds: int = Field(default=60, ge=0)
    """After a failed precheck or postcheck, how long to wait before rolling back (the
    Cell's message meanwhile: "... failed. Waiting 60 seconds before starting a rollback");
    the wait survives a restart.
    A system Cell: the wait of every application whose `failurePolicy` (and the Cell's)
    is unset."""
    clusters: list[SystemCluster] | None = Field(default=None, min_length=1, max_length=32)
    """A system Cell: the clusters the system runs on. Editing this list (a new
    pair in place of the old) starts a migration, once every cluster is ready."""
    applications: list[SystemApplication] | None = Field(default=None, min_length=1, max_length=16)
    """A system Cell: the applications on `clusters`, each moved by a Cell okra makes and
    owns (`<cell>-<application>`)."""
    failure_policy: FailurePolicy | None = None
    """What a failed precheck or postcheck does: `Rollback` after `delaySeconds`, or
    `Stop` where it is. Unset: either rolls back after `rollbackDelaySeconds` (after a
    precheck no traffic has moved: the version is blocked)."""
    progress_deadline_abort: bool = False
    """With a deadline exceeded, send all traffic back to the stable version and block the
    new one (as a failed analysis does; `okra retry` unblocks it). A system Cell: of every
    application's Cell."""
    traffic_confirmation: TrafficConfirmation | None = None
    """Opt-in: a weight step is done once the traffic each target group served (CloudWatch)
    matches the weights AWS shows, not when AWS shows them (docs/traffic.md)."""

    @model_validator(mode="before")
    @classmethod
    def _original_spelling(cls, data: Any) -> Any:
        return spelling.normalise_cell(data)

    def labels_for_version(self) -> list[str]:
        labels = list(self.version_labels)
        if self.versioned_by and self.versioned_by.label not in labels:
            labels.append(self.versioned_by.label)
        return labels or [DEFAULT_VERSION_LABEL]


class TargetGroupWeight(ApiModel):
    name: str
    arn: str
    weight: int = Field(ge=0, le=999)
    version: str | None = None


class CheckResult(ApiModel):
    """One check's outcome for one forward config (results are paired with the forward
    config's hash; a check that passed for an unchanged hash is not run again)."""

    name: str
    stage: Literal["precheck", "postcheck"]
    forward_hash: str
    job: str
    """The Job (or, for an analysis check, the AnalysisRun) that ran it."""
    phase: Literal["Running", "Succeeded", "Failed"]
    message: str = ""


class _CellStatusCore(ApiModel):
    """What every Cell's status says, single or system."""

    observed_generation: int | None = None
    phase: Literal[
        "",
        "Init",
        "Migrating",
        "Completing",
        "Completed",
        "Error",
        "Pending",
        "Failed",
        "Reverting",
        "FailedReverting",
    ] = ""
    """Where the Cell's rollout is: Init (a new version found; prechecks,
    waiting for Argo CD or for a freeze to end; no traffic moves yet), Migrating (steps;
    traffic moving), Completing (postchecks, the new version serving 100%), Completed (a
    version serves 100%, nothing under way), Error (a version failed, was aborted, or
    the Cell cannot proceed). A system Cell: Pending (waiting for its clusters),
    Migrating, Completed, Failed (an application failed and stays where it is),
    Reverting (an application going back to the clusters that served it),
    FailedReverting (going back failed: the load balancer does not take the weights
    back; the message says why)."""
    health: Literal["", "Progressing", "Paused", "Healthy", "Degraded"] = ""
    """Progressing (working towards a state), Paused (waiting for a pause, an inconclusive
    analysis, `okra promote` or the end of a freeze), Healthy (settled), Degraded (needs
    attention); conditions of the same names say the same."""
    message: str | None = None


class RolloutCellStatus(_CellStatusCore):
    """The status a Cell that is not a system writes: its rollout, step by step (phase Init,
    Migrating, Completing, Completed or Error)."""

    stable_version: str | None = None
    canary_version: str | None = None
    canary_weight: int | None = None
    current_step_index: int | None = None
    current_step_hash: str | None = None
    """Hash of the canary version and the strategy: a change restarts the rollout."""
    rollout_id: str | None = None
    """Names this rollout attempt: its AnalysisRuns and Pauses; promote/abort target it."""
    step_started_at: datetime.datetime | None = None
    last_progress_time: datetime.datetime | None = None
    """When the rollout last made progress (began, completed a step, began waiting);
    the progress deadline counts from here. Unset when not progressing."""
    analysis_runs: dict[str, str] | None = None
    """Names of the AnalysisRuns of the current rollout: `step-N` and `background`."""
    paused_reason: str | None = None
    """Why a Paused Cell is paused: Pause, Inconclusive, PausedByUser or Frozen; unset on
    any other health."""
    aborted: bool | None = None
    target_groups: list[TargetGroupWeight] | None = None
    traffic: TrafficStatus | None = None
    """The traffic the current weight step was confirmed by, or waits for
    (`spec.trafficConfirmation`)."""
    checks: list[CheckResult] | None = None
    rollback_at: datetime.datetime | None = None
    """A postcheck failed: when the rollback starts (`rollbackDelaySeconds` after)."""
    conditions: list[Condition] | None = None
    notifications: list[PendingNotification] | None = None
    """Notifications not yet accepted by their receiver (oldest first)."""
    history: list[RolloutRecord] | None = None
    """The Cell's rollouts, newest first: the one in progress and the last ones that ended
    (`okra history cell NAME`)."""
    credited_actor: str | None = Field(default=None, max_length=512)
    """The `okra.mumo.co/actor-action` annotation the record last credited a user action
    to: an actor is credited once, so one left from an earlier action never is again."""


class SystemCellStatus(_CellStatusCore):
    """The status a system Cell writes: its clusters and its applications (phase Pending,
    Migrating, Completed, Failed, Reverting or FailedReverting)."""

    clusters: list[SystemClusterStatus] | None = None
    """A system Cell: each cluster, ready or what it waits for."""
    applications: list[ApplicationStatus] | None = None
    """A system Cell: each application's phase (Pending, Syncing, Synced, PrecheckFailed,
    ...), where it is going and what serves it now."""


class CellStatus(SystemCellStatus, RolloutCellStatus):
    # The status as stored: one schema for both shapes (the CRD's), read where the shape is
    # not known yet (the CLI, the dashboard). Each controller writes its own shape.

    def as_rollout(self) -> RolloutCellStatus:
        """The Cell's rollout part (what a Cell that is not a system holds)."""
        return RolloutCellStatus.model_validate(self._part(RolloutCellStatus))

    def as_system(self) -> SystemCellStatus:
        """The system part (what a system Cell holds); a rollout part left from before the
        Cell became a system is not carried on."""
        return SystemCellStatus.model_validate(self._part(SystemCellStatus))

    def _part(self, shape: type[ApiModel]) -> dict[str, Any]:
        return {k: getattr(self, k) for k in shape.model_fields if k in self.model_fields_set}


class Cell(OkraObject):
    """A set of clusters behind one load balancer listener, rolled out by version."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "Cell",
        "cells",
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Health", "string", ".status.health"),
        PrinterColumn("Stable", "string", ".status.stableVersion"),
        PrinterColumn("Canary", "string", ".status.canaryVersion"),
        PrinterColumn("Weight", "integer", ".status.canaryWeight"),
        PrinterColumn("Step", "integer", ".status.currentStepIndex"),
    )
    kind: str = "Cell"
    spec: CellSpec
    status: CellStatus | None = None


class ForwardTargetGroup(ApiModel):
    name: str = Field(min_length=1)
    arn: str = Field(pattern=_ARN, max_length=ARN_MAX_LENGTH)
    weight: int = Field(ge=0, le=999)


class AWSApplicationLoadBalancerConfigSpec(ApiModel):
    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.forwardTargetGroups) || has(self.listener)",
                    "message": "spec.forwardTargetGroups is required",
                },
                {
                    "rule": "!has(self.listener) || "
                    "(!has(self.listenerRule) && !has(self.forwardTargetGroups))",
                    "message": "listener.rule (the original okra's spelling) says what "
                    "listenerRule and forwardTargetGroups say: write one spelling",
                },
            ]
        }
    }
    listener_arn: str = Field(alias="listenerARN", pattern=_ARN, max_length=ARN_MAX_LENGTH)
    listener_rule: ListenerRule | None = None
    forward_target_groups: list[ForwardTargetGroup] = Field(default_factory=list, max_length=5)
    """At least one (here or, in the original okra's spelling, under
    `listener.rule.forward.targetGroups`)."""
    listener: OriginalListener | None = None
    """The original okra's spelling: `listener.rule` is `listenerRule` and its
    `forward.targetGroups` is `forwardTargetGroups`; read as those."""
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=_ROLE_ARN, max_length=ARN_MAX_LENGTH
    )
    """An IAM role to assume for the listener's calls (the ALB in another account)."""

    @model_validator(mode="before")
    @classmethod
    def _original_spelling(cls, data: Any) -> Any:
        return spelling.normalise_alb_config(data)

    @model_validator(mode="after")
    def _forward(self) -> AWSApplicationLoadBalancerConfigSpec:
        if not self.forward_target_groups:
            raise ValueError("forwardTargetGroups: at least one target group")
        return self


class LoadBalancerConfigStatus(ApiModel):
    """What every load balancer config reports: the generation seen, when okra last
    wrote to AWS, when it last read AWS, and a `Synced` condition (AWS showed exactly the
    spec at that reading)."""

    observed_generation: int | None = None
    last_applied_time: datetime.datetime | None = None
    last_read_time: datetime.datetime | None = None
    """When okra read from AWS what `applied` and `Synced` say: they describe AWS at that
    moment, not now (a hand edit in AWS shows here at okra's next look). Written with
    every other status change and, while nothing changes, at most every 5 minutes (an
    idle look writes nothing in between), so its age tells how old the reading is."""
    conditions: list[Condition] | None = None


class AWSApplicationLoadBalancerConfigStatus(LoadBalancerConfigStatus):
    rule_arn: str | None = Field(default=None, alias="ruleARN")
    applied: AWSApplicationLoadBalancerConfigSpec | None = None
    """What okra last read back from AWS after applying; equal to spec when in sync."""


class AWSApplicationLoadBalancerConfig(OkraObject):
    """The desired forward weights of one ALB listener rule; its controller makes AWS match."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AWSApplicationLoadBalancerConfig",
        "awsapplicationloadbalancerconfigs",
        condition_column("Synced"),
        PrinterColumn("Rule", "string", ".status.ruleARN", priority=1),
        short_names=("albconfig",),
    )
    kind: str = "AWSApplicationLoadBalancerConfig"
    spec: AWSApplicationLoadBalancerConfigSpec
    status: AWSApplicationLoadBalancerConfigStatus | None = None


class AWSNetworkLoadBalancerConfigSpec(ApiModel):
    listener_arn: str = Field(alias="listenerARN", pattern=_ARN, max_length=ARN_MAX_LENGTH)
    """A TCP/UDP/TLS listener of a Network Load Balancer: okra owns its default action."""
    forward_target_groups: list[ForwardTargetGroup] = Field(min_length=1, max_length=5)
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=_ROLE_ARN, max_length=ARN_MAX_LENGTH
    )
    """An IAM role to assume for the listener's calls (the NLB in another account)."""


class AWSNetworkLoadBalancerConfigStatus(LoadBalancerConfigStatus):
    applied: AWSNetworkLoadBalancerConfigSpec | None = None
    """What okra last read back from AWS after applying; equal to spec when in sync."""


class AWSNetworkLoadBalancerConfig(OkraObject):
    """The forward of one NLB listener's default action (one target group, or weighted
    target groups); its controller makes AWS match."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AWSNetworkLoadBalancerConfig",
        "awsnetworkloadbalancerconfigs",
        condition_column("Synced"),
        PrinterColumn("Listener", "string", ".spec.listenerARN", priority=1),
        short_names=("nlbconfig",),
    )
    kind: str = "AWSNetworkLoadBalancerConfig"
    spec: AWSNetworkLoadBalancerConfigSpec
    status: AWSNetworkLoadBalancerConfigStatus | None = None


class AWSTargetGroupSpec(ApiModel):
    arn: str = Field(pattern=_ARN, max_length=ARN_MAX_LENGTH)


class AWSTargetGroup(OkraObject):
    """An AWS target group, labelled with the version of what serves behind it."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AWSTargetGroup",
        "awstargetgroups",
        PrinterColumn("ARN", "string", ".spec.arn"),
        short_names=("awstg",),
    )
    kind: str = "AWSTargetGroup"
    spec: AWSTargetGroupSpec


class PauseSpec(ApiModel):
    expire_time: datetime.datetime | None = None
    """When the pause ends by itself; none: until promoted."""
    cancelled: bool = False
    """Set by `okra promote`: the pause ends now."""


class PauseStatus(ApiModel):
    phase: Literal["", "Started", "Expired", "Cancelled"] = ""
    last_transition_time: datetime.datetime | None = None


class Pause(OkraObject):
    """A timed or indefinite pause of a Cell's rollout."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "Pause",
        "pauses",
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Expires", "date", ".spec.expireTime"),
    )
    kind: str = "Pause"
    spec: PauseSpec = Field(default_factory=PauseSpec)
    status: PauseStatus | None = None


class BlockedVersion(ApiModel):
    version: str
    cause: str = ""
    time: datetime.datetime | None = None


class VersionBlocklistSpec(ApiModel):
    items: list[BlockedVersion] = Field(default_factory=list)


class VersionBlocklist(OkraObject):
    """Versions a Cell must not roll out again (until removed, e.g. by `okra retry`)."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "VersionBlocklist",
        "versionblocklists",
    )
    kind: str = "VersionBlocklist"
    spec: VersionBlocklistSpec = Field(default_factory=VersionBlocklistSpec)


CELL_MODELS: tuple[type[ApiModel], ...] = (
    Cell,
    AWSApplicationLoadBalancerConfig,
    AWSNetworkLoadBalancerConfig,
    AWSTargetGroup,
    Pause,
    VersionBlocklist,
)
