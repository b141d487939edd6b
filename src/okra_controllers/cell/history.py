"""The Cell's rollout record (`status.history`): a pure function of the status before and
after a reconcile and the Events its plan emitted, applied in the same status write (the
Cell controller's act, beside the notifications' outbox).

It changes only when something happens: a rollout begins (a new `rolloutId`), moves to
another step, ends, or its plan says something new. A reconcile that changes nothing
leaves the record as it was, so an idle Cell is never written for it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from okra_controllers.actors import Credit
from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus, MetricResult
from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.history import (
    MAX_RECORDED_ANALYSES,
    MAX_RECORDED_EVENTS,
    MAX_RECORDED_FREEZES,
    MAX_RECORDED_MEASUREMENTS,
    Outcome,
    RecordedAnalysis,
    RecordedEvent,
    RecordedFreeze,
    RecordedMeasurement,
    RecordedMetric,
    RecordedStep,
    RolloutRecord,
    Trigger,
)
from okra_controllers.cell.observe import PROMOTE
from okra_controllers.cell.plan.freeze import freeze_holds
from okra_controllers.settings import ROLLOUT_HISTORY
from okra_runtime.events import Event

DEFAULT_LIMIT = ROLLOUT_HISTORY
"""Rollouts a Cell's record keeps by default (`okra-manager --rollout-history`)."""

ENDS: Mapping[str, Outcome] = {
    "RolloutCompleted": "Completed",
    "RolloutFailed": "RolledBack",
    "RolloutAborted": "Aborted",
}
"""The plan Events that end a rollout, and how."""
FINISHED = frozenset({"Successful", "Failed", "Error", "Inconclusive"})
"""The phases of an analysis that has said its verdict."""
KEPT_FROM_METRIC: set[str] = {
    *("name", "phase", "count", "successful", "failed", "inconclusive", "error"),
    *("dry_run", "judgment"),
}
"""The fields of a run's metric result its record keeps as they are."""
MESSAGE_LIMIT = 512
"""A recorded analysis's and metric's message is cut to this many characters."""


def recorded(
    before: RolloutCellStatus,
    after: RolloutCellStatus,
    events: Sequence[Event],
    now: datetime.datetime,
    *,
    annotations: Mapping[str, str],
    pinned: str | None,
    steps: int | None = None,
    limit: int = DEFAULT_LIMIT,
    runs: Mapping[str, AnalysisRunStatus] | None = None,
    credit: Credit | None = None,
) -> list[RolloutRecord] | None:
    """`after.history`: `before`'s, with what this reconcile did (`events`: its plan's
    Events; `annotations`: the Cell's, for `okra promote`; `pinned`: `spec.version`;
    `steps`: how many the strategy has, past which the rollout completes rather than runs
    a step; `runs`: the statuses of the AnalysisRuns `before` and `after` name, by run
    name; `credit`: who did the user actions it records, None to record no user), the
    newest `limit` rollouts. None while the Cell has never rolled out."""
    history = list(before.history or [])
    if history:  # only the newest record can change: copy it, share the others
        history[0] = history[0].model_copy(deep=True)
    latest = history[0] if history else None
    runs = runs or {}
    if after.rollout_id is not None and (latest is None or latest.rollout_id != after.rollout_id):
        if latest is not None and latest.outcome is None:
            _end(latest, now, "Superseded", f"superseded by the rollout of {after.canary_version}")
            _analysed(latest, before, after, runs)
        latest = _begun(before, after, now, pinned, credit)
        history.insert(0, latest)
    if latest is not None and latest.outcome is None:
        _moved(latest, before, after, now, annotations, steps, credit)
        for e in events:
            user = None
            if e.reason == "RolloutAborted" and credit is not None:
                user = credit.user("abort", latest.rollout_id)
            _say(latest, now, e.type, e.reason, e.message, user)
            if e.reason in ENDS:
                _end(latest, now, ENDS[e.reason], e.message, before.canary_weight, before)
        if latest.outcome is None and after.rollout_id != latest.rollout_id:
            _end(latest, now, "Superseded", after.message or "the rollout's version went away")
        _analysed(latest, before, after, runs)
    kept = history[: max(limit, 0)]
    return kept or None


