"""A system Cell: several clusters serving several applications, swapped as one.

`spec.clusters` names the clusters the system runs on now (EKS clusters by name);
`spec.applications` says, per application, which of them serve it (`clusterSelector`), how
Argo CD puts it there (`argocd`), the load balancer in front of it (an ALB listener rule
`alb`, an NLB listener `nlb`, or Route 53 weighted records `route53`), how fast traffic
moves (their `updateStrategy`), and the checks that gate each step. Editing
`spec.clusters` (a v2 pair in place of the v1 pair) is what starts a migration: okra waits
for every cluster to be ready, then walks each application there.
"""

from __future__ import annotations

import datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1.analysis import DURATION_PATTERN
from okra_controllers.api.v1alpha1.argocd import ArgoCDApplicationSet, ArgoCDUpdateStrategy
from okra_controllers.api.v1alpha1.backends import NLBListener, Route53Records
from okra_controllers.api.v1alpha1.common import ARN_MAX_LENGTH, ApiModel, with_rules
from okra_controllers.api.v1alpha1.listener import ListenerRule
from okra_controllers.api.v1alpha1.strategy import RolloutCheck
from okra_controllers.api.v1alpha1.traffic import TrafficConfirmation

_ELB_ARN = r"^arn:[a-z0-9-]+:elasticloadbalancing:"
_ROLE_ARN = r"^arn:[a-z0-9-]+:iam::[0-9]{12}:role/.+"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class EKSClusterRef(ApiModel):
    cluster_name: str | None = Field(default=None, min_length=1, max_length=100)
    """The EKS cluster's name; default: the entry's `name`."""


class SystemCluster(ApiModel):
    """One cluster of the system: an EKS cluster, ready when it is ACTIVE and its Argo CD
    cluster Secret reaches it (and, for an application naming an ApplicationSet, when
    that application's Argo CD Applications on it are Synced and Healthy)."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]*$")
    eks: EKSClusterRef | None = Field(default=None, json_schema_extra={"nullable": True})
    """Where to find it in EKS (`eks: {}`, or `eks:` with nothing under it: the EKS cluster
    of the same name)."""
    require_ready: bool = True
    """Wait for this cluster before any application migrates (the default). False: it is
    waited for `readyTimeout` at most (not at all without one), then left out."""
    ready_timeout: str | None = Field(default=None, pattern=DURATION_PATTERN)
    """How long to wait for the cluster; past it the Cell says which cluster is missing
    (and, with `requireReady: false`, goes on without it)."""
    labels: dict[str, str] = Field(default_factory=dict)
    """Labels an application's `clusterSelector` selects on, and values it reads
    (`alb.forwardConfig.targetGroup.arnFromLabel`, `nlb.targetGroup.arnFromLabel`,
    `route53.targetGroup.arnFromLabel`); not Kubernetes labels, so any value
    (an ARN) is fine."""

    @property
    def eks_name(self) -> str:
        return (self.eks.cluster_name if self.eks else None) or self.name


class SystemClusterSecret(ApiModel):
    model_config = with_rules(
        (
            "has(self.labels) != has(self.lables)",
            "clusterSecret needs labels (the ones the ApplicationSet's "
            "cluster generator selects on)",
        ),
    )
    labels: dict[str, str] | None = Field(default=None, min_length=1)
    """The labels the ApplicationSet's cluster generator selects on: okra adds them to the
    Argo CD cluster Secrets of the clusters that should run the application and removes
    them from the others (`argocd.argoproj.io/secret-type: cluster` is Argo CD's own)."""
    lables: dict[str, str] | None = Field(default=None, min_length=1)
    """Another spelling of `labels`: read as it, with a warning."""

    @model_validator(mode="after")
    def _spelling(self) -> SystemClusterSecret:
        if self.labels is None and self.lables is not None:
            self.labels, self.lables = self.lables, None
        if not self.labels:
            raise ValueError("clusterSecret.labels: at least one label")
        return self


class SystemArgoCD(ApiModel):
    cluster_secret: SystemClusterSecret
    application_set: ArgoCDApplicationSet | None = None
    update_strategy: ArgoCDUpdateStrategy = Field(default_factory=ArgoCDUpdateStrategy)


class TargetGroupRef(ApiModel):
    model_config = with_rules(
        (
            "[has(self.arn), has(self.arnFromLabel), "
            "has(self.targetgroupBindingSelector)].filter(x, x).size() == 1",
            "targetGroup takes exactly one of arn, arnFromLabel, targetgroupBindingSelector",
        ),
    )
    arn: str | None = Field(default=None, pattern=_ELB_ARN, max_length=ARN_MAX_LENGTH)
    """One target group: only for an application served by one cluster."""
    arn_from_label: str | None = Field(default=None, min_length=1)
    """The cluster entry's label holding its target group's ARN."""
    targetgroup_binding_selector: str | None = Field(default=None, min_length=1)
    """A label selector (`svc=web`) of TargetGroupBindings in each cluster (read through
    its Argo CD Secret or EKS): the one target group they name is the cluster's."""


class ForwardConfig(ListenerRule):
    """The listener rule okra owns for the application, and where each cluster's share of
    it goes."""

    target_group: TargetGroupRef


class WeightStrategy(ApiModel):
    step_weight: int = Field(default=100, ge=1, le=100)
    """Weight moved per step, out of `totalWeight` (`stepWeight: 100` is blue/green)."""
    total_weight: int = Field(default=100, ge=1, le=100)


class SystemALB(ApiModel):
    listener_arn: str = Field(alias="listenerARN", pattern=_ELB_ARN, max_length=ARN_MAX_LENGTH)
    forward_config: ForwardConfig
    update_strategy: WeightStrategy = Field(default_factory=WeightStrategy)
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=_ROLE_ARN, max_length=ARN_MAX_LENGTH
    )


