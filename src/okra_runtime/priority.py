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

Nothing waits long: once `max_wait` seconds have passed since the last held item started,
one more starts, whatever the rollouts are doing, so a manager that is always rolling
something out still reconciles new objects (at least one per `max_wait`, and at full width
in every pause between steps). Workers are never held: a worker that finds only held items
waits for the next item it may take, of any lane. A manager that rolls nothing out (its
start, which reconciles everything for the first time) is never held back.
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
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if hold < 0 or max_wait <= 0:
            raise ValueError("hold must be at least 0 and max_wait more than 0")
        self.hold = hold
        self.max_wait = max_wait
        self._clock = clock
        self._busy = 0  # in-progress reconciles running now
        self._until = float("-inf")  # held items wait until then (when none is running)
        self._last_held_start = float("-inf")
        self._waiting: list[Waker] = []
        self._timer: asyncio.TimerHandle | None = None
        self._metric = m.PRIORITY_HELD

    # -- what controllers tell it --------------------------------------------------------

    def progress_started(self) -> None:
        """An in-progress object's reconcile began."""
        self._busy += 1

    def progress_finished(self, still: bool) -> None:
        """Such a reconcile ended (`still`: the object is still mid-change), or a
        reconcile that began an object's change ended."""
        self._busy = max(self._busy - 1, 0)
        self.touched(still)

    def touched(self, still: bool) -> None:
        """A reconcile left an object mid-change (`still`): hold for `hold` seconds."""
        if still:
            self._until = max(self._until, self._clock() + self.hold)
        self._wake_all()

    # -- what queues ask it --------------------------------------------------------------

    def may_start(self) -> bool:
        """May an item of a held lane (new or failing) start now?"""
        now = self._clock()
        if self._busy == 0 and now >= self._until:
            return True
        # the floor: one per max_wait, even beside a held item that is still running (a slow
        # first reconcile must not stop the next one from starting)
        return now - self._last_held_start >= self.max_wait

    def started(self) -> None:
        """An item of a held lane started."""
        self._last_held_start = self._clock()

    def wait(self, queue: Waker) -> None:
        """`queue` has held items and a worker waiting: wake it when they may start."""
        if queue not in self._waiting:
            self._waiting.append(queue)
            self._metric.set(len(self._waiting))
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
        at = self._last_held_start + self.max_wait
        if self._busy == 0:
            at = min(at, self._until)
        self._timer = asyncio.get_running_loop().call_later(max(at - now, 0.001), self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._wake_all()

    def _wake_all(self) -> None:
        if not self._waiting:
            return
        if not self.may_start():
            self._arm()
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        waiting, self._waiting = self._waiting, []
        self._metric.set(0)
        for q in waiting:
            q.wake()
