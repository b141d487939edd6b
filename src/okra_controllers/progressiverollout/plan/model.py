"""What the plan reads (`Observed`, `App`, `Requests`) and returns (`Plan`: syncs, runs,
webhooks, Events, when to look again), and the phases' shared constants.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

from okra_controllers.api.v1alpha1.analysis import Argument
from okra_controllers.api.v1alpha1.progressiverollout import (
    ProgressiveRolloutSpec,
    ProgressiveRolloutStatus,
    StageAnalysis,
    Webhook,
)
from okra_controllers.freeze import Hold
from okra_controllers.progressiverollout.plan.appproject import Project
from okra_runtime.events import Event as Event  # one Event type, the runtime's
from okra_runtime.events import EventType as EventType

IN_FLIGHT = ("Syncing", "Baking", "Verifying")


UPDATED = ("Syncing", "Baking", "Verifying", "Completed", "Failed")


FAILED_RUN = ("Failed", "Error")


STALL_AFTER = 60.0


RESYNC = 60.0


POLL = 5.0


@dataclass(frozen=True)
class App:
    """One Application of the ApplicationSet, as Argo CD reports it."""

    name: str
    cluster: str
    labels: Mapping[str, str]
    """Labels of the cluster's Argo CD cluster Secret."""
    sync_status: str = ""
    sync_revision: str = ""
    """`status.sync.revision`: the revision Argo CD compared against (the resolved target)."""
    health: str = ""
    deployed_revision: str = ""
    """The revision of the last successful sync (`status.operationState` or history)."""
    automated: bool = False
    pending_sync_id: str | None = None
    """The okra sync ID in `operation.info` (an operation not yet picked up), if any."""
    operation_pending: bool = False
    """`operation` is set (by okra or anyone else)."""
    op_phase: str = ""
    op_sync_id: str | None = None
    """The okra sync ID in `status.operationState.operation.info`."""
    op_revision: str = ""
    op_message: str = ""
    op_started_at: datetime.datetime | None = None
    op_finished_at: datetime.datetime | None = None
    reconciled_at: datetime.datetime | None = None
    unreachable: str | None = None
    """Argo CD's error comparing the Application (cluster unreachable and the like)."""
    multi_source: bool = False
    """`spec.sources` (several sources, several revisions): not rolled out by okra yet."""
    project: str = "default"
    """`spec.project` (Argo CD reads an empty one as `default`)."""
    dest_server: str = ""
    dest_name: str = ""
    dest_namespace: str = ""
    """`spec.destination` as written: what sync windows match."""
    cluster_server: str = ""
    """The server of the cluster's Argo CD cluster Secret (with `cluster`, its name): what
    the project's destinations match."""
    cluster_project: str = ""
    """The Secret's `project`: the project a project-scoped cluster belongs to."""
    resource_version: str = ""
    """The Application's resourceVersion as observed: a sync planned from this view is
    written only onto this version (a newer one may already hold the operation, or Argo CD
    may have started it)."""

    @property
    def operation_running(self) -> bool:
        return self.operation_pending or self.op_phase in ("Running", "Terminating")

    def fresh_at(self, revision: str) -> bool:
        """Synced at `revision` and Healthy, in a comparison made after the last operation."""
        return (
            self.sync_status == "Synced"
            and self.sync_revision == revision
            and self.health == "Healthy"
            and self.reconciled_at is not None
            and (self.op_finished_at is None or self.reconciled_at >= self.op_finished_at)
        )


@dataclass(frozen=True)
class Requests:
    """Operator requests from annotations: each value is a token acted on once."""

    promote: str | None = None
    abort: str | None = None
    retry: str | None = None


@dataclass(frozen=True)
class Observed:
    name: str
    generation: int
    spec: ProgressiveRolloutSpec
    status: ProgressiveRolloutStatus
    now: datetime.datetime
    source_found: bool = True
    owner: str | None = None
    """The ProgressiveRollout that rolls the ApplicationSet out, when it is another one."""
    uid: str = ""
    """This ProgressiveRollout's uid: part of its sync IDs, so that a rollout recreated under
    the same name never takes an earlier object's sync for its own."""
    apps: tuple[App, ...] = ()
    runs: Mapping[str, str] = field(default_factory=dict)
    requests: Requests = Requests()
    freeze: Hold | None = None
    """The Freezes that hold the rollout now and until when (None: none does)."""
    projects: Mapping[str, Project] | None = None
    """Argo CD's AppProjects of the namespace by name (None: the kind is not served, and
    projects are not checked)."""


@dataclass(frozen=True)
class Sync:
    application: str
    revision: str
    sync_id: str
    reason: str


@dataclass(frozen=True)
class RunRequest:
    name: str
    analysis: StageAnalysis
    args: tuple[Argument, ...]
    stage: str


@dataclass(frozen=True)
class WebhookCall:
    key: str
    """Where the result goes: `<webhook>` or `<webhook>/<cluster>`."""
    stage: int
    webhook: Webhook
    payload: Mapping[str, object]


@dataclass
class Plan:
    status: ProgressiveRolloutStatus
    syncs: list[Sync] = field(default_factory=list)
    create_runs: list[RunRequest] = field(default_factory=list)
    terminate_runs: list[str] = field(default_factory=list)
    webhooks: list[WebhookCall] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    requeue_after: float | None = RESYNC

    def wake(self, seconds: float) -> None:
        seconds = max(seconds, 1.0)
        self.requeue_after = (
            seconds if self.requeue_after is None else min(self.requeue_after, seconds)
        )
