"""Property: whatever the interleaving of adds, delayed adds, failures and worker counts, the
queue never hands one item to two workers at once and never loses an add.

"Never loses an add" is checked on a single logical clock shared by the driver and the
workers: for every item, some processing of it starts after the last add of it.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_runtime.workqueue import ItemExponentialFailureRateLimiter, ShutDown, WorkQueue

ITEMS = st.integers(0, 5)  # few items, so adds often hit a waiting or processing item
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), ITEMS, st.just(0)),
        st.tuples(st.just("add_after"), ITEMS, st.integers(0, 3)),  # delay in ms
        st.tuples(st.just("yield"), st.just(0), st.integers(1, 3)),  # event-loop turns
    ),
    max_size=40,
)


@dataclass
class Trace:
    seq: itertools.count[int] = field(default_factory=itertools.count)
    last_add: dict[int, int] = field(default_factory=dict)
    last_start: dict[int, int] = field(default_factory=dict)
    active: set[int] = field(default_factory=set)
    overlaps: list[int] = field(default_factory=list)
    progress: asyncio.Event = field(default_factory=asyncio.Event)  # set when a processing ends

    def added(self, item: int) -> None:
        self.last_add[item] = next(self.seq)

    def unserved(self) -> list[int]:
        """Items whose last add has not been followed by the start of a processing."""
        return [i for i, a in self.last_add.items() if self.last_start.get(i, -1) < a]


async def run(
    ops: list[tuple[str, int, int]], failures: dict[int, int], workers: int, turns: list[int]
) -> Trace:
    q: WorkQueue[int] = WorkQueue("property", ItemExponentialFailureRateLimiter(0.0005, 0.002))
    trace = Trace()
    failures_left = dict(failures)
    work_turns = itertools.cycle(turns)

    async def worker() -> None:
        while True:
            try:
                item = await q.get()
            except ShutDown:
                return
            if item in trace.active:
                trace.overlaps.append(item)
            trace.active.add(item)
            trace.last_start[item] = next(trace.seq)
            for _ in range(next(work_turns)):
                await asyncio.sleep(0)  # let the driver and other workers run meanwhile
            trace.active.discard(item)
            if failures_left.get(item, 0) > 0:
                failures_left[item] -= 1
                trace.added(item)
                q.add_rate_limited(item)
            else:
                q.forget(item)
            q.done(item)
            trace.progress.set()

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for kind, item, arg in ops:
        if kind == "add":
            trace.added(item)
            q.add(item)
        elif kind == "add_after":
            trace.added(item)
            q.add_after(item, arg / 1000)
        else:
            for _ in range(arg):
                await asyncio.sleep(0)
    try:
        async with asyncio.timeout(2):
            while trace.unserved() or trace.active:
                trace.progress.clear()
                await trace.progress.wait()
    except TimeoutError:
        pass  # reported by the caller's assertion
    q.shutdown()
    await asyncio.gather(*tasks)
    return trace


@settings(max_examples=200, deadline=None)
@given(
    ops=OPS,
    failures=st.dictionaries(ITEMS, st.integers(0, 2)),
    workers=st.integers(1, 8),
    turns=st.lists(st.integers(0, 3), min_size=1, max_size=5),
)
def test_no_item_is_processed_twice_at_once_and_no_add_is_lost(
    ops: list[tuple[str, int, int]], failures: dict[int, int], workers: int, turns: list[int]
) -> None:
    trace = asyncio.run(run(ops, failures, workers, turns))
    assert trace.overlaps == []
    assert trace.unserved() == []
