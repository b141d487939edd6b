"""Connections to workload clusters (`clusters.connect.ClusterConnections`): a cluster whose
address takes connections but never completes one (a TLS handshake that gets no answer, as
behind a firewall that drops packets) fails the request by the client's own short connect
timeout, so a reconcile that looks into it is not held for its caller's whole budget."""

from __future__ import annotations

import asyncio
import socket

import pytest

from okra_controllers.clusters.connect import (
    WORKLOAD_CONNECT_TIMEOUT,
    ArgoCluster,
    ClusterConnections,
)
from okra_runtime.gvk import GVK

NODE = GVK("", "v1", "Node")
CALLER_BUDGET = 10.0
"""What the target-group controllers give one cluster (CLUSTER_TIMEOUT)."""


async def test_a_cluster_that_never_completes_a_connection_fails_before_the_callers_budget() -> (
    None
):
    held: list[asyncio.StreamWriter] = []

    async def silent(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accepted, never answered: the TLS handshake waits forever

    server = await asyncio.start_server(silent, "127.0.0.1", 0, family=socket.AF_INET)
    port = server.sockets[0].getsockname()[1]
    connections = ClusterConnections()
    try:
        client = await connections.client_for_cluster(
            "silent",
            "1",
            ArgoCluster(name="silent", server=f"https://127.0.0.1:{port}", bearer_token="t"),
        )
        # The client gives up by itself (two attempts of WORKLOAD_CONNECT_TIMEOUT): a
        # ConnectionError, not the caller's wait_for running out.
        assert 2 * WORKLOAD_CONNECT_TIMEOUT + 1 < CALLER_BUDGET
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(client.list(NODE), CALLER_BUDGET)
    finally:
        await connections.close()
        for w in held:
            w.close()
        server.close()
        await server.wait_closed()
