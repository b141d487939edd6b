"""The manager's priority gate: while a change is in progress (a rollout between two hops),
new and failing objects wait; objects that work never do, workers are never held, and held
objects still start at least one per `max_wait`. Plain asyncio, no server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import pytest

from okra_runtime.controller import Controller
from okra_runtime.priority import PriorityGate
from okra_runtime.reconcile import Request, Result
from okra_runtime.workqueue import WorkQueue
from support import FakeClock, until

# -- the gate alone, on a fake clock ------------------------------------------------------


def test_nothing_in_progress_lets_everything_start() -> None:
    gate = PriorityGate(clock=FakeClock())
    for _ in range(5):
        assert gate.may_start()
        gate.started()
    assert gate.may_start()


def test_a_reconcile_in_progress_lets_one_held_item_start_per_max_wait() -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=1.0, clock=clock)
    gate.progress_started()
    assert gate.may_start()  # nothing held started for max_wait: one may
    gate.started()
    assert not gate.may_start()  # one per max_wait
    assert not gate.may_start()
    clock.now += 0.75
    assert not gate.may_start()
    clock.now += 0.25
    assert gate.may_start()
    gate.started()  # a slow one, still running: it does not stop the next
    clock.now += 1.0
    assert gate.may_start()


def test_the_hold_lasts_past_the_last_in_progress_reconcile() -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=10.0, clock=clock)
    gate.started()  # something held started just now: the floor does not apply
    gate.progress_started()
    gate.progress_finished(still=True)
    assert not gate.may_start()
    clock.now += 0.299
    assert not gate.may_start()
    clock.now += 0.001
    assert gate.may_start()


def test_a_reconcile_that_ends_the_change_does_not_hold() -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=10.0, clock=clock)
    gate.started()
    gate.progress_started()
    assert not gate.may_start()
    gate.progress_finished(still=False)
    assert gate.may_start()


def test_a_change_that_begins_holds_from_its_end() -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=10.0, clock=clock)
    gate.started()
    gate.touched(still=True)
    assert not gate.may_start()
    clock.now += 0.3
    assert gate.may_start()
    gate.touched(still=False)
    assert gate.may_start()


def test_a_next_hop_due_within_the_lookahead_holds_until_just_after_it() -> None:
    """A rollout in a two-second pause: first reports wait out the pause and the hop."""
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=10.0, lookahead=5.0, clock=clock)
    gate.started()
    gate.progress_started()
    gate.progress_finished(still=True, next_hop=2.0)
    clock.now += 2.299
    assert not gate.may_start()
    clock.now += 0.001
    assert gate.may_start()


@pytest.mark.parametrize("next_hop", [600.0, 5.01, 0.0, None])
def test_a_next_hop_beyond_the_lookahead_or_unknown_holds_only_hold(
    next_hop: float | None,
) -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=10.0, lookahead=5.0, clock=clock)
    gate.started()
    gate.touched(still=True, next_hop=next_hop)
    clock.now += 0.299
    assert not gate.may_start()
    clock.now += 0.001
    assert gate.may_start()


def test_a_next_hop_of_an_object_no_longer_moving_holds_nothing() -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=10.0, clock=clock)
    gate.started()
    gate.touched(still=False, next_hop=2.0)
    assert gate.may_start()


def test_an_item_that_waited_max_age_starts_whatever_is_moving() -> None:
    clock = FakeClock()
    gate = PriorityGate(hold=0.3, max_wait=30.0, max_age=10.0, clock=clock)
    gate.started()
    gate.progress_started()  # never finishes
    assert not gate.may_start(waited=9.99)
    assert gate.may_start(waited=10.0)


@pytest.mark.parametrize(
    ("hold", "max_wait", "lookahead", "max_age"),
    [(-1.0, 1.0, 5.0, 10.0), (0.3, 0.0, 5.0, 10.0), (0.3, 1.0, -1.0, 10.0), (0.3, 1.0, 5.0, 0.0)],
)
def test_bad_settings_are_refused(
    hold: float, max_wait: float, lookahead: float, max_age: float
) -> None:
    with pytest.raises(ValueError, match="hold"):
        PriorityGate(hold, max_wait, lookahead=lookahead, max_age=max_age)


# -- with queues ----------------------------------------------------------------------------


@pytest.fixture
def name() -> str:
    return f"pg-{uuid.uuid4().hex[:8]}"


async def test_a_held_item_waits_and_an_item_of_the_first_lane_does_not(name: str) -> None:
    gate = PriorityGate(hold=0.05, max_wait=30.0)
    working = {"good"}
    q: WorkQueue[str] = WorkQueue(name, first=working.__contains__)
    q.gate = gate
    gate.started()  # a held item started just now: no floor for the next 30 s
    gate.progress_started()
    q.add("new")
    waiting = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not waiting.done()  # held, and the worker waits for any item it may take
    q.add("good")
    assert await asyncio.wait_for(waiting, 1) == "good"
    q.done("good")
    nxt = asyncio.create_task(q.get())
    await asyncio.sleep(0.01)
    assert not nxt.done()
    gate.progress_finished(still=True)  # the hop ended; the hold runs out by itself
    assert await asyncio.wait_for(nxt, 2) == "new"
    q.done("new")


async def test_held_items_start_one_per_max_wait_while_changes_never_stop(name: str) -> None:
    gate = PriorityGate(hold=0.05, max_wait=0.05)
    q: WorkQueue[str] = WorkQueue(name)
    q.gate = gate
    gate.progress_started()  # never finishes
    for i in range(3):
        q.add(f"new-{i}")
    got = []
    for _ in range(3):
        item = await asyncio.wait_for(q.get(), 2)
        assert not gate.may_start()  # one per max_wait
        got.append(item)
        q.done(item)
    assert got == ["new-0", "new-1", "new-2"]


async def test_the_gate_wakes_every_queue_it_held(name: str) -> None:
    gate = PriorityGate(hold=0.05, max_wait=30.0)
    gate.started()
    queues: list[WorkQueue[str]] = []
    for i in range(3):
        q: WorkQueue[str] = WorkQueue(f"{name}-{i}")
        q.gate = gate
        q.add("new")
        queues.append(q)
    gate.progress_started()
    getters = [asyncio.create_task(q.get()) for q in queues]
    await asyncio.sleep(0.01)
    assert not any(g.done() for g in getters)
    gate.progress_finished(still=False)
    assert await asyncio.wait_for(asyncio.gather(*getters), 2) == ["new"] * 3


async def test_a_queue_shutting_down_hands_out_held_items(name: str) -> None:
    gate = PriorityGate(hold=0.05, max_wait=30.0)
    gate.started()
    gate.progress_started()
    q: WorkQueue[str] = WorkQueue(name)
    q.gate = gate
    q.add("new")
    q.shutdown()
    assert await asyncio.wait_for(q.get(), 1) == "new"


async def test_items_that_waited_max_age_start_on_every_idle_worker(name: str) -> None:
    """A rollout that never stops moving: held items start once they have waited
    `max_age`, all at once on the idle workers, not one per `max_wait`."""
    gate = PriorityGate(hold=30.0, max_wait=30.0, max_age=0.2)
    q: WorkQueue[str] = WorkQueue(name)
    q.gate = gate
    gate.started()  # a held item started just now: no floor for the next 30 s
    gate.progress_started()  # never finishes
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    for i in range(3):
        q.add(f"new-{i}")
    await asyncio.sleep(0.05)
    assert not any(g.done() for g in getters)  # held: younger than max_age
    got = await asyncio.wait_for(asyncio.gather(*getters), 2)
    assert sorted(got) == ["new-0", "new-1", "new-2"]


# -- with a controller ----------------------------------------------------------------------

Hop = Callable[[int, Callable[[Request], None]], Result]
"""The nth reconcile of `rolling`, given the controller's `enqueue`."""


