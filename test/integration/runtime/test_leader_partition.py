"""A leader partitioned from the API server (its connections hang; nothing is refused)
stops leading at its renew deadline, before the lease runs out for a standby: a renewal
hanging on a dead connection is abandoned at the deadline, as client-go does. Before,
one request could hang for a minute per retry while another candidate took the lease."""

from __future__ import annotations

import asyncio
import time

import pytest
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from okra_runtime.client import Client
from okra_runtime.leaderelection import LeaderElector, LeadershipLostError
from okra_testkit.envtest import ControlPlane
from tcpproxy import StallingProxy


async def _client_via(plane: ControlPlane, port: int) -> Client:
    cfg = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(plane.kubeconfig()), client_configuration=cfg)
    cfg.host = f"https://127.0.0.1:{port}"
    return Client(k8s.ApiClient(configuration=cfg))


@pytest.mark.timeout(120)
async def test_a_partitioned_leader_stops_at_its_renew_deadline(
    control_plane: ControlPlane, namespace: str
) -> None:
    port = int(control_plane.server.rsplit(":", 1)[1])
    proxy = StallingProxy("127.0.0.1", port)
    await proxy.start()
    client = await _client_via(control_plane, proxy.port)
    elector = LeaderElector(
        client, "partition", namespace, "a", lease_duration=6, renew_deadline=4, retry_period=1
    )
    try:
        await asyncio.wait_for(elector.acquire(), 30)
        holding = asyncio.create_task(elector.hold())
        await asyncio.sleep(1.5)  # renewed at least once
        assert not holding.done()
        proxy.stall()
        stalled = time.monotonic()
        with pytest.raises(LeadershipLostError):
            await asyncio.wait_for(holding, 30)
        lost_after = time.monotonic() - stalled
        print(f"\npartitioned leader stopped leading {lost_after:.2f}s into the partition")
        # Renew deadline (4 s) from the last renewal, which was at most one retry period
        # (1 s) before the partition: well inside the lease (6 s) a standby waits out.
        assert lost_after < 6
    finally:
        await proxy.close()
        await client.close()
