"""A candidate counts a holder's lease from its own first sight of the holder's last
renewal, never from the renewTime the holder wrote (its clock, which may be skewed): a
standby started after the leader died waits the whole lease from when it first looked,
however old or new the renewTime says it is, then takes over and says why. client-go's
rule; the cause of a takeover seconds later than "lease after the kill" when the standby
was still starting."""

from __future__ import annotations

import asyncio
import datetime
import time

import pytest
import structlog

from okra_runtime.client import Client
from okra_runtime.leaderelection import LEASE, LeaderElector

DURATION, RETRY = 3, 0.5


@pytest.mark.timeout(60)
@pytest.mark.parametrize("renewed_ago", [3600.0, -3600.0], ids=["an-hour-ago", "an-hour-ahead"])
async def test_a_standby_waits_the_lease_from_its_own_first_sight(
    rt_client: Client, namespace: str, renewed_ago: float
) -> None:
    renewed = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=renewed_ago)
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    await rt_client.create(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "takeover", "namespace": namespace},
            "spec": {
                "holderIdentity": "gone",
                "leaseDurationSeconds": DURATION,
                "acquireTime": stamp,
                "renewTime": stamp,
                "leaseTransitions": 4,
            },
        }
    )
    elector = LeaderElector(
        rt_client, "takeover", namespace, "standby", DURATION + 1, DURATION, RETRY
    )
    started = time.monotonic()
    with structlog.testing.capture_logs() as logs:
        await asyncio.wait_for(elector.acquire(), 30)
    took = time.monotonic() - started
    print(f"\ntook a lease last renewed {renewed_ago:+.0f} s away after {took:.2f} s")
    # Never before the lease from its first read; at the latest one poll (a retry period
    # and its jitter) and a read and a write after it
    assert DURATION <= took < DURATION + RETRY * 1.2 + 5
    said = [e for e in logs if e["event"] == "lease expired; taking over"]
    assert len(said) == 1, logs
    assert said[0]["holder"] == "gone"
    assert said[0]["renewed"] == stamp
    assert said[0]["unchanged_for"] >= DURATION
    lease = await rt_client.get(LEASE, "takeover", namespace)
    assert lease["spec"]["holderIdentity"] == "standby"
    assert lease["spec"]["leaseTransitions"] == 5
