"""The write-loop guard (`okra_runtime.hotloop`), on a clock the test moves: a loop is said
once and counted once; bursts, periodic writers and writes that change nothing are not."""

from __future__ import annotations

from typing import Any

import pytest

from okra_runtime.hotloop import HotLoopGuard, HotLoopOptions
from okra_runtime.metrics import REGISTRY

pytestmark = pytest.mark.write_loops_expected("the guard's own tests make loops on purpose")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def answer(name: str, rv: int, kind: str = "Cell") -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv)},
    }


def counted(kind: str) -> float:
    labels = {"group": "okra.mumo.co", "version": "v1alpha1", "kind": kind}
    return REGISTRY.get_sample_value("okra_runtime_hot_loop_objects_total", labels) or 0.0


def write(
    guard: HotLoopGuard,
    clock: Clock,
    name: str,
    per_second: float,
    seconds: float,
    rv: list[int],
    kind: str = "Cell",
) -> None:
    for _ in range(int(per_second * seconds)):
        rv[0] += 1
        guard.wrote(answer(name, rv[0], kind))
        clock.now += 1 / per_second


def test_an_object_written_50_times_a_second_is_said_once_and_counted_once() -> None:
    clock, rv = Clock(), [0]
    guard = HotLoopGuard(HotLoopOptions(rate=5, window=5), clock)
    before = counted("LoopingA")
    write(guard, clock, "web", 50, 60, rv, "LoopingA")
    assert guard.found == [("okra.mumo.co/v1alpha1", "LoopingA", "ns", "web")]
    assert counted("LoopingA") == before + 1


def test_it_is_said_within_the_window_not_before() -> None:
    clock, rv = Clock(), [0]
    guard = HotLoopGuard(HotLoopOptions(rate=5, window=5), clock)
    write(guard, clock, "web", 50, 3, rv, "LoopingB")
    assert guard.found == []  # 3 s of it: not yet sustained
    write(guard, clock, "web", 50, 3, rv, "LoopingB")
    assert len(guard.found) == 1


def test_bursts_periodic_writers_and_unchanged_answers_are_not_loops() -> None:
    clock, rv = Clock(), [0]
    guard = HotLoopGuard(HotLoopOptions(rate=5, window=5), clock)
    for _ in range(20):  # a burst of 30 writes, then 5 s of quiet: a rollout's hops
        write(guard, clock, "burst", 300, 0.1, rv)
        clock.now += 5
    write(guard, clock, "steady", 4, 120, rv)  # 4 a second, for two minutes: below the rate
    write(guard, clock, "slow", 1, 600, rv)  # a resync every second
    for _ in range(1000):  # an apply the server answers unchanged writes nothing
        guard.wrote(answer("same", 7))
        clock.now += 0.01
    assert guard.found == []


def test_a_loop_that_stopped_is_said_again_when_it_starts_again() -> None:
    clock, rv = Clock(), [0]
    guard = HotLoopGuard(HotLoopOptions(rate=5, window=5), clock)
    write(guard, clock, "web", 50, 10, rv, "LoopingC")
    clock.now += 30
    guard.wrote(answer("other", 1))  # any write sweeps the quiet ones
    write(guard, clock, "web", 50, 10, rv, "LoopingC")
    assert [k[3] for k in guard.found] == ["web", "web"]


def test_objects_at_rest_are_forgotten() -> None:
    clock = Clock()
    guard = HotLoopGuard(HotLoopOptions(rate=5, window=5), clock)
    for i in range(1000):
        guard.wrote(answer(f"cell-{i}", i))
    clock.now += 10
    guard.wrote(answer("last", 1))
    assert len(guard._writes) == 1
