"""Informers recover by themselves: from a watch that goes silent (and /readyz
says so meanwhile), from an API server restart, and from a compacted
resourceVersion (410 Gone). After each, the cache equals a fresh full list."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from okra_runtime import metrics
from okra_runtime.client import Client, ObjectList
from okra_runtime.controller import Controller
from okra_runtime.gvk import GVK
from okra_runtime.informer import Informer, InformerOptions
from okra_runtime.manager import Manager, ManagerOptions
from okra_runtime.reconcile import Request, Result
from okra_testkit.envtest import ControlPlane
from support import eventually
from tcpproxy import StallingProxy

CM = GVK("", "v1", "ConfigMap")
NS = "recovery"


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    # Without the watch cache, a watch from a compacted revision reaches etcd and gets
    # 410 Gone deterministically (the cache could still serve it from memory).
    with ControlPlane(
        name="recovery", apiserver_args=("--watch-cache=false",), controller_manager=False
    ) as cp:
        cp.kubectl("create", "namespace", NS)
        yield cp


@pytest.fixture
async def direct(plane: ControlPlane) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(plane.kubeconfig()) as c:
        yield c


async def client_via(plane: ControlPlane, port: int) -> Client:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(plane.kubeconfig()), client_configuration=cfg)
    cfg.host = f"https://127.0.0.1:{port}"
    return Client(k8s.ApiClient(configuration=cfg))


@pytest.fixture
async def proxy(plane: ControlPlane) -> AsyncIterator[StallingProxy]:
    port = int(plane.server.rsplit(":", 1)[1])
    p = StallingProxy("127.0.0.1", port)
    await p.start()
    yield p
    await p.close()


def cm(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NS},
        "data": {"v": value},
    }


async def converged(inf: Informer, direct: Client) -> bool:
    truth = await direct.list(CM, NS)
    want = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in truth.items}
    have = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in inf.store.list(NS)}
    return want == have


async def churn(direct: Client, tag: str) -> None:
    """Create, update and delete, so that each kind of event must be seen."""
    for i in range(5):
        await direct.apply(cm(f"{tag}-{i}", "1"), field_manager="t", force=True)
    await direct.apply(cm(f"{tag}-0", "2"), field_manager="t", force=True)
    await direct.delete(CM, f"{tag}-1", NS)


async def test_stalled_watch_is_detected_reopened_and_reported(
    plane: ControlPlane, proxy: StallingProxy, direct: Client
) -> None:
    opts = ManagerOptions(
        namespace=NS,
        metrics_address=None,
        probe_address="127.0.0.1:0",
        informer=InformerOptions(inactivity_timeout=1.5, backoff_max=0.5),
    )
    async with await client_via(plane, proxy.port) as via_proxy:
        mgr = Manager(via_proxy, opts)
        inf = mgr.informer_for(CM)
        run = asyncio.create_task(mgr.start())
        await asyncio.wait_for(mgr.serving.wait(), 10)
        async with aiohttp.ClientSession() as http:

            async def readyz() -> tuple[int, str]:
                async with http.get(f"http://127.0.0.1:{mgr.probe_port}/readyz") as r:
                    return r.status, await r.text()

            assert await eventually(lambda: _ready(readyz), within=30)
            stalled_before = _restarts("stalled")
            proxy.stall()
            await direct.create(cm("during-stall", "x"))

            async def reports_stall() -> bool:
                status, body = await readyz()
                return status == 503 and "ConfigMap.v1" in body

            assert await eventually(reports_stall, within=20), "readyz never reported the stall"
            assert "during-stall" not in {o["metadata"]["name"] for o in inf.store.list(NS)}
            proxy.resume()
            assert await eventually(lambda: _ready(readyz), within=30)
            assert await eventually(lambda: converged(inf, direct), within=30)
            assert _restarts("stalled") > stalled_before
        mgr.stop()
        await run


async def test_resumes_after_apiserver_restart(plane: ControlPlane, direct: Client) -> None:
    async with await Client.from_kubeconfig(plane.kubeconfig()) as c:
        inf = Informer(c, CM, InformerOptions(namespace=NS, backoff_max=0.5))
        task = asyncio.create_task(inf.run())
        assert await inf.wait_for_sync(30)
        await churn(direct, "before")
        assert await eventually(lambda: converged(inf, direct), within=30)
        await asyncio.to_thread(plane.restart_apiserver)
        await churn(direct, "after")
        assert await eventually(lambda: converged(inf, direct), within=60)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_relists_after_410_gone(
    plane: ControlPlane, proxy: StallingProxy, direct: Client
) -> None:
    async with await client_via(plane, proxy.port) as via_proxy:
        asked: list[str | None] = []  # the resourceVersion each list asked for
        real_list = via_proxy.list

        async def recording_list(*args: Any, **kwargs: Any) -> ObjectList:
            asked.append(kwargs.get("resource_version"))
            return await real_list(*args, **kwargs)

        via_proxy.list = recording_list  # type: ignore[method-assign]
        inf = Informer(
            via_proxy, CM, InformerOptions(namespace=NS, backoff_max=0.3, inactivity_timeout=1.0)
        )
        task = asyncio.create_task(inf.run())
        assert await inf.wait_for_sync(30)
        # The first list may come from the watch cache (client-go's reflector does the same).
        assert asked == ["0"]
        relists_before = _relists()
        proxy.stall()  # the informer loses its watch and cannot reconnect
        await churn(direct, "gone")
        await compact_etcd(plane.etcd_url)
        proxy.resume()
        assert await eventually(lambda: converged(inf, direct), within=60)
        assert _relists() > relists_before, "the informer never relisted"
        assert _restarts("expired") >= 1
        # After 410 Gone the relist asks for the most recent state, never the cache's.
        assert len(asked) >= 2, asked
        assert set(asked[1:]) == {None}, asked
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def compact_etcd(etcd_url: str) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{etcd_url}/v3/kv/range", json={"key": base64.b64encode(b"/").decode()}
        ) as r:
            revision = int((await r.json())["header"]["revision"])
        async with http.post(
            f"{etcd_url}/v3/kv/compaction", json={"revision": revision, "physical": True}
        ) as r:
            assert r.status == 200, await r.text()


async def _ready(readyz: object) -> bool:
    status, _ = await readyz()  # type: ignore[operator]
    return bool(status == 200)


def _restarts(reason: str) -> float:
    return (
        metrics.REGISTRY.get_sample_value(
            "okra_runtime_watch_restarts_total",
            {"group": "", "version": "v1", "kind": "ConfigMap", "reason": reason},
        )
        or 0.0
    )


def _relists() -> float:
    return (
        metrics.REGISTRY.get_sample_value(
            "okra_runtime_informer_relists_total",
            {"group": "", "version": "v1", "kind": "ConfigMap"},
        )
        or 0.0
    )


async def test_work_resumes_within_seconds_of_an_apiserver_outage(
    plane: ControlPlane, proxy: StallingProxy, direct: Client
) -> None:
    """An informer with the default backoff and a controller polling the API server
    every 0.3 s, both through a 30 s outage (the server unreachable: connections
    refused): once it answers again, the informer sees a new object and the
    controller succeeds within about a second. (With client-go's 30 s backoff cap
    the informer came back 6 s late here, and up to ~25 s late in a manager.)"""
    await direct.apply(cm("poll", "1"), field_manager="t", force=True)
    async with await client_via(plane, proxy.port) as c:
        inf = Informer(c, CM, InformerOptions(namespace=NS))  # default backoff
        ok_at: list[float] = []
        loop = asyncio.get_running_loop()

        async def poll(req: Request) -> Result:
            await c.get(CM, req.name, req.namespace)
            ok_at.append(loop.time())
            return Result(requeue_after=0.3)

        ctrl = Controller("poller", poll)
        tasks = [asyncio.create_task(inf.run()), asyncio.create_task(ctrl.run())]
        try:
            await _through_an_outage(inf, ctrl, proxy, direct, ok_at)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _through_an_outage(
    inf: Informer, ctrl: Controller, proxy: StallingProxy, direct: Client, ok_at: list[float]
) -> None:
    loop = asyncio.get_running_loop()
    assert await inf.wait_for_sync(30)
    ctrl.enqueue(Request("poll", NS))
    assert await eventually(lambda: _true(bool(ok_at)), within=10)
    await proxy.refuse()
    await asyncio.sleep(30)  # the outage: informer and controller fail meanwhile
    await direct.create(cm("after-outage", "x"))
    await proxy.accept()
    back = loop.time()

    def seen() -> bool:
        return "after-outage" in {o["metadata"]["name"] for o in inf.store.list(NS)}

    assert await eventually(lambda: _true(seen()), within=60, interval=0.05)
    informer_s = loop.time() - back
    assert await eventually(lambda: _true(ok_at[-1] > back), within=60, interval=0.05)
    controller_s = next(t for t in ok_at if t > back) - back
    print(
        f"\nafter a 30 s outage: informer caught up {informer_s:.2f}s and the "
        f"controller succeeded {controller_s:.2f}s after the API server answered again"
    )
    # Backoff is capped at 1 s (jittered) while the server is unreachable.
    assert informer_s < 3.0
    assert controller_s < 3.0


async def _true(value: bool) -> bool:
    return value
