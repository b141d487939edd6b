"""A rate-limited, delaying work queue with client-go `util/workqueue` semantics.

Controllers put keys (usually `Request`s) here from event handlers and workers take them out
to reconcile. The queue, not the workers, guarantees that one key is reconciled by one worker
at a time and that no change is ever lost, so reconcilers may assume both. It is plain
asyncio: one event loop, no threads, no locks, no blocking calls.

Invariants (as client-go's queue.go states them):

- An item is never handed to two workers at once: `get()` moves it into the *processing*
  set and it stays there until `done()`.
- An item added while it is processing is marked *dirty*, not queued; `done()` queues it
  again, so an add during a reconcile is never lost and never runs concurrently with it.
- Adds of an item that is already waiting collapse into one; otherwise items come out in the
  order they went in (FIFO), with one exception: with a `first` predicate, the items it holds
  true for when they are queued come out before all others (FIFO among themselves). The
  controller uses it to put objects it already reconciled successfully ahead of new and
  failing ones, so a flood of new or broken objects cannot delay the next step of one that
  works (controller-runtime's priority queue does the same for its initial list). The other
  lane is never starved: after `first_burst` items in a row from the first lane while others
  wait, the next item comes from the other lane.
- With a `gate` (the manager's `PriorityGate`), items of the other lane start only when the
  gate allows: not while a change in progress anywhere in the manager is moving, unless
  the item has waited the gate's `max_age` (see `okra_runtime.priority`). A worker never
  waits for the gate while an item of the first lane is there to take, and a worker that
  takes an item wakes another idle one when more may start.
- `add_after` keeps every delayed item in one heap served by one timer per queue, so a
  thousand pending requeues cost one scheduled callback, not a thousand tasks. For duplicate
  delayed adds the earliest ready time wins. Delayed items are dropped on shutdown.
- After `shutdown()` adds are ignored; `get()` still hands out what is already queued and
  raises `ShutDown` once nothing is left. `shutdown_with_drain()` also waits until every
  item being processed is `done()`.

Metrics are the client-go `workqueue_*` series, labelled `controller=name, name=name` as
controller-runtime registers them. `workqueue_depth` counts dirty items (queued, or waiting
for their current processing to finish), as client-go's does. The two gauges about work in
progress are computed by `update_unfinished_work()`, which the metrics server calls before a
scrape, so `get()`/`done()` stay cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import random
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from okra_runtime import metrics as m
from okra_runtime.priority import PriorityGate

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "ShutDown",
    "WorkQueue",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class ShutDown(Exception):  # noqa: N818 -- client-go's name; it is a signal, not an error
    """Raised by `WorkQueue.get()` once the queue is shut down and has nothing left to hand out."""


class RateLimiter(Protocol[T_contra]):
    """Decides how long a failed item waits before it is retried."""

    def when(self, item: T_contra) -> float:
        """Record one more failure of `item`; return the seconds to wait before re-adding it."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking `item` (it succeeded); its next failure starts from scratch."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures of `item` are currently being tracked."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per item: `base_delay * 2**failures`, capped at `max_delay`."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self._base = base_delay
        self._max = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        try:
            return min(self._base * 2.0**exp, self._max)
        except OverflowError:
            return self._max

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket for all items: `burst` retries at once, then `qps` per second.

    `when()` always reserves a token, as golang.org/x/time/rate's `Reserve()` does, and
    returns how long the caller must wait for it; tokens may go negative (a debt).
    """

    def __init__(
        self, qps: float = 10.0, burst: int = 100, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: object) -> float:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0.0 else -self._tokens / self._qps

    def forget(self, item: object) -> None:
        pass

    def num_requeues(self, item: object) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """The longest wait of several limiters; `forget` reaches all of them."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self._limiters = limiters

    def when(self, item: T) -> float:
        return max((lim.when(item) for lim in self._limiters), default=0.0)

    def forget(self, item: T) -> None:
        for lim in self._limiters:
            lim.forget(item)

    def num_requeues(self, item: T) -> int:
        return max((lim.num_requeues(item) for lim in self._limiters), default=0)


def default_controller_rate_limiter() -> RateLimiter[Hashable]:
    """controller-runtime's default: per item 5 ms doubling to 1000 s; overall 10 qps, 100 burst."""
    return MaxOfRateLimiter[Hashable](
        ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100)
    )


