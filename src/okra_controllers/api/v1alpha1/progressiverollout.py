"""ProgressiveRollout: an Argo CD ApplicationSet's Applications rolled out cluster by cluster.

Field names follow argocd-progressive-rollout-controller's ProgressiveRollout (`sourceRef`,
`stages[].{name,maxUnavailable,maxClusters,clusters.selector,topologyKey,requeue}`), so its
example applies unchanged apart from the group. Beyond it: `bakeTime`, `analysis`, `webhooks`
per stage, and `progressDeadlineSeconds`, `failurePolicy`, `paused` for the whole rollout.

Clusters are Argo CD cluster Secrets; selectors match the Secrets' labels. okra syncs an
Application by writing Argo CD's `operation` on it, so the Applications must not sync by
themselves: the ApplicationSet's template must leave `syncPolicy.automated` unset.
"""

from __future__ import annotations

import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1.analysis import DURATION_PATTERN, Argument
from okra_controllers.api.v1alpha1.common import (
    ApiModel,
    Condition,
    OkraObject,
    PendingNotification,
    okra_crd,
)
from okra_controllers.api.v1alpha1.strategy import AnalysisTemplateRef
from okra_runtime.crdgen import CRDInfo, PrinterColumn

PERCENT_PATTERN = r"^([1-9][0-9]?|100)%$"
"""1% to 100%: a percent over 100 is rejected by the schema."""

ClusterCount = Annotated[int, Field(ge=1)] | Annotated[str, Field(pattern=PERCENT_PATTERN)]
"""A number of clusters (at least 1) or a percent (1% to 100%)."""


class SourceRef(ApiModel):
    """The object owning the Applications: an Argo CD ApplicationSet in the same namespace."""

    api_group: str = Field(default="argoproj.io", pattern=r"^argoproj\.io(/v1alpha1)?$")
    """`argoproj.io` (or `argoproj.io/v1alpha1`, as the original controller's example says)."""
    kind: Literal["ApplicationSet"] = "ApplicationSet"
    name: str = Field(min_length=1, max_length=253)


class SelectorRequirement(ApiModel):
    """As a Kubernetes label selector's: `In` and `NotIn` need `values`, `Exists` and
    `DoesNotExist` take none."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(self.operator in ['In', 'NotIn']) == "
                    "(has(self.values) && size(self.values) > 0)",
                    "message": "matchExpressions: operators In and NotIn need values (write "
                    "values: [...]); Exists and DoesNotExist take none (remove values)",
                }
            ]
        }
    }
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None

    @model_validator(mode="after")
    def _values_as_operator_needs(self) -> SelectorRequirement:
        if (self.operator in ("In", "NotIn")) != bool(self.values):
            raise ValueError(
                f"matchExpressions: operator {self.operator} on {self.key!r} "
                + ("needs values" if self.operator in ("In", "NotIn") else "takes no values")
            )
        return self


class ClusterSelector(ApiModel):
    """A label selector over Argo CD cluster Secrets (empty selects every cluster)."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[SelectorRequirement] | None = None


class StageClusters(ApiModel):
    selector: ClusterSelector = Field(default_factory=ClusterSelector)


