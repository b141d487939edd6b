"""Freezes: while one applies (`Observed.freeze`), no new step starts and no rollout begins.

The hold is at a step boundary, never inside a step: a weight already written stays and
completes once AWS shows it; a Pause already created runs out; an analysis already started
finishes and its verdict counts (a failure rolls back). What does not start: a step whose
weight, Pause or run does not exist yet; the canary's final 100 %; a rollout of a new
version (or of changed steps), a first rollout, a step-less update. What always proceeds:
rollbacks (`spec.version` below the serving version, a failed analysis or check), `okra
abort`, and a new target group of the serving version (scale out). The status says which
freezes hold the Cell and until when (condition `Frozen`, the message, `pausedReason:
Frozen`), an Event marks the hold and its end, and the Cell is looked at again when the
freeze ends.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.strategy import CanaryStep
from okra_controllers.cell.plan.model import Event, Forward, Observed, Plan
from okra_controllers.cell.plan.status import condition, set_phase
from okra_controllers.cell.plan.switch import steady
from okra_controllers.cell.plan.weights import same_weights
from okra_controllers.cell.versions import Version

FROZEN = "Frozen"


def freeze_holds(status: RolloutCellStatus) -> bool:
    """Whether `status` says a freeze holds the rollout: Paused, for reason Frozen (the
    metric okra_rollout_held_by_freeze). A Cell that is not Paused (aborted, failed,
    done) is held by no freeze, whatever reason a status written by an older okra kept."""
    return status.health == "Paused" and status.paused_reason == FROZEN


def started(o: Observed, s: CanaryStep, target: tuple[Forward, ...], run: str, pause: str) -> bool:
    """Whether step `s` has begun: its weights written (`target`), its Pause created, its
    run started. A step that has begun completes under a freeze."""
    if s.set_weight is not None or s.step_weight is not None:
        return o.forward is not None and same_weights(o.forward, target)
    if s.pause is not None:
        return pause in o.pauses
    if s.analysis is not None:
        return run in o.runs
    return True


def frozen_note(o: Observed, what: str) -> str:
    """What a Cell held by a freeze says: what waits, and for which freezes until when."""
    assert o.freeze is not None
    return f"{what} waits: {o.freeze.describe()}"


def hold_start(p: Plan, o: Observed, to: Version, stable: Version | None) -> Plan:
    """A rollout of `to` that has not begun waits for the freeze to end. The stable
    version, if one serves, goes on serving as in the steady state (a new target group of
    it is added); with none, nothing is written. The Cell is Paused in phase Init, as
    while it waits for Argo CD: a new version is found and no traffic moves to it yet
    (not Migrating: the stable version serves 100 % and no step has begun)."""
    if stable is not None:
        p = steady(p, o, stable, "")
        if p.status.health == "Degraded":
            return p  # a failure being reported: said as such
    st = p.status
    what = f"rollout of {to.text}"
    if stable is not None:
        what = f"{stable.text} serves 100%; {what}"
    st.phase = "Init"
    st.paused_reason = FROZEN
    set_phase(p, o, "Paused", frozen_note(o, what))
    return p


def report_freeze(p: Plan, o: Observed) -> None:
    """Condition `Frozen` (True while a freeze applies to the Cell: reason `Held` while it
    holds the rollout, `Applies` while it does not), an Event
    when a freeze starts or stops holding the rollout, and a look again when it ends."""
    st = p.status
    before = next((c for c in o.status.conditions or [] if c.type == FROZEN), None)
    held = freeze_holds(st)
    was_held = freeze_holds(o.status)
    if o.freeze is not None:
        message = o.freeze.describe()
        reason = "Held" if held else "Applies"
        condition(st, FROZEN, True, reason, message, o.now, o.generation)
        left = o.freeze.seconds_left(o.now)
        if left is not None:
            p.wake_after = left if p.wake_after is None else min(p.wake_after, left)
        if held and not was_held:
            p.events.append(Event("Normal", "Frozen", st.message or message))
    elif before is not None and before.status == "True":
        condition(st, FROZEN, False, "NotFrozen", "no freeze applies", o.now, o.generation)
    if was_held and not held and o.freeze is None:
        p.events.append(Event("Normal", "Unfrozen", f"no freeze holds the rollout: {st.message}"))