class _Metrics:
    """The label-bound children of the `workqueue_*` metrics for one queue."""

    def __init__(self, name: str) -> None:
        self.depth = m.WORKQUEUE_DEPTH.labels(name, name)
        self.adds = m.WORKQUEUE_ADDS.labels(name, name)
        self.queue_duration = m.WORKQUEUE_QUEUE_DURATION.labels(name, name)
        self.work_duration = m.WORKQUEUE_WORK_DURATION.labels(name, name)
        self.unfinished_work = m.WORKQUEUE_UNFINISHED_WORK.labels(name, name)
        self.longest_running = m.WORKQUEUE_LONGEST_RUNNING.labels(name, name)
        self.retries = m.WORKQUEUE_RETRIES.labels(name, name)


class WorkQueue(Generic[T]):
    """See the module docstring for the guarantees. Use from one event loop only.

    `clock` (monotonic seconds) times the metrics and the delayed adds. Delays are slept on
    the event loop, then checked against `clock`: a fake clock changes what is measured, not
    how long anything sleeps.
    """

    def __init__(
        self,
        name: str,
        rate_limiter: RateLimiter[T] | None = None,
        *,
        metrics: bool = True,
        clock: Callable[[], float] = time.monotonic,
        first: Callable[[T], bool] | None = None,
        first_burst: int = 4,
    ) -> None:
        if first_burst < 1:
            raise ValueError("first_burst must be at least 1")
        self.name = name
        self._rate_limiter: RateLimiter[T] = (
            default_controller_rate_limiter() if rate_limiter is None else rate_limiter
        )
        self._metrics = _Metrics(name) if metrics else None
        self._clock = clock
        self._queue: deque[T] = deque()
        self._first: deque[T] = deque()  # the items `first` held true for, served before _queue
        self._is_first = first
        self._first_burst = first_burst
        self._first_run = 0  # items handed out from _first in a row while _queue waited
        # The manager's gate, which holds back the other lane while a change is in progress
        # (see okra_runtime.priority); with none, nothing is held.
        self.gate: PriorityGate | None = None
        # dirty: needs processing -> when it was added (the gate lets a held item start
        # once it has waited long enough); processing -> when it was handed out (for the
        # metrics only: 0.0 when they are off).
        self._dirty: dict[T, float] = {}
        self._processing: dict[T, float] = {}
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drainers: list[asyncio.Future[None]] = []
        self._shutting_down = False
        self._drain = False
        # Delayed items: a heap of (ready_at, seq, item); `_ready_at` holds each item's live
        # entry, so heap entries whose time no longer matches are stale and skipped.
        self._delayed: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._seq = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0

    # -- adding ---------------------------------------------------------------------------

    def add(self, item: T) -> None:
        """Queue `item` unless it is already waiting; if it is processing, queue it on `done()`."""
        if self._shutting_down or item in self._dirty:
            return
        mt = self._metrics
        if mt is not None:
            mt.adds.inc()
            mt.depth.inc()
        self._dirty[item] = self._clock()
        if item in self._processing:
            return
        self._enqueue(item)

    def add_after(self, item: T, delay: float) -> None:
        """`add(item)` once `delay` seconds have passed; counts a retry, as client-go does."""
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock() + delay
        known = self._ready_at.get(item)
        if known is not None and known <= ready_at:
            return
        self._ready_at[item] = ready_at
        self._seq += 1
        heapq.heappush(self._delayed, (ready_at, self._seq, item))
        if self._timer is None or ready_at < self._timer_at:
            self._arm_timer()

    def add_rate_limited(self, item: T, max_delay: float | None = None) -> None:
        """Re-add a failed `item` after the rate limiter's delay; with `max_delay`, at
        most that (jittered to 50-100 % of it, so that many items retry spread out)."""
        delay = self._rate_limiter.when(item)
        if max_delay is not None and delay > max_delay:
            delay = max_delay * (0.5 + random.random() / 2)
        self.add_after(item, delay)

    def forget(self, item: T) -> None:
        """Tell the rate limiter `item` succeeded, resetting its backoff."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)

    # -- taking ---------------------------------------------------------------------------

    async def get(self) -> T:
        """Wait for an item and mark it processing; the caller must call `done(item)`."""
        while not self._first and not (self._queue and self._other_may_start()):
            if self._shutting_down:
                raise ShutDown
            if self._queue and self.gate is not None:
                # items wait for the gate: be woken when it opens or the oldest is old enough
                self.gate.wait(self, self._head_waited())
            getter = asyncio.get_running_loop().create_future()
            self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(getter)
                if (self._queue or self._first) and not getter.cancelled():
                    self._wake_one_getter()  # we were woken for an item: pass it on
                raise
        if self._first and (
            not self._queue or self._first_run < self._first_burst or not self._other_may_start()
        ):
            item = self._first.popleft()
            self._first_run = self._first_run + 1 if self._queue else 0
        else:
            item = self._queue.popleft()
            self._first_run = 0
            if self.gate is not None:
                self.gate.started()
        if self._first or (self._queue and self._other_may_start()):
            self._wake_one_getter()  # more to take now: another idle worker takes it
        added = self._dirty.pop(item)
        mt = self._metrics
        if mt is not None:
            now = self._clock()
            mt.depth.dec()
            mt.queue_duration.observe(now - added)
            self._processing[item] = now
        else:
            self._processing[item] = 0.0
        return item

    def done(self, item: T) -> None:
        """Finish processing `item`; re-queue it if it was added meanwhile.

        A `done()` for an item that is not processing is ignored, so a stray call cannot queue
        a second copy of a waiting item.
        """
        started = self._processing.pop(item, None)
        if started is None:
            return
        if self._metrics is not None:
            self._metrics.work_duration.observe(self._clock() - started)
        if item in self._dirty:
            self._enqueue(item)
        if self._drainers and not self._processing:
            self._release_drainers()

    def __len__(self) -> int:
        """Items waiting to be handed out (not processing, not delayed)."""
        return len(self._queue) + len(self._first)

    # -- shutting down --------------------------------------------------------------------

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def shutdown(self) -> None:
        """Ignore further adds, drop delayed items and wake every waiting `get()`.

        Getters that find nothing queued raise `ShutDown`. Does not wait for processing items.
        """
        self._begin_shutdown()
        self._drain = False
        self._release_drainers()

    async def shutdown_with_drain(self) -> None:
        """Like `shutdown()`, then wait until every item being processed is `done()`.

        A concurrent `shutdown()` ends the wait early.
        """
        self._begin_shutdown()
        self._drain = True
        while self._processing and self._drain:
            drained = asyncio.get_running_loop().create_future()
            self._drainers.append(drained)
            await drained

    def update_unfinished_work(self) -> None:
        """Refresh the two in-progress gauges from the items processing now.

        They are `workqueue_unfinished_work_seconds` and
        `workqueue_longest_running_processor_seconds`; call this before a scrape.
        """
        if self._metrics is None:
            return
        now = self._clock()
        ages = [now - started for started in self._processing.values()]
        self._metrics.unfinished_work.set(sum(ages))
        self._metrics.longest_running.set(max(ages, default=0.0))

    def wake(self) -> None:
        """Wake one waiting `get()` to look again (the gate calls it when it opens)."""
        self._wake_one_getter()

    # -- internals ------------------------------------------------------------------------

    def _other_may_start(self) -> bool:
        if self.gate is None or self._shutting_down:
            return True
        return self.gate.may_start(self._head_waited())

    def _head_waited(self) -> float:
        """Seconds the oldest item of the other lane has waited."""
        return self._clock() - self._dirty[self._queue[0]] if self._queue else 0.0

    def _enqueue(self, item: T) -> None:
        first = self._is_first is not None and self._is_first(item)
        (self._first if first else self._queue).append(item)
        self._wake_one_getter()

    def _begin_shutdown(self) -> None:
        self._shutting_down = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._delayed.clear()
        self._ready_at.clear()
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    def _wake_one_getter(self) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _release_drainers(self) -> None:
        drainers, self._drainers = self._drainers, []
        for drained in drainers:
            if not drained.done():
                drained.set_result(None)

    def _arm_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = self._delayed[0][0]
        delay = max(self._timer_at - self._clock(), 0.0)
        self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        now = self._clock()
        delayed = self._delayed
        while delayed and delayed[0][0] <= now:
            ready_at, _, item = heapq.heappop(delayed)
            if self._ready_at.get(item) == ready_at:
                del self._ready_at[item]
                self.add(item)
        while delayed and self._ready_at.get(delayed[0][2]) != delayed[0][0]:
            heapq.heappop(delayed)  # stale: that item was re-added with an earlier time
        if delayed:
            self._arm_timer()