class SystemNLB(NLBListener):
    """An NLB listener in front of the application: okra owns its default action (a
    weighted forward, 0..999 per target group, at most 5), as a Cell behind an NLB does."""

    target_group: TargetGroupRef
    """Each cluster's target group on the listener (TCP)."""
    update_strategy: WeightStrategy = Field(default_factory=WeightStrategy)
    """`stepWeight: 100` (the default) is blue/green: one switch; less is a weighted canary."""


class SystemRoute53(Route53Records):
    """Weighted records of one DNS name in front of the application, one per cluster's own
    load balancer (each cluster's target group is attached to it), as a Cell with
    `ingress.type: AWSRoute53` has: a step counts from Route 53's INSYNC plus `ttl`."""

    target_group: TargetGroupRef
    """Each cluster's target group, attached to that cluster's load balancer: the record
    of the cluster points at that load balancer."""
    update_strategy: WeightStrategy = Field(default_factory=WeightStrategy)


class SystemCheckAnalysis(ApiModel):
    """A standing metric check (a `Check`), its query templated per cluster with
    `{{.Vars.eksClusterName}}`, `{{.Vars.clusterName}}`, `{{.Vars.albListenerARN}}`,
    `{{.Vars.nlbListenerARN}}`, `{{.Vars.route53RecordName}}` and
    `{{.Vars.targetGroupARN}}`."""

    interval: str = Field(default="10s", pattern=DURATION_PATTERN)
    provider: dict[str, Any] | None = None
    """An analysis metric provider (`prometheus`, `datadog`, `cloudWatch`, `web`, as in an
    AnalysisTemplate); with `query` below, the provider's own query may be left out."""
    query: str | None = None
    """The query, written beside the provider: it goes into
    `prometheus.query` or `datadog.query`. Without `provider`, okra-manager's default metrics
    provider (`--default-metrics-provider`) runs it; without one either, the Check says
    what to add."""
    success_condition: str | None = None
    failure_condition: str | None = None
    min: float | None = None
    max: float | None = None


DEFAULT_CHECK_RETRIES = 2


class SystemCheck(ApiModel):
    name: str = Field(min_length=1, max_length=20, pattern=DNS_LABEL)
    analysis: SystemCheckAnalysis
    retries: int = Field(default=DEFAULT_CHECK_RETRIES, ge=0, le=20)
    """How many failed runs in a row, after the first, a step tolerates before it fails
    (each run is the Check's next `interval`; a passing run clears them). Default 2: the
    third failed run in a row fails the step."""


class FailurePolicy(ApiModel):
    type: Literal["Rollback", "Stop"] = "Rollback"
    """Rollback: after `delaySeconds`, the application's traffic and Argo CD labels go
    back to the clusters that served it, and the new clusters are blocked for it. Stop:
    it stays where it is (status Error) until a person acts (`okra abort`, a spec edit)."""
    delay_seconds: int = Field(default=60, ge=0)


