"""The controller serves Requests whose last reconcile succeeded before new ones and failing
ones: a flood of new or broken objects does not push the next step of a working one to the
end of the line. Plain asyncio, one worker, no server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from okra_runtime.controller import Controller
from okra_runtime.handler import EnqueueForObject
from okra_runtime.predicates import Predicate
from okra_runtime.reconcile import ReportedError, Request
from support import until


class Worker:
    """The reconcile of a one-worker controller: records the order of the names it
    reconciles, raises ReportedError for the names in `failing`, and holds the only worker
    on the name "blocker" until `release` is set, while the test queues the others."""

    def __init__(self, failing: Callable[[str], bool] = lambda name: False) -> None:
        self.order: list[str] = []
        self.failing = failing
        self.blocking = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, req: Request) -> None:
        self.order.append(req.name)
        if req.name == "blocker":
            self.blocking.set()
            await self.release.wait()
        if self.failing(req.name):
            raise ReportedError("said in status")

    async def block(self, ctrl: Controller) -> None:
        """Queue the blocker and wait until it holds the worker; forget the order so far."""
        ctrl.enqueue(Request("blocker", "ns"))
        await self.blocking.wait()
        self.order.clear()


async def test_a_working_object_is_served_before_a_flood_of_new_and_failing_ones() -> None:
    w = Worker(failing=lambda name: name.startswith("broken"))
    ctrl = Controller("priority", w, reported_base_delay=0.001, reported_max_delay=0.001)
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("good", "ns"))
        ctrl.enqueue(Request("broken", "ns"))
        # good succeeded once; broken failed and was retried
        await until(lambda: w.order.count("broken") >= 2)
        await w.block(ctrl)
        for i in range(20):
            ctrl.enqueue(Request(f"new-{i}", "ns"))
        ctrl.enqueue(Request("broken", "ns"))
        ctrl.enqueue(Request("good", "ns"))  # its next step, queued last
        w.release.set()
        await until(lambda: len(w.order) >= 22)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    order = w.order
    assert order[0] == "good", order
    # the others keep their order; broken's own retry timer may have queued it among them
    others = [n for n in order[1:] if n != "broken"]
    assert others[:20] == [f"new-{i}" for i in range(20)], order
    assert "broken" in order[1:], order  # served too, never ahead of the working one


async def test_a_failure_takes_an_object_out_of_the_first_lane() -> None:
    fail: set[str] = set()
    w = Worker(failing=fail.__contains__)
    ctrl = Controller("priority-fail", w, reported_base_delay=30.0)
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("flaky", "ns"))  # succeeds: first lane
        await until(lambda: "flaky" in w.order)
        fail.add("flaky")
        ctrl.enqueue(Request("flaky", "ns"))  # fails now: out of the first lane
        await until(lambda: w.order.count("flaky") >= 2)
        await w.block(ctrl)
        ctrl.enqueue(Request("new", "ns"))
        ctrl.enqueue(Request("flaky", "ns"))
        w.release.set()
        await until(lambda: len(w.order) >= 2)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert w.order[:2] == ["new", "flaky"], w.order


async def test_an_object_another_controller_made_is_served_before_new_ones() -> None:
    w = Worker()
    ctrl = Controller("priority-made", w)
    task = asyncio.create_task(ctrl.run())
    try:
        await w.block(ctrl)
        for i in range(10):
            ctrl.enqueue(Request(f"new-{i}", "ns"))
        ctrl.made(Request("run-of-a-rollout", "ns"))
        ctrl.enqueue(Request("run-of-a-rollout", "ns"))
        w.release.set()
        await until(lambda: len(w.order) >= 11)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert w.order[0] == "run-of-a-rollout", w.order
    assert w.order[1:] == [f"new-{i}" for i in range(10)], w.order


def test_only_a_new_object_with_a_controlling_owner_is_told_as_made() -> None:
    made: list[Request] = []
    queued: list[Request] = []
    handler = EnqueueForObject(queued.append, (), made=made.append)

    def obj(name: str, refs: list[dict[str, object]]) -> dict[str, object]:
        return {"metadata": {"name": name, "namespace": "ns", "ownerReferences": refs}}

    handler.on_add(obj("run", [{"kind": "Cell", "name": "web", "controller": True}]))
    handler.on_add(obj("user-made", []))
    handler.on_add(obj("garbage-collected-only", [{"kind": "Cell", "name": "web"}]))
    handler.on_update(obj("run", []), obj("run", [{"kind": "Cell", "controller": True}]))
    assert made == [Request("run", "ns")]
    assert [r.name for r in queued] == ["run", "user-made", "garbage-collected-only", "run"]


def test_a_made_object_the_predicates_refuse_is_neither_queued_nor_told() -> None:
    class NoCreates(Predicate):
        def create(self, obj: dict[str, object]) -> bool:
            return False

    made: list[Request] = []
    queued: list[Request] = []
    handler = EnqueueForObject(queued.append, (NoCreates(),), made=made.append)
    ref = {"kind": "Cell", "name": "web", "controller": True}
    handler.on_add({"metadata": {"name": "run", "namespace": "ns", "ownerReferences": [ref]}})
    assert made == []
    assert queued == []