class Requeue(ApiModel):
    """Clusters matching `selector` (e.g. `drained: "true"`) are skipped and tried again every
    `interval`; a cluster still matching after `attempts` tries fails the stage. The selector
    must name a label: an empty one would requeue nothing."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.selector) && ((has(self.selector.matchLabels) && "
                    "size(self.selector.matchLabels) > 0) || "
                    "(has(self.selector.matchExpressions) && "
                    "size(self.selector.matchExpressions) > 0))",
                    "message": "requeue.selector: name the label of the clusters to requeue "
                    '(e.g. matchLabels: {drained: "true"}); an empty selector requeues '
                    "nothing, so remove requeue instead",
                }
            ]
        }
    }
    selector: ClusterSelector = Field(default_factory=ClusterSelector)
    attempts: int = Field(default=5, ge=1, le=1000)
    interval: str = Field(default="30m", pattern=DURATION_PATTERN)


class StageAnalysis(ApiModel):
    """Run once every cluster of the stage is done (synced, healthy, baked); a Failed or Error
    run fails the stage, an Inconclusive one pauses the rollout. In `args` values,
    `{{revision}}`, `{{stage}}` and `{{clusters}}` (comma-separated names) are replaced."""

    templates: list[AnalysisTemplateRef] = Field(min_length=1, max_length=10)
    args: list[Argument] | None = None


class Webhook(ApiModel):
    """An HTTP call; an answer other than `expectedStatus` (or none within `timeoutSeconds`)
    fails the stage. The body is JSON: rollout, namespace, stage, revision, cluster(s)."""

    name: str = Field(min_length=1, max_length=63, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    type: Literal["PreStage", "PostStage", "PerCluster"] = "PostStage"
    """PreStage: before the stage syncs anything; PostStage: after every cluster is done
    (and after the analysis); PerCluster: after each cluster is healthy and baked."""
    url: str = Field(pattern=r"^https?://")
    method: Literal["GET", "POST", "PUT"] = "POST"
    expected_status: int = Field(default=200, ge=100, le=599)
    timeout_seconds: int = Field(default=10, ge=1, le=300)


class Stage(ApiModel):
    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.webhooks) || self.webhooks.all(w, "
                    "self.webhooks.exists_one(x, x.name == w.name))",
                    "message": "webhook names must be unique within a stage",
                }
            ]
        }
    }
    name: str = Field(min_length=1, max_length=63)
    max_unavailable: ClusterCount = 1
    """How many clusters of the stage may be syncing or not yet healthy at once: a number, or
    a percent of the stage's clusters (rounded down, at least 1)."""
    max_clusters: ClusterCount = "100%"
    """How many of the selected clusters the stage updates: a number, or a percent of the
    selected clusters (rounded up)."""
    clusters: StageClusters = Field(default_factory=StageClusters)
    topology_key: str | None = Field(default=None, min_length=1)
    """A cluster label: the stage picks its clusters spread over its values and never has two
    clusters of one value in flight at once."""
    requeue: Requeue | None = None
    bake_time: str | None = Field(default=None, pattern=DURATION_PATTERN)
    """How long a cluster must stay Synced and Healthy at the new revision before it is done."""
    analysis: StageAnalysis | None = None
    webhooks: list[Webhook] | None = Field(default=None, max_length=16)


class ProgressiveRolloutSpec(ApiModel):
    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "self.stages.all(s, self.stages.exists_one(t, t.name == s.name))",
                    "message": "stage names must be unique",
                }
            ]
        }
    }
    source_ref: SourceRef
    stages: list[Stage] = Field(min_length=1, max_length=32)
    progress_deadline_seconds: int = Field(default=600, ge=1)
    """A cluster whose sync Argo CD has started must be Synced and Healthy within this time,
    else its stage fails."""
    failure_policy: Literal["Pause", "Rollback"] = "Pause"
    """What a failed stage does: `Pause` holds everything where it is until resumed;
    `Rollback` syncs the clusters updated by this rollout back to their previous revision,
    the most recently updated first."""
    paused: bool = False
    """No new syncs while true (syncs already started finish)."""


ClusterPhase = Literal[
    "Pending",
    "Requeued",
    "Syncing",
    "Baking",
    "Verifying",
    "Completed",
    "Failed",
    "RollingBack",
    "RolledBack",
    "Forbidden",
]
StagePhase = Literal["Pending", "Progressing", "Verifying", "Completed", "Failed"]
RolloutPhase = Literal[
    "",
    "Pending",
    "Progressing",
    "Paused",
    "Completed",
    "Failed",
    "RollingBack",
    "RolledBack",
    "Error",
]


class ClusterStatus(ApiModel):
    name: str
    """The Argo CD cluster's name (its Secret's `name`)."""
    application: str
    phase: ClusterPhase = "Pending"
    revision: str | None = None
    """The revision okra synced (or is syncing) this cluster to."""
    previous_revision: str | None = None
    """What the cluster ran before okra synced it: where a rollback takes it."""
    sync_id: str | None = None
    """Written into the sync operation's `info`: the operation okra started, told apart from
    any earlier one, so stale Synced/Healthy status never completes a cluster."""
    started: datetime.datetime | None = None
    healthy_since: datetime.datetime | None = None
    finished: datetime.datetime | None = None
    attempts: int | None = None
    """Times the cluster was found matching the requeue selector."""
    next_attempt: datetime.datetime | None = None
    message: str | None = None