class SystemApplication(ApiModel):
    model_config = with_rules(
        (
            "has(self.alb) || has(self.nlb) || has(self.route53) || has(self.argocd)",
            "an application needs alb (a listener rule), nlb (a listener's "
            "default action) or route53 (weighted records), or argocd (Argo CD "
            "cluster Secrets), or both",
        ),
        (
            "[has(self.alb), has(self.nlb), has(self.route53)].filter(x, x).size() <= 1",
            "an application's traffic comes through one of alb, nlb, route53: write only one",
        ),
        (
            "!has(self.trafficConfirmation) || has(self.alb) || has(self.route53)",
            "trafficConfirmation needs alb or route53 (RequestCount per "
            "target group; an nlb counts flows per load balancer, not requests per "
            "target group: docs/traffic.md)",
        ),
        (
            "!(has(self.alb) || has(self.nlb) || has(self.route53)) || "
            "!has(self.argocd) || "
            "!has(self.argocd.updateStrategy) || "
            "!has(self.argocd.updateStrategy.type) || "
            "self.argocd.updateStrategy.type != 'DeleteBeforeCreate'",
            "argocd.updateStrategy.type DeleteBeforeCreate is for "
            "applications with no load balancer: remove alb, nlb or route53, or use "
            "CreateBeforeDelete",
        ),
    )
    name: str = Field(min_length=1, max_length=30, pattern=DNS_LABEL)
    cluster_selector: dict[str, Any] | None = None
    """Which clusters serve the application: `matchEKSTags` (the EKS cluster's tags),
    `matchLabels` (the cluster entry's `labels`), or labels written directly (`role: api`).
    Required when the system has two or more clusters."""
    argocd: SystemArgoCD | None = None
    alb: SystemALB | None = None
    nlb: SystemNLB | None = None
    route53: SystemRoute53 | None = None
    checks: list[SystemCheck] = Field(default_factory=list, max_length=8)
    """Metric checks that must pass at every step before the next one."""
    prechecks: list[RolloutCheck] = Field(default_factory=list, max_length=8)
    postchecks: list[RolloutCheck] = Field(default_factory=list, max_length=8)
    failure_policy: FailurePolicy | None = None
    """Default: the Cell's `failurePolicy`."""
    traffic_confirmation: TrafficConfirmation | None = None
    """Each weight step of this application is done once the traffic its target groups
    served matches the weights AWS shows (docs/traffic.md)."""

    @property
    def traffic(self) -> SystemALB | SystemNLB | SystemRoute53 | None:
        """The load balancer in front of the application (None: Argo CD alone)."""
        return self.alb or self.nlb or self.route53

    def target_group_ref(self) -> tuple[TargetGroupRef, str] | None:
        """Where each cluster's target group is found, and that field's path (for a
        message)."""
        if self.alb is not None:
            return self.alb.forward_config.target_group, "alb.forwardConfig.targetGroup"
        if self.nlb is not None:
            return self.nlb.target_group, "nlb.targetGroup"
        if self.route53 is not None:
            return self.route53.target_group, "route53.targetGroup"
        return None


class SystemClusterStatus(ApiModel):
    name: str
    eks_cluster_name: str = ""
    ready: bool = False
    message: str = ""
    waiting_since: datetime.datetime | None = None
    """When okra began waiting for it (readyTimeout counts from here)."""


class CheckTries(ApiModel):
    """One Check's failed runs in a row at the current step (`since`: when the step began)."""

    name: str
    since: datetime.datetime | None = None
    failed: int = 0
    last_run_time: datetime.datetime | None = None
    """The run last counted (a run is counted once)."""


class ApplicationStatus(ApiModel):
    name: str
    phase: Literal[
        "Pending",
        "Syncing",
        "Synced",
        "PrecheckFailed",
        "CheckFailed",
        "PostcheckFailed",
        "Reverting",
        "FailedReverting",
        "Reverted",
        "Stopped",
        "Error",
    ] = "Pending"
    message: str = ""
    cell: str = ""
    """The Cell that rolls this application out (owned by the system Cell)."""
    version: str = ""
    """The version (`v<N>`) of the cluster set the application is going to."""
    clusters: list[str] = Field(default_factory=list)
    """The clusters it is going to."""
    serving: list[str] = Field(default_factory=list)
    """The clusters serving it now (weight above 0, or Argo CD's labels)."""
    weight: int | None = None
    """The share of traffic on `clusters`, in percent, as the application's Cell reports it
    (unset for an application with no load balancer: no `alb`, `nlb` or `route53`)."""
    serving_version: str = ""
    """The version serving it now (the one `serving` lists)."""
    rollback_at: datetime.datetime | None = None
    """A check failed with failurePolicy Rollback: when the rollback starts."""
    check_tries: list[CheckTries] | None = None
    """The Checks that failed at the current step, each with its failed runs in a row."""
