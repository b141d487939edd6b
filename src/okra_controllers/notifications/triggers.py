"""Which notification triggers a reconcile fired: pure functions of an object's status
before and after, and the Events its plan emitted (Cells: `triggers`; ProgressiveRollouts:
`rollout_triggers`); a repaired drift fires `on-drift-repaired` on the Cell that owns the
load balancer config."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.progressiverollout import ProgressiveRolloutStatus

PREFIX = "notifications.okra.mumo.co/subscribe."
TRIGGERS = (
    "on-rollout-started",
    "on-rollout-step-completed",
    "on-rollout-paused",
    "on-analysis-inconclusive",
    "on-rollout-aborted",
    "on-rollout-failed",
    "on-rollout-completed",
    "on-drift-repaired",
)
DRIFT_REPAIRED = "on-drift-repaired"
BY_EVENT = {
    "RolloutStarted": "on-rollout-started",
    "RolloutAborted": "on-rollout-aborted",
    "RolloutFailed": "on-rollout-failed",
    "RolloutCompleted": "on-rollout-completed",
}


@dataclass(frozen=True)
class Fired:
    trigger: str
    message: str
    step: int | None = None


def triggers(
    before: RolloutCellStatus, after: RolloutCellStatus, events: Iterable[tuple[str, str]]
) -> list[Fired]:
    """`events`: (reason, message) of the Events this reconcile recorded."""
    out: list[Fired] = []
    for reason, message in events:
        if reason in BY_EVENT:
            out.append(Fired(BY_EVENT[reason], message))
    same_rollout = before.rollout_id is not None and before.rollout_id == after.rollout_id
    b, a = before.current_step_index or 0, after.current_step_index or 0
    if same_rollout and a > b:
        for step in range(b, a):
            out.append(Fired("on-rollout-step-completed", f"step {step + 1} completed", step))
    if after.health == "Paused" and (
        before.health != "Paused" or before.paused_reason != after.paused_reason
    ):
        name = (
            "on-analysis-inconclusive"
            if after.paused_reason == "Inconclusive"
            else ("on-rollout-paused")
        )
        out.append(Fired(name, after.message or "paused"))
    return out


ROLLOUT_BY_EVENT = {
    "RolloutStarted": "on-rollout-started",
    "RevisionChanged": "on-rollout-started",  # a new revision starts over
    "StageCompleted": "on-rollout-step-completed",
    "Aborted": "on-rollout-aborted",
    "StageFailed": "on-rollout-failed",
    "RolloutCompleted": "on-rollout-completed",
}


def rollout_triggers(
    before: ProgressiveRolloutStatus,
    after: ProgressiveRolloutStatus,
    events: Iterable[tuple[str, str]],
) -> list[Fired]:
    """A ProgressiveRollout's triggers: its stages are the steps (`step` is the index of
    the stage a `StageCompleted` finished); a pause is Inconclusive analysis or a stage
    that waits for `okra promote`."""
    done_before = set()
    if before.revision == after.revision:
        done_before = {i for i, s in enumerate(before.stages or []) if s.phase == "Completed"}
    newly_done = iter(
        i
        for i, s in enumerate(after.stages or [])
        if s.phase == "Completed" and i not in done_before
    )
    out: list[Fired] = []
    for reason, message in events:
        if reason == "StageCompleted":
            out.append(Fired(ROLLOUT_BY_EVENT[reason], message, next(newly_done, None)))
        elif reason in ROLLOUT_BY_EVENT:
            out.append(Fired(ROLLOUT_BY_EVENT[reason], message))
    if after.phase == "Paused" and (before.phase != "Paused" or before.message != after.message):
        inconclusive = "Inconclusive" in (after.message or "")
        name = "on-analysis-inconclusive" if inconclusive else "on-rollout-paused"
        out.append(Fired(name, after.message or "paused"))
    return out


@dataclass(frozen=True)
class Subscription:
    trigger: str
    service: str
    recipient: str


def subscriptions(annotations: dict[str, Any]) -> list[Subscription]:
    out = []
    for key, value in annotations.items():
        if not key.startswith(PREFIX):
            continue
        trigger, _, service = key[len(PREFIX) :].partition(".")
        if service:
            out.append(Subscription(trigger, service, str(value or "")))
    return out


def wanted(subs: list[Subscription], fired: Fired) -> list[Subscription]:
    return [s for s in subs if s.trigger in (fired.trigger, "all")]