def runs_to_read(before: RolloutCellStatus, after: RolloutCellStatus) -> dict[str, bool]:
    """The AnalysisRuns `recorded` may take in this pass, by name: those `before` and
    `after` name that the newest record does not hold yet. True: any phase is wanted (the
    rollout ends in this pass, or is replaced); False: only a finished one."""
    latest = before.history[0] if before.history else None
    have = {a.name for a in latest.analyses or []} if latest is not None else set()
    ending = after.rollout_id != before.rollout_id
    return {
        name: ending
        for st in (before, after)
        for name in (st.analysis_runs or {}).values()
        if name not in have
    }


def _analysed(
    r: RolloutRecord,
    before: RolloutCellStatus,
    after: RolloutCellStatus,
    runs: Mapping[str, AnalysisRunStatus],
) -> None:
    """Add each of the rollout's analyses that has finished and is not recorded yet; at
    the rollout's end, also those still running, as they stood (a background analysis
    runs until its rollout ends)."""
    named: dict[str, str] = {}
    for st in (before, after):
        if st.rollout_id == r.rollout_id:
            named.update({name: at for at, name in (st.analysis_runs or {}).items()})
    have = {a.name for a in r.analyses or []}
    new = [
        _analysis(name, at, run)
        for name, at in named.items()
        if name not in have
        and (run := runs.get(name)) is not None
        and (run.phase in FINISHED or (r.outcome is not None and run.phase))
    ]
    if new:
        new.sort(key=lambda a: (a.completed_at or a.started_at or r.started_at, a.name))
        kept = [*(r.analyses or []), *new]
        # Every analysis keeps its entry (a rollout runs one per step at most, 64 steps),
        # so that one is never recorded twice; only the newest keep their measurements.
        r.analyses = [
            a.model_copy(update={"metrics": [], "judgment": None})
            for a in kept[:-MAX_RECORDED_ANALYSES]
        ] + kept[-MAX_RECORDED_ANALYSES:]


def _analysis(name: str, at: str, run: AnalysisRunStatus) -> RecordedAnalysis:
    return RecordedAnalysis(
        name=name,
        at=at,
        phase=run.phase,
        message=_cut(run.message),
        started_at=run.started_at,
        completed_at=run.completed_at,
        metrics=[_metric(m, len(run.metric_results or [])) for m in run.metric_results or []],
        judgment=run.judgment,
    )


