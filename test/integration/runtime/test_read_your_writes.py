"""Read-your-writes on a watch a second late (`okra_runtime.freshness`): a reconcile that
decides from its cached object never sees it older than what this process last wrote.

The controller counts a ConfigMap's `n` up to 3, one write per reconcile, and asks to be
reconciled again at once. Every watch event reaches the manager a second after the API
server sent it (`ApiServerProxy.delay_watches`). Without the floor, the reconcile after a
write reads the count from before it and writes the same step again (the shape of an Event
said twice); with it, no reconcile reads a count older than its last write, and each step
is written once. (The delayed events of those writes reconcile again later, reading the
count as it is: harmless.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from faultproxy import ApiServerProxy
from okra_runtime import GVK, Client, Manager, ManagerOptions, Request, Result
from okra_runtime.informer import InformerOptions
from okra_testkit.envtest import ControlPlane
from support import eventually

CM = GVK("", "v1", "ConfigMap")
DELAY = 1.0
TOP = 3


async def test_a_reconcile_sees_its_own_last_write_on_a_watch_a_second_late(
    control_plane: ControlPlane, rt_client: Client, namespace: str, tmp_path: Path
) -> None:
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "counter", "namespace": namespace},
            "data": {"n": "0"},
        }
    )
    async with ApiServerProxy(control_plane.server, control_plane.ca_pem) as api:
        api.delay_watches(DELAY)
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig", control_plane.token())
        async with await Client.from_kubeconfig(kubeconfig) as client:
            mgr = Manager(
                client,
                ManagerOptions(
                    namespace=namespace,
                    metrics_address="127.0.0.1:0",
                    probe_address="127.0.0.1:0",
                    informer=InformerOptions(),
                ),
            )
            cache = mgr.informer_for(CM).store
            seen: list[tuple[int, int]] = []  # (n read, the last n this process wrote)
            written: list[int] = []

            async def reconcile(req: Request) -> Result | None:
                obj = cache.get(req.name, req.namespace)
                if obj is None:
                    return None
                n = int((obj.get("data") or {}).get("n", "0"))
                seen.append((n, written[-1] if written else 0))
                if n >= TOP:
                    return None
                await client.patch(
                    CM, req.name, {"data": {"n": str(n + 1)}}, namespace=req.namespace
                )
                written.append(n + 1)
                return Result(requeue_after=0.01)

            mgr.builder(f"counter-{namespace}").for_(CM).complete(reconcile)
            run = asyncio.create_task(mgr.start())
            try:

                async def counted() -> bool:
                    return any(n == TOP for n, _ in seen)

                assert await eventually(counted, within=30), (seen[-3:], written[-3:])
            finally:
                mgr.stop()
                await run
    stale = [(n, last) for n, last in seen if n < last]
    assert not stale, (
        f"{len(stale)} of {len(seen)} reconciles read n older than this process had "
        f"written, e.g. (read, written) {stale[:3]}"
    )
    assert written == list(range(1, TOP + 1)), f"a step written twice: {written[:10]}"
