"""Work on a change in progress goes before first reports on new or failing objects.

One `PriorityGate` is shared by every controller of a manager. A reconciler says an object
is mid-change (a Cell between two steps of its rollout) by returning
`Result(in_progress=True)`. While such a reconcile runs, and for `hold` seconds after the
last one finished, the queues hand out only the items of their first lane (objects whose
last reconcile succeeded); new objects and objects whose last reconcile failed wait. A
rollout's next hop (its load balancer config, the status it waits for, its next step)
then does not share the API server with a flood of first reports: status writes and
Events on a thousand objects created at once, which it otherwise slows by each of its
requests taking longer.

A change whose next hop is due soon (the reconcile also says `requeue_after`, at most
`lookahead` seconds: a short pause between two steps) keeps them waiting until that hop,
plus `hold`. Work started during a two-second pause would otherwise still be in flight at
the API server when the pause ends, and the hop would wait behind it. A longer pause
holds nothing back between its hops.

Nothing waits long: once `max_wait` seconds have passed since the last held item started,
one more starts, whatever the rollouts are doing, and an item that has waited `max_age`
seconds starts at once, so a manager that is always rolling something out still reports
on every new object within `max_age`. Workers are never held: a worker that finds only
held items waits for the next item it may take, of any lane. A manager that rolls nothing
out (its start, which reconciles everything for the first time) is never held back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol

from okra_runtime import metrics as m

HOLD = 0.3
"""Seconds after the last in-progress reconcile during which first reports wait: longer
than one hop of a rollout (a write, the watch event it causes, the next reconcile)."""
MAX_WAIT = 1.0
"""Seconds after which one held item starts anyway."""
LOOKAHEAD = 5.0
"""A next hop due within this many seconds (a short pause) keeps first reports waiting
until it has happened."""
MAX_AGE = 10.0
"""Seconds a held item waits at most: an older one starts whatever is moving."""


class Waker(Protocol):
    def wake(self) -> None:
        """A queue with held items: wake one of its waiting workers to look again."""
        ...


class PriorityGate:
    def __init__(
        self,
        hold: float = HOLD,
        max_wait: float = MAX_WAIT,
        *,
        lookahead: float = LOOKAHEAD,
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if hold < 0 or max_wait <= 0 or lookahead < 0 or max_age <= 0:
            raise ValueError(
                "hold and lookahead must be at least 0, max_wait and max_age more than 0"
            )
        self.hold = hold
        self.max_wait = max_wait
        self.lookahead = lookahead
        self.max_age = max_age
        self._clock = clock
        self._busy = 0  # in-progress reconciles running now
        self._until = float("-inf")  # held items wait until then (when none is running)
        self._last_held_start = float("-inf")
        self._waiting: list[Waker] = []
        self._aged_at = float("inf")  # when the oldest item of a waiting queue is max_age old
        self._timer: asyncio.TimerHandle | None = None
        self._metric = m.PRIORITY_HELD

    # -- what controllers tell it --------------------------------------------------------

    def progress_started(self) -> None:
        """An in-progress object's reconcile began."""
        self._busy += 1

    def progress_finished(self, still: bool, next_hop: float | None = None) -> None:
        """Such a reconcile ended (`still`: the object is still mid-change, its next hop
        due in `next_hop` seconds when known), or a reconcile that began an object's
        change ended."""
        self._busy = max(self._busy - 1, 0)
        self.touched(still, next_hop)

    def touched(self, still: bool, next_hop: float | None = None) -> None:
        """A reconcile left an object mid-change (`still`): hold for `hold` seconds, or
        until `hold` after its next hop when that is due within `lookahead` seconds."""
        if still:
            wait = self.hold
            if next_hop is not None and 0 < next_hop <= self.lookahead:
                wait += next_hop
            self._until = max(self._until, self._clock() + wait)
        self._wake_all()

    # -- what queues ask it --------------------------------------------------------------

    def may_start(self, waited: float = 0.0) -> bool:
        """May an item of a held lane (new or failing), queued `waited` seconds ago, start
        now?"""
        if waited >= self.max_age:
            return True
        now = self._clock()
        if self._busy == 0 and now >= self._until:
            return True
        # the floor: one per max_wait, even beside a held item that is still running (a slow
        # first reconcile must not stop the next one from starting)
        return now - self._last_held_start >= self.max_wait

    def started(self) -> None:
        """An item of a held lane started."""
        self._last_held_start = self._clock()

    def wait(self, queue: Waker, waited: float = 0.0) -> None:
        """`queue` has held items, the oldest queued `waited` seconds ago, and a worker
        waiting: wake it when they may start."""
        if queue not in self._waiting:
            self._waiting.append(queue)
            self._metric.set(len(self._waiting))
        self._aged_at = min(self._aged_at, self._clock() + self.max_age - waited)
        self._arm()

    # -- internals -----------------------------------------------------------------------

    def _arm(self) -> None:
        """A timer for the moment held items may start without anything else happening."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._waiting:
            return
        now = self._clock()
        at = min(self._last_held_start + self.max_wait, self._aged_at)
        if self._busy == 0:
            at = min(at, self._until)
        self._timer = asyncio.get_running_loop().call_later(max(at - now, 0.001), self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._wake_all()

    def _wake_all(self) -> None:
        if not self._waiting:
            return
        if not self.may_start() and self._clock() < self._aged_at:
            self._arm()
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        # Each woken queue looks again and, with items still held, waits here anew.
        waiting, self._waiting = self._waiting, []
        self._aged_at = float("inf")
        self._metric.set(0)
        for q in waiting:
            q.wake()
