"""A Cell's record of its past rollouts (`status.history`): what each rollout went from and
to, what started it, when it began and ended and how, each step's start and end, and what
okra and its users did on the way, in the words of the Events okra recorded.

The record is part of the status, so it is written in the same write as the status change
it records, outlives Events (an hour by default), restarts and the rollout itself, and is
deleted with its Cell. It is bounded: the newest `okra-manager --rollout-history` rollouts
(10 by default), each with at most `MAX_RECORDED_EVENTS` entries.
"""

from __future__ import annotations

import datetime
from typing import Literal

from pydantic import Field

from okra_controllers.api.v1alpha1.analysis import (
    MetricJudgmentStatus,
    Phase,
    RunJudgmentStatus,
    RunSummary,
)
from okra_controllers.api.v1alpha1.common import ApiModel
from okra_controllers.api.v1alpha1.traffic import TrafficStatus

MAX_RECORDED_EVENTS = 30
"""The entries a rollout's record keeps: the newest (a rollout that says more says it in its
Events and the manager's log)."""

MAX_RECORDED_ANALYSES = 10
"""The finished analyses whose metrics a rollout's record keeps: the newest (an older one
keeps its name, phase, times and message)."""
MAX_RECORDED_MEASUREMENTS = 30
"""The measurements an analysis's record keeps, shared by its metrics (each keeps its newest
`MAX_RECORDED_MEASUREMENTS // metrics`, at least one and at most 10)."""

Outcome = Literal["Completed", "RolledBack", "Aborted", "Superseded"]
Trigger = Literal["NewVersion", "Pin", "Retry", "StepsChanged", "Unknown"]


class RecordedStep(ApiModel):
    index: int = Field(ge=0)
    """The step's index in `spec.updateStrategy.canary.steps` (0 is the first)."""
    started_at: datetime.datetime
    ended_at: datetime.datetime | None = None
    """Unset while the step is the current one."""
    canary_weight: int | None = Field(default=None, ge=0, le=100)
    """The canary's weight when the step ended (what the status said AWS showed)."""
    traffic: TrafficStatus | None = None
    """The traffic confirmation reading the step ended with (`spec.trafficConfirmation`):
    each version's share of the requests, the verdict and why."""


MAX_USER_LENGTH = 253
"""The longest username a record keeps (a longer one is recorded as `unknown`, never cut)."""


class RecordedEvent(ApiModel):
    time: datetime.datetime
    type: Literal["Normal", "Warning"]
    reason: str
    message: str = ""
    user: str | None = Field(default=None, max_length=MAX_USER_LENGTH)
    """Who did it, for a user action (Promoted, PausedByUser, Resumed, RolloutAborted): the
    user as the API server authenticated them (`okra.mumo.co/actor`, under okra's admission
    policy), else `unknown`. Unset for what okra did itself."""


MAX_RECORDED_FREEZES = 10
"""The holds by a freeze a rollout's record keeps: the newest."""


class RecordedFreeze(ApiModel):
    """A time a Freeze or ClusterFreeze held the rollout at its step."""

    started_at: datetime.datetime
    ended_at: datetime.datetime | None = None
    """Unset while it holds (or when the rollout ended under it: its `endedAt` then)."""
    message: str = ""
    """Which freeze, and why, as the Cell's status said when it began to hold."""


class RecordedMeasurement(ApiModel):
    time: datetime.datetime | None = None
    """When it was taken (its `finishedAt`, else its `startedAt`)."""
    value: str
    phase: Phase


class RecordedMetric(RunSummary):
    """One metric of a finished analysis: its verdict, the counts that decided it (its
    measurements: how many, how many successful, failed, inconclusive and errors), its
    newest values and, for a judged metric, the comparison of canary and baseline."""

    name: str
    phase: Phase
    message: str | None = None
    dry_run: bool | None = None
    measurements: list[RecordedMeasurement] = Field(default_factory=list)
    """Its newest measurements with a value, oldest first (see `MAX_RECORDED_MEASUREMENTS`)."""
    judgment: MetricJudgmentStatus | None = None


class RecordedAnalysis(ApiModel):
    """An AnalysisRun of the rollout as it finished: it outlives the run, which is deleted
    with its rollout."""

    name: str
    """The AnalysisRun's name."""
    at: str
    """Where the rollout ran it: `step-N` (the step of index N) or `background`."""
    phase: Phase
    message: str | None = None
    started_at: datetime.datetime | None = None
    completed_at: datetime.datetime | None = None
    metrics: list[RecordedMetric] = Field(default_factory=list)
    judgment: RunJudgmentStatus | None = None
    """The canary score of its judged metrics and what it was held to."""


class RolloutRecord(ApiModel):
    rollout_id: str
    from_version: str | None = Field(default=None, alias="from")
    """The stable version when the rollout began (unset: none served yet)."""
    to_version: str = Field(alias="to")
    trigger: Trigger
    """What started it: a new version's target groups (NewVersion), `spec.version`
    (Pin), `okra retry` after an abort (Retry), changed steps of the same version
    (StepsChanged); Unknown for a rollout under way before its Cell had a record (its
    `startedAt` is then when the record began)."""
    started_by: str | None = Field(default=None, max_length=MAX_USER_LENGTH)
    """Who started it, for the triggers a user starts (Retry: `okra retry`; Pin: `okra set
    version`): the user as the API server authenticated them, else `unknown`."""
    started_at: datetime.datetime
    ended_at: datetime.datetime | None = None
    """Unset while the rollout is in progress."""
    outcome: Outcome | None = None
    """How it ended: Completed (the canary serves 100 %), RolledBack (a failed analysis,
    check or deadline sent all traffic back), Aborted (`okra abort`), Superseded (a newer
    rollout began, or the rollout's version went away). Unset while in progress."""
    cause: str | None = None
    """Why it ended so, as okra said it (the RolloutFailed or RolloutAborted Event's
    message)."""
    steps: list[RecordedStep] = Field(default_factory=list)
    events: list[RecordedEvent] = Field(default_factory=list)
    """What okra did and said during the rollout, and the user actions it saw (pause,
    resume, promote), oldest first; the newest `MAX_RECORDED_EVENTS`."""
    freezes: list[RecordedFreeze] | None = None
    """The times a freeze held it, oldest first (the newest `MAX_RECORDED_FREEZES`)."""
    analyses: list[RecordedAnalysis] | None = None
    """Its analyses as each finished (Successful, Failed, Error or Inconclusive), oldest
    first, the newest `MAX_RECORDED_ANALYSES` with their metrics. At the rollout's end,
    those still running (a background analysis) as they stood. Unset before the first."""
