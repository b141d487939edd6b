"""The Cell's status as the plan writes it: conditions, health and phase, messages, holds.

One place decides how a health (Progressing, Paused, Healthy, Degraded) maps to the
lifecycle phase and the four standard conditions, so every phase module reports the
same way; and one place decides what a gate that holds the plan back leaves behind
(`hold`): the status as observed, saying why, and nothing written.
"""

from __future__ import annotations

import datetime
import re
from typing import Literal

from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.cell.plan.model import Event, Observed, Plan

Health = Literal["Progressing", "Paused", "Healthy", "Degraded"]
CONDITION_ORDER = ["Progressing", "Healthy", "Paused", "Degraded"]


def condition(
    status: RolloutCellStatus,
    type_: str,
    ok: bool,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int,
) -> None:
    """Set condition `type_`; its transition time moves only when its status does. The
    conditions are kept in one order (CONDITION_ORDER, then the others)."""
    conds = with_condition(status.conditions, type_, ok, reason, message[:32000], now, generation)
    status.conditions = sorted(
        conds,
        key=lambda c: CONDITION_ORDER.index(c.type) if c.type in CONDITION_ORDER else 99,
    )


def since_observed(status: RolloutCellStatus, observed: RolloutCellStatus) -> None:
    """Each condition of `status` whose status is the one observed keeps the observed
    transition time: a pass that flips a condition and flips it back (a phase's plan says
    Healthy, a gate then holds it Degraded) has not moved it."""
    before = {c.type: c for c in observed.conditions or []}
    status.conditions = [
        c.model_copy(update={"last_transition_time": old.last_transition_time})
        if (old := before.get(c.type)) is not None and old.status == c.status
        else c
        for c in status.conditions or []
    ] or None


def set_phase(p: Plan, o: Observed, phase: Health, message: str) -> None:
    """The Cell's health (and its conditions) and, from it, its lifecycle phase: Healthy
    is Completed, Degraded is Error; a Cell on its way is Migrating unless this pass put
    it in Init or Completing (set before this call). `pausedReason` says why a Paused
    Cell is paused (set before this call) and is cleared on any other health: a Cell
    aborted, failed or done is held by nothing, whatever held it on an earlier pass."""
    st = p.status
    st.health = phase
    if phase != "Paused":
        st.paused_reason = None
    if phase == "Healthy":
        st.phase = "Completed"
    elif phase == "Degraded":
        st.phase = "Error"
    elif st.phase not in ("Init", "Completing"):
        st.phase = "Migrating"
    st.message = message
    g, now = o.generation, o.now
    condition(st, "Progressing", phase in ("Progressing", "Paused"), phase, message, now, g)
    condition(st, "Healthy", phase == "Healthy", phase, message, now, g)
    condition(st, "Paused", phase == "Paused", st.paused_reason or phase, message, now, g)
    condition(st, "Degraded", phase == "Degraded", phase, message, now, g)


NOTE = re.compile(
    r"weights written, not yet in effect: "
    r"|the load balancer config cannot be applied \("
    r"|waiting for \S+: \d+ of \d+ target groups"
)
"""How each note `add_to_message` adds begins: what holds the rollout back now, said
again on every pass while it is true."""


def add_to_message(status: RolloutCellStatus, message: str) -> None:
    """Add `message` to what the status message already says (once): a condition that
    holds the rollout back is said beside the phase's own message, not instead of it."""
    if not status.message:
        status.message = message
    elif message not in status.message:
        status.message = f"{status.message}; {message}"


FAILED_AND_BLOCKED = "a version failed and is blocked"


def kept_message(message: str | None, default: str) -> str:
    """A message carried from one pass to the next (a failure that stays visible) without
    the notes earlier passes added to it: each pass adds those that are still true, and a
    note carried over would still say, long after, what was true once ("not yet in effect
    ... in effect at 11:41:15Z")."""
    kept = message or ""
    for m in re.finditer(r"; ", kept):
        if NOTE.match(kept, m.end()):
            kept = kept[: m.start()]
            break
    return kept or default


def hold(
    p: Plan,
    o: Observed,
    phase: Literal["Progressing", "Degraded"],
    message: str,
    event: Event | None,
    condition_: tuple[str, str] | None = None,
) -> Plan:
    """Hold the plan back: the status stays as observed but says why (phase, message,
    optional condition); nothing is created, no weight written. A failure's blocklist
    entry and the ending of runs and pauses that goes with it are kept (they only stop
    things)."""
    st = o.status.model_copy(deep=True)
    st.observed_generation = o.generation
    st.conditions = [c.model_copy() for c in p.status.conditions or []] or None
    held = Plan(forward=None, status=st, block=p.block, held=True)
    if p.block is not None:
        held.terminate_runs = list(p.terminate_runs)
        held.cancel_pauses = list(p.cancel_pauses)
    held.events = [e for e in p.events if e.reason in ("UnparsableVersion", "WaitingForReplicas")]
    if condition_ is not None:
        type_, reason = condition_
        condition(st, type_, False, reason, message, o.now, o.generation)
    set_phase(held, o, phase, message)
    since_observed(st, o.status)
    if event is not None and (o.status.message != message or o.status.health != phase):
        held.events.append(event)
    return held