async def reconciled(name: str, gate: PriorityGate, hop: Hop, count: int) -> list[str]:
    """The first `count` requests a four-worker controller behind `gate` reconciles, in
    order: `rolling` first, then whatever its hops queue."""
    order: list[str] = []
    hops = 0
    ctrl: Controller

    async def reconcile(req: Request) -> Result:
        nonlocal hops
        order.append(req.name)
        if req.name != "rolling":
            return Result()
        hops += 1
        return hop(hops, ctrl.enqueue)

    ctrl = Controller(name, reconcile, max_concurrent_reconciles=4)
    ctrl.queue.gate = gate
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("rolling", "ns"))
        await until(lambda: len(order) >= count)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return order


def new_objects(enqueue: Callable[[Request], None], n: int) -> None:
    for i in range(n):
        enqueue(Request(f"new-{i}", "ns"))


async def test_new_objects_wait_while_a_rollout_moves_and_start_once_it_rests() -> None:
    """`rolling` moves for three hops (each queues the next at once, as the watch event of
    its own write would) and rests on the fourth; five new objects created during its
    second hop start only after its last, on idle workers, and all of them do."""

    def hop(n: int, enqueue: Callable[[Request], None]) -> Result:
        if n == 2:
            new_objects(enqueue, 5)
        if n < 4:
            enqueue(Request("rolling", "ns"))
        return Result(in_progress=n < 4)

    order = await reconciled("gated", PriorityGate(hold=0.5, max_wait=30.0), hop, 9)
    assert order == ["rolling"] * 4 + [f"new-{i}" for i in range(5)], order


async def test_new_objects_wait_through_a_short_pause_and_start_after_the_next_step() -> None:
    """`rolling` moves, then waits out a short pause (its next step due in 0.3 s, no
    reconcile in between), then rests: objects created during the pause start after
    that step, not in the pause."""

    def hop(n: int, enqueue: Callable[[Request], None]) -> Result:
        if n > 1:
            return Result()
        new_objects(enqueue, 3)
        return Result(in_progress=True, requeue_after=0.3)

    gate = PriorityGate(hold=0.05, max_wait=30.0, lookahead=5.0)
    order = await reconciled("paused", gate, hop, 5)
    assert order[:2] == ["rolling", "rolling"], order
    assert sorted(order[2:]) == [f"new-{i}" for i in range(3)], order