def _metric(m: MetricResult, metrics: int) -> RecordedMetric:
    each = min(10, max(1, MAX_RECORDED_MEASUREMENTS // max(metrics, 1)))
    taken = [
        RecordedMeasurement(time=x.finished_at or x.started_at, value=x.value, phase=x.phase)
        for x in m.measurements
        if x.value is not None
    ]
    kept = m.model_dump(include=KEPT_FROM_METRIC)
    return RecordedMetric(**kept, message=_cut(m.message), measurements=taken[-each:])


def _cut(message: str | None) -> str | None:
    return None if message is None else message[:MESSAGE_LIMIT]


def _begun(
    before: RolloutCellStatus,
    after: RolloutCellStatus,
    now: datetime.datetime,
    pinned: str | None,
    credit: Credit | None,
) -> RolloutRecord:
    to = after.canary_version or ""
    trigger: Trigger = "NewVersion"
    by: str | None = None
    if before.rollout_id == after.rollout_id:
        trigger = "Unknown"  # under way before the Cell had a record
    elif before.canary_version == to and before.aborted:
        trigger = "Retry"
        by = credit.user("retry", before.rollout_id or "") if credit is not None else None
    elif before.canary_version == to:
        trigger = "StepsChanged"
    elif pinned is not None and pinned == to:
        trigger = "Pin"
        by = credit.user("version", pinned) if credit is not None else None
    return RolloutRecord.model_validate(
        {
            "rolloutId": after.rollout_id,
            "from": after.stable_version,
            "to": to,
            "trigger": trigger,
            "startedBy": by,
            "startedAt": now,
            "steps": [{"index": after.current_step_index or 0, "startedAt": now}],
        }
    )


def _moved(
    r: RolloutRecord,
    before: RolloutCellStatus,
    after: RolloutCellStatus,
    now: datetime.datetime,
    annotations: Mapping[str, str],
    steps: int | None,
    credit: Credit | None,
) -> None:
    """A step change and the user's holds, as this reconcile saw them."""

    def by(action: str, value: str) -> str | None:
        return credit.user(action, value) if credit is not None else None

    same = before.rollout_id == r.rollout_id == after.rollout_id
    if same and after.current_step_index is not None:
        was = before.current_step_index or 0
        if after.current_step_index != was:
            _close_step(r, now, before.canary_weight, before)
            promoted = annotations.get(PROMOTE)
            full = promoted == f"{r.rollout_id}/full"
            # steps passed in this one reconcile each began and ended now; those a
            # `promote --full` skipped are not steps that ran
            now_at = after.current_step_index
            last = now_at if steps is None else min(now_at, steps)
            for passed in range(was + 1, last if not full else was + 1):
                r.steps.append(RecordedStep(index=passed, started_at=now, ended_at=now))
            if steps is None or now_at < steps:  # past the last: completing, not a step
                r.steps.append(RecordedStep(index=now_at, started_at=now))
            if full or promoted == f"{r.rollout_id}/{was}":
                what = "fully" if full else f"at step {was + 1}"
                said = f"okra promote {what} ({PROMOTE}={promoted})"
                _say(r, now, "Normal", "Promoted", said, by("promote", promoted or ""))
    _frozen(r, before, after, now)
    held_before = before.paused_reason == "PausedByUser"
    held_after = after.paused_reason == "PausedByUser"
    if held_after and not held_before:
        said = after.message or "held by okra pause"
        _say(r, now, "Normal", "PausedByUser", said, by("pause", "true"))
    elif held_before and not held_after and after.rollout_id == r.rollout_id:
        _say(r, now, "Normal", "Resumed", "okra pause's hold removed", by("resume", ""))


def _frozen(
    r: RolloutRecord, before: RolloutCellStatus, after: RolloutCellStatus, now: datetime.datetime
) -> None:
    """A freeze's hold begins when the status first says a freeze holds the rollout, and
    ends when it no longer does (or with the rollout: `_end`)."""
    held, was = freeze_holds(after), freeze_holds(before)
    if held and not was and after.rollout_id == r.rollout_id:
        hold = RecordedFreeze(started_at=now, message=after.message or "")
        r.freezes = [*(r.freezes or []), hold][-MAX_RECORDED_FREEZES:]
    elif was and not held:
        _thaw(r, now)


def _thaw(r: RolloutRecord, now: datetime.datetime) -> None:
    if r.freezes and r.freezes[-1].ended_at is None:
        r.freezes[-1].ended_at = now


def _say(
    r: RolloutRecord,
    now: datetime.datetime,
    type_: str,
    reason: str,
    message: str,
    user: str | None = None,
) -> None:
    """Add an entry (`user`: who did it, for a user action), unless it repeats the last one
    word for word."""
    last = r.events[-1] if r.events else None
    if last is not None and (last.reason, last.message) == (reason, message):
        return
    r.events.append(
        RecordedEvent.model_validate(
            {"time": now, "type": type_, "reason": reason, "message": message, "user": user}
        )
    )
    del r.events[:-MAX_RECORDED_EVENTS]


def _close_step(
    r: RolloutRecord,
    now: datetime.datetime,
    weight: int | None,
    before: RolloutCellStatus | None = None,
) -> None:
    """End the current step at `weight`, with the traffic reading `before` held of it."""
    if r.steps and r.steps[-1].ended_at is None:
        step = r.steps[-1]
        step.ended_at = now
        step.canary_weight = weight
        reading = before.traffic if before is not None else None
        if reading is not None and reading.step == f"{r.rollout_id}/{step.index}":
            step.traffic = reading.model_copy(deep=True)


def _end(
    r: RolloutRecord,
    now: datetime.datetime,
    outcome: Outcome,
    cause: str,
    weight: int | None = None,
    before: RolloutCellStatus | None = None,
) -> None:
    _close_step(r, now, weight, before)
    _thaw(r, now)
    r.ended_at, r.outcome, r.cause = now, outcome, cause
