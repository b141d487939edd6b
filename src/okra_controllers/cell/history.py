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

from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.history import (
    MAX_RECORDED_EVENTS,
    Outcome,
    RecordedEvent,
    RecordedStep,
    RolloutRecord,
    Trigger,
)
from okra_controllers.cell.observe import PROMOTE
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
) -> list[RolloutRecord] | None:
    """`after.history`: `before`'s, with what this reconcile did (`events`: its plan's
    Events; `annotations`: the Cell's, for `okra promote`; `pinned`: `spec.version`;
    `steps`: how many the strategy has, past which the rollout completes rather than runs
    a step), the newest `limit` rollouts. None while the Cell has never rolled out."""
    history = list(before.history or [])
    if history:  # only the newest record can change: copy it, share the others
        history[0] = history[0].model_copy(deep=True)
    latest = history[0] if history else None
    if after.rollout_id is not None and (latest is None or latest.rollout_id != after.rollout_id):
        if latest is not None and latest.outcome is None:
            _end(latest, now, "Superseded", f"superseded by the rollout of {after.canary_version}")
        latest = _begun(before, after, now, pinned)
        history.insert(0, latest)
    if latest is not None and latest.outcome is None:
        _moved(latest, before, after, now, annotations, steps)
        for e in events:
            _say(latest, now, e.type, e.reason, e.message)
            if e.reason in ENDS:
                _end(latest, now, ENDS[e.reason], e.message, before.canary_weight)
        if latest.outcome is None and after.rollout_id != latest.rollout_id:
            _end(latest, now, "Superseded", after.message or "the rollout's version went away")
    kept = history[: max(limit, 0)]
    return kept or None


def _begun(
    before: RolloutCellStatus, after: RolloutCellStatus, now: datetime.datetime, pinned: str | None
) -> RolloutRecord:
    to = after.canary_version or ""
    trigger: Trigger = "NewVersion"
    if before.rollout_id == after.rollout_id:
        trigger = "Unknown"  # under way before the Cell had a record
    elif before.canary_version == to and before.aborted:
        trigger = "Retry"
    elif before.canary_version == to:
        trigger = "StepsChanged"
    elif pinned is not None and pinned == to:
        trigger = "Pin"
    return RolloutRecord.model_validate(
        {
            "rolloutId": after.rollout_id,
            "from": after.stable_version,
            "to": to,
            "trigger": trigger,
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
) -> None:
    """A step change and the user's holds, as this reconcile saw them."""
    same = before.rollout_id == r.rollout_id == after.rollout_id
    if same and after.current_step_index is not None:
        was = before.current_step_index or 0
        if after.current_step_index != was:
            _close_step(r, now, before.canary_weight)
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
                _say(r, now, "Normal", "Promoted", f"okra promote {what} ({PROMOTE}={promoted})")
    held_before = before.paused_reason == "PausedByUser"
    held_after = after.paused_reason == "PausedByUser"
    if held_after and not held_before:
        _say(r, now, "Normal", "PausedByUser", after.message or "held by okra pause")
    elif held_before and not held_after and after.rollout_id == r.rollout_id:
        _say(r, now, "Normal", "Resumed", "okra pause's hold removed")


def _say(r: RolloutRecord, now: datetime.datetime, type_: str, reason: str, message: str) -> None:
    """Add an entry, unless it repeats the last one word for word."""
    last = r.events[-1] if r.events else None
    if last is not None and (last.reason, last.message) == (reason, message):
        return
    r.events.append(
        RecordedEvent.model_validate(
            {"time": now, "type": type_, "reason": reason, "message": message}
        )
    )
    del r.events[:-MAX_RECORDED_EVENTS]


def _close_step(r: RolloutRecord, now: datetime.datetime, weight: int | None) -> None:
    if r.steps and r.steps[-1].ended_at is None:
        r.steps[-1].ended_at = now
        r.steps[-1].canary_weight = weight


def _end(
    r: RolloutRecord,
    now: datetime.datetime,
    outcome: Outcome,
    cause: str,
    weight: int | None = None,
) -> None:
    _close_step(r, now, weight)
    r.ended_at, r.outcome, r.cause = now, outcome, cause
