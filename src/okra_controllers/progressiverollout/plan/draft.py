"""The plan being made (`Draft`), shared by the phase modules, and `set_condition`."""

from __future__ import annotations

import datetime

from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.api.v1alpha1.progressiverollout import ClusterStatus, ProgressiveRolloutStatus
from okra_controllers.progressiverollout.plan.members import short
from okra_controllers.progressiverollout.plan.model import POLL, Event, EventType, Observed, Plan


class Draft:
    """The plan being made: what was observed, the status being written (`st`, also
    `p.status`), the plan, and what the phases tell the report (`promoted`, `stalls`,
    `no_clusters`). The phase modules take it and fill it in."""

    def __init__(self, o: Observed) -> None:
        self.o = o
        self.now = o.now
        self.st = o.status.model_copy(deep=True)
        self.st.observed_generation = o.generation
        self.p = Plan(status=self.st)
        self.apps = {a.name: a for a in o.apps}
        self.promoted = False
        self.stalls: list[str] = []
        self.no_clusters: str | None = None
        self.held = False  # a freeze holds a stage or a sync back (plan/freeze.py)
        self.window_held: dict[str, str] = {}  # application -> cluster (plan/projects.py)

    def event(self, type_: EventType, reason: str, message: str) -> None:
        self.p.events.append(Event(type_, reason, message))

    def cond(self, type_: str, value: bool, reason: str, message: str) -> None:
        set_condition(self.st, type_, value, reason, message, self.now, self.o.generation)

    def error(self, reason: str, message: str) -> Plan:
        if self.st.phase != "Error" or self.st.message != message:
            self.event("Warning", reason, message)
        self.st.phase, self.st.message = "Error", message
        self.cond("Ready", False, reason, message)
        self.cond("Progressing", False, reason, message)
        return self.p

    def sync_id(self, revision: str, *, rollback: bool = False) -> str:
        """A new sync's ID: `<revision>-<uid>-<n>` (`rollback-...` for a rollback), `n`
        counting the syncs this object has started (`status.syncsStarted`, written before
        the operation). Unique per sync, also for clusters synced in the same second, and
        made only from what the API server holds: a manager that restarts before writing
        the operation plans the same ID from the same status."""
        n = (self.st.syncs_started or 0) + 1
        self.st.syncs_started = n
        who = (self.o.uid or self.o.name)[:8]
        return f"{'rollback-' if rollback else ''}{short(revision)}-{who}-{n}"

    def stall(self, c: ClusterStatus, message: str) -> None:
        c.message = message
        self.stalls.append(message)
        self.p.wake(POLL)


def set_condition(
    status: ProgressiveRolloutStatus,
    type_: str,
    value: bool,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int,
) -> None:
    status.conditions = with_condition(
        status.conditions, type_, value, reason, message, now, generation
    )