class WebhookResult(ApiModel):
    name: str
    """`<webhook>` or `<webhook>/<cluster>`."""
    status_code: int | None = None
    succeeded: bool
    message: str | None = None
    time: datetime.datetime | None = None


class StageStatus(ApiModel):
    name: str
    phase: StagePhase = "Pending"
    started: datetime.datetime | None = None
    finished: datetime.datetime | None = None
    message: str | None = None
    clusters: list[ClusterStatus] | None = None
    analysis_run: str | None = None
    analysis_phase: str | None = None
    webhooks: list[WebhookResult] | None = None


class Handled(ApiModel):
    """Operator requests (annotations) already acted on, so each acts once."""

    promote: str | None = None
    abort: str | None = None
    retry: str | None = None


WaveOutcome = Literal["Completed", "Failed", "RolledBack", "Aborted", "Superseded"]

MAX_RECORDED_ACTIONS = 30
"""The user actions a revision's record keeps: the newest."""


class RecordedAction(ApiModel):
    """A user's request the controller acted on (`okra promote`, `abort`, `retry`)."""

    time: datetime.datetime
    action: Literal["promote", "abort", "retry"]
    user: str = Field(max_length=253)
    """Who, as the API server authenticated them (`okra.mumo.co/actor`, under okra's
    admission policy), else `unknown`."""


class RevisionRecord(ApiModel):
    """One revision's rollout, as the ProgressiveRollout's record keeps it after the status
    has moved on to the next (`status.history`)."""

    revision: str
    started_at: datetime.datetime
    ended_at: datetime.datetime | None = None
    """Unset while it is the revision in progress."""
    outcome: WaveOutcome | None = None
    """How it ended: Completed (every stage done), Failed (a stage failed and the policy
    kept the clusters where they were), RolledBack (the failed stage's clusters were synced
    back), Aborted (`okra abort`), Superseded (a newer revision began)."""
    message: str | None = None
    """What the status said when it ended."""
    stages: list[StageStatus] = Field(default_factory=list)
    """Its stages with their clusters, as the status last had them during this revision."""
    actions: list[RecordedAction] | None = None
    """The users' promote, abort and retry requests acted on during it, oldest first (the
    newest `MAX_RECORDED_ACTIONS`)."""


class ProgressiveRolloutStatus(ApiModel):
    observed_generation: int | None = None
    phase: RolloutPhase = ""
    message: str | None = None
    revision: str | None = None
    """The revision being rolled out (or rolled out last)."""
    failed_revision: str | None = None
    """A revision whose rollout failed: not started again until a newer one appears."""
    current_stage: int | None = None
    started: datetime.datetime | None = None
    finished: datetime.datetime | None = None
    stages: list[StageStatus] | None = None
    aborted: bool | None = None
    handled: Handled | None = None
    unmanaged_clusters: list[str] | None = None
    """Clusters with an Application of the ApplicationSet that no stage selects."""
    syncs_started: int | None = Field(default=None, ge=0)
    """How many sync operations (rollouts and rollbacks) okra has started for this object:
    each sync ID carries its number, so every sync has its own ID, and a manager restarted
    between writing this and writing the operation writes the same ID again."""
    conditions: list[Condition] | None = None
    notifications: list[PendingNotification] | None = None
    """Notifications not yet accepted by their receiver (oldest first)."""
    history: list[RevisionRecord] | None = None
    """The record of its rollouts, newest first: the revision in progress and the newest
    that ended (`okra-manager --rollout-history`, 10 by default), written in the same status
    write as the change each records."""


class ProgressiveRollout(OkraObject):
    """Rolls an ApplicationSet's Applications out cluster by cluster, in stages."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "ProgressiveRollout",
        "progressiverollouts",
        PrinterColumn("Phase", "string", ".status.phase"),
        PrinterColumn("Revision", "string", ".status.revision"),
        PrinterColumn("Stage", "integer", ".status.currentStage"),
        PrinterColumn("Message", "string", ".status.message", priority=1),
        short_names=("prollout",),
    )
    kind: str = "ProgressiveRollout"
    spec: ProgressiveRolloutSpec
    status: ProgressiveRolloutStatus | None = None


PROGRESSIVEROLLOUT_MODELS: tuple[type[ApiModel], ...] = (ProgressiveRollout,)
