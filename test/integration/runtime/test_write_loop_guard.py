"""The write-loop guard (`okra_runtime.hotloop`) in a real manager on the real API server.

A deliberately broken controller stamps the time into a ConfigMap on every reconcile, so its
own write comes back through the watch and it writes again: the loop the guard exists to
say. Beside it, a well-behaved one stamps another ConfigMap once a second. The guard says
the loop once (the log line and the metric, with the object's kind and name), and never the
periodic writer.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from okra_runtime import GVK, Client, Manager, ManagerOptions, Request, Result
from okra_runtime.hotloop import LOOP_EVENT
from okra_runtime.metrics import REGISTRY
from support import LogCapture, eventually

CM = GVK("", "v1", "ConfigMap")
LABEL = "loop.example.dev/kind"


def loops_counted() -> float:
    labels = {"group": "", "version": "v1", "kind": "ConfigMap"}
    return REGISTRY.get_sample_value("okra_runtime_hot_loop_objects_total", labels) or 0.0


@pytest.mark.write_loops_expected("the guard's own test loops on purpose")
async def test_a_controller_that_never_settles_is_said_once_and_a_periodic_one_never(
    rt_client: Client, namespace: str, logs: LogCapture
) -> None:
    for name, kind in (("tight", "tight"), ("periodic", "periodic")):
        await rt_client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": namespace, "labels": {LABEL: kind}},
            }
        )
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    cache = mgr.informer_for(CM).store
    writes = {"tight": 0, "periodic": 0}

    async def reconcile(req: Request) -> Result | None:
        obj = cache.get(req.name, req.namespace)
        if obj is None:
            return None
        kind = (obj["metadata"].get("labels") or {}).get(LABEL)
        stamp = (obj["metadata"].get("annotations") or {}).get("stamp")
        if kind == "periodic" and stamp and time.time() - float(stamp) < 1.0:
            return Result(requeue_after=1.0 - (time.time() - float(stamp)))
        if kind not in writes:
            return None
        # the defect, on purpose for "tight": a value that differs on every pass
        stamped = {"metadata": {"annotations": {"stamp": repr(time.time())}}}
        await rt_client.patch(CM, req.name, stamped, namespace=req.namespace)
        writes[kind] += 1
        return Result(requeue_after=1.0)

    before = loops_counted()
    mgr.builder(f"loop-{namespace}").for_(CM).complete(reconcile)
    run = asyncio.create_task(mgr.start())
    try:

        async def found() -> bool:
            return bool(mgr.hot_loops.found)

        assert await eventually(found, within=60), writes
        at_first = writes["tight"]

        async def looped_on() -> bool:  # twice as many writes since: still said only once
            return writes["tight"] >= 2 * at_first

        assert await eventually(looped_on, within=60), writes
    finally:
        mgr.stop()
        await run
    assert mgr.hot_loops.found == [("v1", "ConfigMap", namespace, "tight")]
    assert loops_counted() == before + 1
    said = [r for r in logs.records() if r.get("event") == LOOP_EVENT]
    assert [(r["kind"], r["namespace"], r["name"]) for r in said] == [
        ("ConfigMap", namespace, "tight")
    ]
    assert said[0]["writes"] > 80  # more than 8 a second over the 10 s window
    assert writes["periodic"] >= 3  # it ran all along, about once a second
