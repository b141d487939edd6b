"""Controllers on the real API server: a poisoned object never stops the
others, terminal errors are not retried, requeue_after comes back, metrics
carry controller-runtime's names, and repeated Events are aggregated."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator

import aiohttp
import pytest

from okra_runtime import GVK, Client, Manager, ManagerOptions, Request, Result, TerminalError
from okra_runtime.informer import InformerOptions
from okra_runtime.metrics import REGISTRY
from support import eventually

CM = GVK("", "v1", "ConfigMap")
EVENT = GVK("events.k8s.io", "v1", "Event")


def cm(name: str, ns: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}}


@pytest.fixture
async def manager(rt_client: Client, namespace: str) -> AsyncIterator[Manager]:
    mgr = Manager(
        rt_client,
        ManagerOptions(
            namespace=namespace,
            metrics_address="127.0.0.1:0",
            probe_address="127.0.0.1:0",
            informer=InformerOptions(),
        ),
    )
    yield mgr
    mgr.stop()


def sample(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_poisoned_object_does_not_stop_the_others(
    manager: Manager, rt_client: Client, namespace: str
) -> None:
    calls: collections.Counter[str] = collections.Counter()
    ctrl_name = f"poison-{namespace}"

    async def reconcile(req: Request) -> Result | None:
        calls[req.name] += 1
        if req.name == "poison":
            raise RuntimeError("this object always breaks the reconciler")
        if req.name == "hopeless":
            raise TerminalError("spec can never work")
        if req.name == "periodic" and calls[req.name] < 3:
            return Result(requeue_after=0.05)
        return None

    manager.builder(ctrl_name).with_options(max_concurrent_reconciles=3).for_(CM).complete(
        reconcile
    )
    run = asyncio.create_task(manager.start())
    for name in ["poison", "hopeless", "periodic", *[f"ok-{i}" for i in range(10)]]:
        await rt_client.create(cm(name, namespace))

    async def settled() -> bool:
        return (
            all(calls[f"ok-{i}"] >= 1 for i in range(10))
            and calls["periodic"] >= 3
            and calls["poison"] >= 3
        )

    assert await eventually(settled, within=30), dict(calls)
    assert calls["hopeless"] == 1, "a TerminalError must not be retried"
    assert not run.done(), "the manager must keep running"
    await rt_client.create(cm("late", namespace))  # still reconciling new objects
    assert await eventually(lambda: _true(calls["late"] >= 1), within=10)

    assert sample("controller_runtime_reconcile_errors_total", controller=ctrl_name) >= 4
    assert sample("controller_runtime_terminal_reconcile_errors_total", controller=ctrl_name) == 1
    assert (
        sample("controller_runtime_reconcile_total", controller=ctrl_name, result="requeue_after")
        == 2
    )
    assert (
        sample("controller_runtime_reconcile_total", controller=ctrl_name, result="success") >= 11
    )
    assert sample("workqueue_retries_total", controller=ctrl_name, name=ctrl_name) >= 2

    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{manager.metrics_port}/metrics") as r:
            text = await r.text()
        async with http.get(f"http://127.0.0.1:{manager.probe_port}/readyz") as r:
            assert r.status == 200, await r.text()
        async with http.get(f"http://127.0.0.1:{manager.probe_port}/healthz") as r:
            assert r.status == 200
    for metric in (
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_time_seconds",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_work_duration_seconds",
    ):
        assert (
            f'{metric}{{controller="{ctrl_name}"' in text
            or f'{metric}_bucket{{controller="{ctrl_name}"' in text
        )
    manager.stop()
    await asyncio.wait_for(run, 30)


async def test_events_are_aggregated(manager: Manager, rt_client: Client, namespace: str) -> None:
    obj = await rt_client.create(cm("noisy", namespace))
    rec = manager.event_recorder("test-controller")
    rec.series_interval = 0.0  # write every repeat's count, to see the series move
    for _ in range(5):
        rec.event(obj, "Warning", "Broken", "the same problem again")
        await rec.flush()
    rec.event(obj, "Normal", "Fixed", "a different event")
    await rec.flush()
    events = (await rt_client.list(EVENT, namespace)).items
    mine = [e for e in events if e["regarding"].get("name") == "noisy"]
    by_reason = {e["reason"]: e for e in mine}
    assert len(mine) == 2, [e["reason"] for e in mine]
    assert by_reason["Broken"]["series"]["count"] == 5
    assert by_reason["Broken"]["type"] == "Warning"
    assert by_reason["Broken"]["reportingController"] == "test-controller"
    assert by_reason["Broken"]["regarding"]["uid"] == obj["metadata"]["uid"]
    assert "series" not in by_reason["Fixed"]


async def test_event_flood_is_throttled(
    manager: Manager, rt_client: Client, namespace: str
) -> None:
    obj = await rt_client.create(cm("flood", namespace))
    rec = manager.event_recorder("flood-controller")
    for _ in range(200):
        rec.event(obj, "Warning", "Broken", "again")
    await rec.flush()
    events = [
        e
        for e in (await rt_client.list(EVENT, namespace)).items
        if e["regarding"].get("name") == "flood"
    ]
    assert len(events) == 1  # 200 repeats, one Event (the series is written at most every 10s)


async def test_an_event_about_a_long_name_with_a_long_unicode_note_is_recorded(
    manager: Manager, rt_client: Client, namespace: str
) -> None:
    """The API server counts an Event's note in bytes (at most 1024) and its name is
    at most 253 characters: a 253-character object name and a note of 600 three-byte
    characters are still recorded, cut to fit."""
    name = ("a" * 235 + "-" + "b" * 17)[:253]
    obj = await rt_client.create(cm(name, namespace))
    rec = manager.event_recorder("long-controller")
    rec.event(obj, "Warning", "Broken", "日" * 600)
    await rec.flush()
    events = [
        e
        for e in (await rt_client.list(EVENT, namespace)).items
        if e["regarding"].get("name") == name
    ]
    assert len(events) == 1, events
    note = events[0]["note"]
    assert note.startswith("日" * 300), note
    assert note.endswith("..."), note
    assert len(note.encode()) <= 1024
    assert len(events[0]["metadata"]["name"]) <= 253


async def _true(value: bool) -> bool:
    return value


async def test_a_closer_is_awaited_when_the_manager_stops(manager: Manager) -> None:
    closed: list[str] = []

    async def close() -> None:
        await asyncio.sleep(0)  # a real close awaits something
        closed.append("cache")

    manager.add_closer("cache", close)
    run = asyncio.create_task(manager.start())
    await asyncio.wait_for(manager.leader.wait(), 30)
    assert closed == []  # held open while the manager runs
    manager.stop()
    await asyncio.wait_for(run, 30)
    assert closed == ["cache"]


async def test_a_scrape_shows_the_work_in_progress(
    manager: Manager, rt_client: Client, namespace: str
) -> None:
    """`workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds`
    are computed when /metrics is read: a reconcile that has run for a while shows in them."""
    ctrl_name = f"slow-{namespace}"
    started, release = asyncio.Event(), asyncio.Event()

    async def reconcile(req: Request) -> None:
        started.set()
        await release.wait()

    manager.builder(ctrl_name).for_(CM).complete(reconcile)
    run = asyncio.create_task(manager.start())
    try:
        await rt_client.create(cm("slow", namespace))
        await asyncio.wait_for(started.wait(), 30)
        await asyncio.sleep(0.2)  # the reconcile has run for at least this long
        url = f"http://127.0.0.1:{manager.metrics_port}/metrics"
        async with aiohttp.ClientSession() as http, http.get(url) as r:
            assert r.status == 200
        labels = {"controller": ctrl_name, "name": ctrl_name}
        longest = REGISTRY.get_sample_value("workqueue_longest_running_processor_seconds", labels)
        unfinished = REGISTRY.get_sample_value("workqueue_unfinished_work_seconds", labels)
        assert (longest or 0.0) >= 0.2, longest
        assert (unfinished or 0.0) >= 0.2, unfinished
    finally:
        release.set()
        manager.stop()
        await asyncio.wait_for(run, 30)


async def test_a_stop_waits_one_grace_for_a_reconcile_that_never_ends(
    rt_client: Client, namespace: str
) -> None:
    """A reconcile still running at `graceful_shutdown_timeout` (one retrying an unreachable
    AWS, say) is cancelled then: the whole stop takes one grace, not one for the controller's
    drain and another for its task."""
    grace = 3.0
    mgr = Manager(
        rt_client,
        ManagerOptions(
            namespace=namespace,
            metrics_address=None,
            probe_address=None,
            graceful_shutdown_timeout=grace,
        ),
    )
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def reconcile(req: Request) -> Result | None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return None

    mgr.builder(f"stuck-{namespace}").for_(CM).complete(reconcile)
    run = asyncio.create_task(mgr.start())
    await rt_client.create(cm("stuck", namespace))
    await asyncio.wait_for(started.wait(), 30)
    t0 = asyncio.get_running_loop().time()
    mgr.stop()
    await asyncio.wait_for(run, 4 * grace)
    took = asyncio.get_running_loop().time() - t0
    assert cancelled.is_set()
    # two graces (6 s) before; the margin is for a busy machine's scheduling after the deadline
    assert grace <= took < 1.5 * grace, took
