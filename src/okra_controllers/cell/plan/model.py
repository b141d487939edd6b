"""What the plan reads and what it returns: `Observed` in, `Plan` out.

Kept apart from the rules so that every phase module (and the controller, `okra plan`
and the simulation) shares one vocabulary, and so that the plan's input is plain,
immutable data: the plan never does I/O, and everything it needs is in `Observed`.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from okra_controllers.api.v1alpha1.cell import CellSpec, RolloutCellStatus
from okra_controllers.api.v1alpha1.strategy import RolloutCheck, StepAnalysis
from okra_controllers.cell.argocd import ClusterView
from okra_controllers.cell.plan.traffic import TrafficQuery, TrafficReading
from okra_controllers.cell.versions import Grouped
from okra_controllers.freeze import Hold
from okra_runtime.events import Event as Event  # one Event type, the runtime's
from okra_runtime.events import EventType as EventType

Stage = Literal["precheck", "postcheck"]
FAILED_RUN = ("Failed", "Error")
DONE_PAUSE = ("Expired", "Cancelled")
DONE_RUN = ("Successful", "Failed", "Error", "Inconclusive")


@dataclass(frozen=True, order=True)
class Forward:
    name: str
    arn: str
    weight: int
    version: str


@dataclass(frozen=True)
class Observed:
    cell_name: str
    generation: int
    spec: CellSpec
    status: RolloutCellStatus
    grouped: Grouped
    forward: tuple[Forward, ...] | None  # the config's forward list; None: no config yet
    synced: bool  # AWS shows exactly `forward` (config status.applied == spec, current gen)
    blocked: dict[str, str]  # version -> cause
    runs: dict[str, str]  # AnalysisRun name -> phase ("" until the controller sets one)
    pauses: dict[str, str]  # Pause name -> phase
    promote: str | None  # okra.mumo.co/promote annotation: "<rolloutID>/<step>" or ".../full"
    abort: str | None  # okra.mumo.co/abort annotation: the rollout ID to abort
    now: datetime.datetime
    # target group ARN -> it has a healthy target; only ARNs about to get weight
    # for the first time are looked at (the caller fills it when asked).
    health: Mapping[str, bool] = field(default_factory=dict)
    # target group ARN -> what AWS said refusing to describe it (it does not exist, a
    # permission is missing): such a group has no healthy target, and the status says why
    health_problems: Mapping[str, str] = field(default_factory=dict)
    paused: bool = False  # okra.mumo.co/pause annotation: hold before the next step
    # the Cell's check Jobs: name -> (Running | Succeeded | Failed, why it ended)
    jobs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # the Cell's Argo CD clusters and their Applications (None: the Cell has no spec.argocd);
    # for a Cell with no load balancer `grouped` holds the clusters, one "target group" each.
    clusters: ClusterView | None = None
    # why the load balancer config cannot apply its spec ("AWSError: ...", from its
    # `Synced` condition for its current generation); "" when it can or has not said
    config_problem: str = ""
    # what the config says while its written weights are not yet in effect (a Route 53
    # change PENDING, or INSYNC with the TTL not yet past: "... in effect at <time>")
    config_waiting: str = ""
    # when those weights are in effect (a Route 53 config's `status.effectiveAt`), if it
    # says: the Cell is looked at again then, so that its message says what is true
    config_effective_at: datetime.datetime | None = None
    # Pause name -> its `spec.expireTime`: a Pause past it is over, whether or not the
    # Pause controller has written `Expired` yet (its status write, and the Cell's
    # reaction to it, would add two API round trips to every timed pause).
    pause_expiry: Mapping[str, datetime.datetime] = field(default_factory=dict)
    # now to the microsecond (None: `now`, which is to the second, as status times are):
    # a timed Pause is given its expireTime and ended by it, so that it lasts its
    # duration, not up to a second less
    exact_now: datetime.datetime | None = None
    # what CloudWatch said the target groups served, for the query the plan asked for
    # (`Plan.needs_traffic`); None: not read in this pass
    traffic: TrafficReading | None = None
    # the Freezes that hold the Cell now and until when (None: none does): no new step
    # starts and no rollout begins (plan/freeze.py)
    freeze: Hold | None = None
    # the Cell's metadata.uid: part of every rollout ID, so that no two Cells (the same
    # name in two namespaces, the same steps started in the same second) share one
    cell_uid: str = ""

    @property
    def pause_clock(self) -> datetime.datetime:
        """The time timed Pauses are set and ended by."""
        return self.exact_now or self.now


@dataclass(frozen=True)
class RunRequest:
    name: str
    analysis: StepAnalysis
    background: bool


@dataclass(frozen=True)
class JobRequest:
    name: str
    check: RolloutCheck
    stage: Stage
    forward_hash: str


@dataclass(frozen=True)
class PauseRequest:
    name: str
    expire_time: datetime.datetime | None


@dataclass
class Plan:
    forward: tuple[Forward, ...] | None  # None: leave the config alone
    status: RolloutCellStatus
    create_runs: list[RunRequest] = field(default_factory=list)
    terminate_runs: list[str] = field(default_factory=list)
    create_pause: PauseRequest | None = None
    block: tuple[str, str] | None = None
    events: list[Event] = field(default_factory=list)
    cancel_pauses: list[str] = field(default_factory=list)
    needs_health: tuple[str, ...] = ()  # plan again with `health` for these ARNs
    held: bool = False  # a gate holds the plan back; look again soon
    requeue_after: float | None = None  # seconds until the progress deadline passes
    wake_after: float | None = None  # seconds until the Pause or freeze it waits on ends
    create_jobs: list[JobRequest] = field(default_factory=list)
    label: list[str] = field(default_factory=list)  # cluster Secrets to give the app labels
    unlabel: list[str] = field(default_factory=list)  # cluster Secrets to take them from
    needs_traffic: TrafficQuery | None = None  # plan again with `traffic` read for this
