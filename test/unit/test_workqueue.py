"""The work queue's invariants, its rate limiters and its metrics, one behaviour per test."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Hashable

import pytest

from okra_runtime.metrics import REGISTRY
from okra_runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)
from support import FakeClock


@pytest.fixture
def name() -> str:
    """A queue name of its own, so metric samples do not mix between tests."""
    return f"wq-{uuid.uuid4().hex[:8]}"


def sample(metric: str, name: str) -> float | None:
    return REGISTRY.get_sample_value(metric, {"controller": name, "name": name})


async def assert_nothing_to_get(q: WorkQueue[str]) -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(q.get(), 0.01)


async def get_soon(q: WorkQueue[str]) -> str:
    return await asyncio.wait_for(q.get(), 5)


# -- queue invariants -------------------------------------------------------------------------


async def test_items_come_out_in_the_order_they_were_added() -> None:
    q: WorkQueue[str] = WorkQueue("fifo", metrics=False)
    for item in "abc":
        q.add(item)
    assert [await q.get() for _ in range(3)] == ["a", "b", "c"]


async def test_adds_of_a_waiting_item_collapse_into_one() -> None:
    q: WorkQueue[str] = WorkQueue("dup", metrics=False)
    q.add("a")
    q.add("b")
    q.add("a")
    assert len(q) == 2
    assert await q.get() == "a"
    assert await q.get() == "b"
    await assert_nothing_to_get(q)


async def test_an_item_is_not_handed_out_again_while_it_is_processing() -> None:
    q: WorkQueue[str] = WorkQueue("processing", metrics=False)
    q.add("a")
    assert await q.get() == "a"
    q.add("a")
    assert len(q) == 0  # dirty, but waits for done()
    await assert_nothing_to_get(q)


async def test_adds_during_processing_requeue_the_item_once_on_done() -> None:
    q: WorkQueue[str] = WorkQueue("dirty", metrics=False)
    q.add("a")
    assert await q.get() == "a"
    q.add("a")
    q.add("a")
    q.done("a")
    assert len(q) == 1
    assert await q.get() == "a"
    q.done("a")
    await assert_nothing_to_get(q)


async def test_done_without_a_new_add_does_not_requeue() -> None:
    q: WorkQueue[str] = WorkQueue("clean", metrics=False)
    q.add("a")
    q.done(await q.get())
    assert len(q) == 0


async def test_done_of_an_item_that_is_not_processing_is_ignored() -> None:
    q: WorkQueue[str] = WorkQueue("stray-done", metrics=False)
    q.add("a")
    q.done("a")  # waiting, not processing: must not queue a second copy
    q.done("b")
    assert len(q) == 1
    assert await q.get() == "a"
    await assert_nothing_to_get(q)


async def test_a_waiting_get_is_woken_by_add() -> None:
    q: WorkQueue[str] = WorkQueue("wake", metrics=False)
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("a")
    assert await asyncio.wait_for(getter, 5) == "a"


async def test_a_cancelled_getter_passes_its_wake_up_on() -> None:
    q: WorkQueue[str] = WorkQueue("cancel", metrics=False)
    first = asyncio.create_task(q.get())
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes `first` ...
    first.cancel()  # ... which is cancelled before it runs
    assert await asyncio.wait_for(second, 5) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_len_counts_only_items_waiting_to_be_handed_out() -> None:
    q: WorkQueue[str] = WorkQueue("len", metrics=False)
    q.add("a")
    q.add("b")
    q.add_after("c", 10)
    assert len(q) == 2
    await q.get()
    assert len(q) == 1
    q.shutdown()


# -- shutting down ----------------------------------------------------------------------------


async def test_shutdown_wakes_waiting_getters_with_shut_down() -> None:
    q: WorkQueue[str] = WorkQueue("shutdown", metrics=False)
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shutdown()
    assert q.shutting_down
    for getter in getters:
        with pytest.raises(ShutDown):
            await asyncio.wait_for(getter, 5)


async def test_after_shutdown_adds_are_ignored_and_queued_items_still_come_out() -> None:
    q: WorkQueue[str] = WorkQueue("after-shutdown", metrics=False)
    q.add("a")
    q.shutdown()
    q.add("b")
    q.add_after("c", 0)
    q.add_rate_limited("d")
    assert len(q) == 1
    assert await q.get() == "a"
    with pytest.raises(ShutDown):
        await q.get()


async def test_an_add_during_processing_before_shutdown_is_still_handed_out() -> None:
    q: WorkQueue[str] = WorkQueue("dirty-shutdown", metrics=False)
    q.add("a")
    await q.get()
    q.add("a")
    q.shutdown()
    q.done("a")
    assert await q.get() == "a"


async def test_shutdown_drops_delayed_items() -> None:
    q: WorkQueue[str] = WorkQueue("drop-delayed", metrics=False)
    q.add_after("a", 0.005)
    q.shutdown()
    await asyncio.sleep(0.02)
    assert len(q) == 0
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_with_drain_waits_until_processing_items_are_done() -> None:
    q: WorkQueue[str] = WorkQueue("drain", metrics=False)
    q.add("a")
    q.add("b")
    a, b = await q.get(), await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await asyncio.sleep(0.01)
    assert q.shutting_down
    q.add("c")  # ignored: already shutting down
    q.done(a)
    await asyncio.sleep(0.01)
    assert not drain.done()
    q.done(b)
    await asyncio.wait_for(drain, 5)
    with pytest.raises(ShutDown):
        await q.get()


async def test_shutdown_with_drain_returns_at_once_when_nothing_is_processing() -> None:
    q: WorkQueue[str] = WorkQueue("drain-idle", metrics=False)
    await asyncio.wait_for(q.shutdown_with_drain(), 5)
    assert q.shutting_down


async def test_shutdown_ends_a_drain_early() -> None:
    q: WorkQueue[str] = WorkQueue("drain-abort", metrics=False)
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shutdown_with_drain())
    await asyncio.sleep(0.01)
    assert not drain.done()
    q.shutdown()
    await asyncio.wait_for(drain, 5)


# -- delayed adds -----------------------------------------------------------------------------


async def test_add_after_hands_items_out_in_ready_time_order() -> None:
    q: WorkQueue[str] = WorkQueue("after-order", metrics=False)
    q.add_after("late", 0.03)
    q.add_after("early", 0.01)
    q.add_after("middle", 0.02)
    assert len(q) == 0
    assert [await get_soon(q) for _ in range(3)] == ["early", "middle", "late"]


async def test_add_after_with_no_delay_adds_at_once() -> None:
    q: WorkQueue[str] = WorkQueue("after-now", metrics=False)
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert len(q) == 2


async def test_a_new_earlier_item_is_not_held_up_by_a_later_one() -> None:
    q: WorkQueue[str] = WorkQueue("after-rearm", metrics=False)
    q.add_after("slow", 60)
    q.add_after("fast", 0.005)
    assert await get_soon(q) == "fast"
    q.shutdown()


async def test_an_earlier_add_after_of_the_same_item_wins() -> None:
    q: WorkQueue[str] = WorkQueue("after-earlier", metrics=False)
    q.add_after("a", 60)
    q.add_after("a", 0.005)
    assert await get_soon(q) == "a"
    q.shutdown()


async def test_a_later_add_after_of_the_same_item_does_not_postpone_it() -> None:
    q: WorkQueue[str] = WorkQueue("after-later", metrics=False)
    q.add_after("a", 0.005)
    q.add_after("a", 60)
    assert await get_soon(q) == "a"
    q.shutdown()


@pytest.mark.parametrize("delays", [(0.01, 0.03), (0.03, 0.01)])
async def test_delayed_adds_of_the_same_item_collapse_into_one(delays: tuple[float, float]) -> None:
    q: WorkQueue[str] = WorkQueue("after-collapse", metrics=False)
    for delay in delays:
        q.add_after("a", delay)
    q.done(await get_soon(q))
    await asyncio.sleep(0.06)
    assert len(q) == 0


async def test_waiting_for_a_delayed_item_does_not_spin() -> None:
    calls = 0

    def counting_clock() -> float:
        nonlocal calls
        calls += 1
        return asyncio.get_running_loop().time()

    q: WorkQueue[str] = WorkQueue("after-idle", metrics=False, clock=counting_clock)
    q.add_after("a", 0.05)
    assert await get_soon(q) == "a"
    assert calls < 10


# -- rate limiters ----------------------------------------------------------------------------


def test_exponential_limiter_doubles_per_failure_up_to_the_cap() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 0.04)
    assert [rl.when("a") for _ in range(6)] == [0.005, 0.01, 0.02, 0.04, 0.04, 0.04]
    assert rl.num_requeues("a") == 6
    assert rl.when("b") == 0.005  # per item
    assert rl.num_requeues("b") == 1


def test_exponential_limiter_forget_starts_over() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 10)
    rl.when("a")
    rl.when("a")
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005


def test_exponential_limiter_survives_huge_failure_counts() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000)
    delays = [rl.when("a") for _ in range(2000)]
    assert delays[-1] == 1000


def test_bucket_limiter_allows_the_burst_then_spaces_by_qps() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=10, burst=3, clock=clock)
    assert [rl.when("x") for _ in range(3)] == [0, 0, 0]
    assert rl.when("y") == pytest.approx(0.1)
    assert rl.when("z") == pytest.approx(0.2)
    clock.now += 0.2  # pays back the two reserved tokens
    assert rl.when("x") == pytest.approx(0.1)
    assert rl.num_requeues("x") == 0


def test_bucket_limiter_refills_no_further_than_the_burst() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(qps=10, burst=2, clock=clock)
    clock.now += 3600
    assert [rl.when("x") for _ in range(2)] == [0, 0]
    assert rl.when("x") == pytest.approx(0.1)


def test_max_of_limiter_takes_the_longest_wait_and_forgets_everywhere() -> None:
    clock = FakeClock()
    per_item: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(1, 100)
    rl = MaxOfRateLimiter[str](per_item, BucketRateLimiter(qps=1, burst=1, clock=clock))
    assert rl.when("a") == 1  # exponential 1 > bucket 0
    assert rl.when("b") == 1  # exponential 1 = bucket 1
    assert rl.when("c") == 2  # bucket 2 > exponential 1
    assert rl.when("a") == 3  # bucket 3 > exponential 2
    assert rl.num_requeues("a") == 2
    rl.forget("a")
    assert per_item.num_requeues("a") == 0


def test_default_controller_rate_limiter_is_per_item_backoff_and_an_overall_bucket() -> None:
    rl = default_controller_rate_limiter()
    assert [rl.when("a") for _ in range(3)] == [0.005, 0.01, 0.02]
    for i in range(97):
        rl.when(i)
    assert rl.when("b") == pytest.approx(0.1, abs=0.01)  # 101st token: 10 qps after 100 burst


# -- rate-limited adds ------------------------------------------------------------------------


async def test_add_rate_limited_waits_the_limiters_delay_and_forget_resets_it() -> None:
    q: WorkQueue[str] = WorkQueue(
        "rate-limited", ItemExponentialFailureRateLimiter(0.001, 0.002), metrics=False
    )
    q.add_rate_limited("a")
    assert len(q) == 0
    assert q.num_requeues("a") == 1
    q.done(await get_soon(q))
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 2
    q.forget("a")
    assert q.num_requeues("a") == 0
    q.shutdown()


async def test_a_queue_without_a_limiter_uses_the_controller_default() -> None:
    q: WorkQueue[str] = WorkQueue("default-limiter", metrics=False)
    q.add_rate_limited("a")
    assert q.num_requeues("a") == 1
    assert await get_soon(q) == "a"


# -- metrics ----------------------------------------------------------------------------------


async def test_adds_depth_and_queue_duration(name: str) -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(name, clock=clock)
    q.add("a")
    q.add("a")
    q.add("b")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2
    clock.now += 0.5
    await q.get()
    assert sample("workqueue_depth", name) == 1
    assert sample("workqueue_queue_duration_seconds_count", name) == 1
    assert sample("workqueue_queue_duration_seconds_sum", name) == pytest.approx(0.5)


async def test_an_add_during_processing_counts_as_an_add_and_as_depth(name: str) -> None:
    q: WorkQueue[str] = WorkQueue(name)
    q.add("a")
    await q.get()
    q.add("a")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 1


async def test_work_duration_is_observed_on_done(name: str) -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(name, clock=clock)
    q.add("a")
    item = await q.get()
    clock.now += 2
    q.done(item)
    assert sample("workqueue_work_duration_seconds_count", name) == 1
    assert sample("workqueue_work_duration_seconds_sum", name) == pytest.approx(2)


async def test_unfinished_work_and_longest_running_are_updated_on_demand(name: str) -> None:
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(name, clock=clock)
    q.add("a")
    q.add("b")
    await q.get()
    clock.now += 1
    await q.get()
    clock.now += 2
    q.update_unfinished_work()
    assert sample("workqueue_unfinished_work_seconds", name) == pytest.approx(5)
    assert sample("workqueue_longest_running_processor_seconds", name) == pytest.approx(3)
    q.done("a")
    q.done("b")
    q.update_unfinished_work()
    assert sample("workqueue_unfinished_work_seconds", name) == 0
    assert sample("workqueue_longest_running_processor_seconds", name) == 0


async def test_retries_count_every_delayed_and_rate_limited_add(name: str) -> None:
    q: WorkQueue[str] = WorkQueue(name, ItemExponentialFailureRateLimiter(0.001, 0.001))
    q.add_rate_limited("a")
    q.add_after("b", 0)
    q.add_after("c", 0.001)
    assert sample("workqueue_retries_total", name) == 3
    q.shutdown()
    q.add_rate_limited("a")
    assert sample("workqueue_retries_total", name) == 3


async def test_a_queue_without_metrics_exports_nothing(name: str) -> None:
    q: WorkQueue[str] = WorkQueue(name, metrics=False)
    q.add("a")
    q.done(await q.get())
    q.update_unfinished_work()
    assert sample("workqueue_adds_total", name) is None
    assert sample("workqueue_depth", name) is None


def test_any_hashable_item_type_is_accepted() -> None:
    q: WorkQueue[Hashable] = WorkQueue("hashable", metrics=False)
    q.add(("ns", "name"))
    q.add(("ns", "name"))
    assert len(q) == 1


async def test_items_first_holds_for_come_out_before_the_others_in_their_order(
    name: str,
) -> None:
    urgent = {"u1", "u2"}
    q: WorkQueue[str] = WorkQueue(name, first=urgent.__contains__)
    for item in ("a", "u1", "b", "u2", "c"):
        q.add(item)
    assert len(q) == 5
    assert [await q.get() for _ in range(5)] == ["u1", "u2", "a", "b", "c"]


async def test_the_lane_is_chosen_when_an_item_is_queued_again_after_processing(
    name: str,
) -> None:
    urgent: set[str] = set()
    q: WorkQueue[str] = WorkQueue(name, first=urgent.__contains__)
    q.add("x")
    assert await q.get() == "x"
    q.add("x")  # dirty while processing: queued again on done()
    q.add("a")
    urgent.add("x")  # by then it holds for x
    q.done("x")
    assert [await q.get(), await q.get()] == ["x", "a"]


async def test_without_first_the_order_is_plain_fifo(name: str) -> None:
    q: WorkQueue[str] = WorkQueue(name)
    for item in ("c", "a", "b"):
        q.add(item)
    assert [await q.get() for _ in range(3)] == ["c", "a", "b"]


async def test_the_other_lane_gets_one_item_after_first_burst_first_ones(name: str) -> None:
    urgent = {f"u{i}" for i in range(10)}
    q: WorkQueue[str] = WorkQueue(name, first=urgent.__contains__, first_burst=3)
    q.add("new")
    for i in range(10):
        q.add(f"u{i}")
    served = []
    for _ in range(8):
        item = await q.get()
        served.append(item)
        q.done(item)
        if item in urgent:
            q.add(item)  # a busy object that keeps coming back ahead of the others
    assert served[:4] == ["u0", "u1", "u2", "new"]
    assert "new" not in served[4:]


def test_first_burst_below_one_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="first_burst"):
        WorkQueue(name, first_burst=0)
