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
from support import eventually


async def until(cond: Callable[[], bool]) -> None:
    async def check() -> bool:
        return cond()

    assert await eventually(check, within=10, interval=0.001)


async def test_a_working_object_is_served_before_a_flood_of_new_and_failing_ones() -> None:
    order: list[str] = []
    gate = asyncio.Event()
    release = asyncio.Event()

    async def reconcile(req: Request) -> None:
        order.append(req.name)
        if req.name == "blocker":
            gate.set()
            await release.wait()  # holds the only worker while the others queue up
        if req.name.startswith("broken"):
            raise ReportedError("said in status")

    ctrl = Controller("priority", reconcile, reported_base_delay=0.001, reported_max_delay=0.001)
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("good", "ns"))
        ctrl.enqueue(Request("broken", "ns"))
        # good succeeded once; broken failed and was retried
        await until(lambda: order.count("broken") >= 2)
        ctrl.enqueue(Request("blocker", "ns"))
        await gate.wait()
        order.clear()
        for i in range(20):
            ctrl.enqueue(Request(f"new-{i}", "ns"))
        ctrl.enqueue(Request("broken", "ns"))
        ctrl.enqueue(Request("good", "ns"))  # its next step, queued last
        release.set()
        await until(lambda: len(order) >= 22)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert order[0] == "good", order
    # the others keep their order; broken's own retry timer may have queued it among them
    others = [n for n in order[1:] if n != "broken"]
    assert others[:20] == [f"new-{i}" for i in range(20)], order
    assert "broken" in order[1:], order  # served too, never ahead of the working one


async def test_a_failure_takes_an_object_out_of_the_first_lane() -> None:
    order: list[str] = []
    fail = {"flaky"}
    gate = asyncio.Event()
    release = asyncio.Event()

    async def reconcile(req: Request) -> None:
        order.append(req.name)
        if req.name == "blocker":
            gate.set()
            await release.wait()
        if req.name in fail:
            raise ReportedError("said in status")

    ctrl = Controller("priority-fail", reconcile, reported_base_delay=30.0)
    task = asyncio.create_task(ctrl.run())
    try:
        fail.clear()
        ctrl.enqueue(Request("flaky", "ns"))  # succeeds: first lane
        await until(lambda: "flaky" in order)
        fail.add("flaky")
        ctrl.enqueue(Request("flaky", "ns"))  # fails now: out of the first lane
        await until(lambda: order.count("flaky") >= 2)
        ctrl.enqueue(Request("blocker", "ns"))
        await gate.wait()
        order.clear()
        ctrl.enqueue(Request("new", "ns"))
        ctrl.enqueue(Request("flaky", "ns"))
        release.set()
        await until(lambda: len(order) >= 2)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert order[:2] == ["new", "flaky"], order


async def test_an_object_another_controller_made_is_served_before_new_ones() -> None:
    order: list[str] = []
    gate = asyncio.Event()
    release = asyncio.Event()

    async def reconcile(req: Request) -> None:
        order.append(req.name)
        if req.name == "blocker":
            gate.set()
            await release.wait()

    ctrl = Controller("priority-made", reconcile)
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("blocker", "ns"))
        await gate.wait()
        for i in range(10):
            ctrl.enqueue(Request(f"new-{i}", "ns"))
        ctrl.made(Request("run-of-a-rollout", "ns"))
        ctrl.enqueue(Request("run-of-a-rollout", "ns"))
        release.set()
        await until(lambda: len(order) >= 12)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert order[1] == "run-of-a-rollout", order
    assert order[2:] == [f"new-{i}" for i in range(10)], order


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
