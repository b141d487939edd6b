"""EKS observation shared by the ClusterSet and AWSTargetGroupSet controllers: callers
that ask while a walk is under way, or within `SHARE_SECONDS` after it succeeded, share it;
a caller that asks later starts a new one, and a failed walk is never handed out again; a
cancelled caller does not cancel the walk of the others."""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from collections import Counter

import pytest

from okra_controllers.aws import eks
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.eks import SHARE_SECONDS, AwsReadError, observe_eks
from okra_testkit.emulator import MotoServer


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The clock that times shared answers, moved by the test."""
    now = [1000.0]
    monkeypatch.setattr(eks, "_clock", lambda: now[0])
    return now


async def test_concurrent_callers_share_one_listclusters_walk(
    moto: MotoServer, clock: list[float]
) -> None:
    calls: Counter[str] = Counter()
    # its own page size: a key no other test's walk answered
    aws = dataclasses.replace(moto.config, on_call=lambda op: calls.update([op]))
    results = await asyncio.gather(*(observe_eks(aws, 17) for _ in range(20)))
    assert calls["eks:ListClusters"] == 1, calls
    assert all(r is results[0] for r in results)

    await observe_eks(aws, 17, max_age=0)
    assert calls["eks:ListClusters"] == 2, calls  # a caller that wants it fresh walks again


async def test_a_burst_of_callers_one_after_another_shares_a_recent_walk(
    moto: MotoServer, clock: list[float]
) -> None:
    calls: Counter[str] = Counter()
    aws = dataclasses.replace(moto.config, on_call=lambda op: calls.update([op]))
    first = await observe_eks(aws, 18)
    for _ in range(10):  # one reconcile after another, within the share period
        clock[0] += SHARE_SECONDS / 20
        assert await observe_eks(aws, 18) is first
    assert calls["eks:ListClusters"] == 1, calls

    clock[0] += SHARE_SECONDS
    assert await observe_eks(aws, 18) is not first  # older than the period: a new walk
    assert calls["eks:ListClusters"] == 2, calls


async def test_a_failed_walk_is_not_shared_afterwards(clock: list[float]) -> None:
    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    calls: Counter[str] = Counter()
    aws = AwsConfig(
        endpoint_url=f"http://127.0.0.1:{port}",
        access_key_id="testing",
        secret_access_key="testing",
        total_max_attempts=1,
        on_call=lambda op: calls.update([op]),
    )
    for attempt in (1, 2):
        with pytest.raises(AwsReadError):
            await observe_eks(aws)
        assert calls["eks:ListClusters"] == attempt, calls


async def test_a_cancelled_caller_leaves_the_shared_walk_to_the_others(
    moto: MotoServer,
) -> None:
    calls: Counter[str] = Counter()
    aws = dataclasses.replace(moto.config, on_call=lambda op: calls.update([op]))
    first = asyncio.ensure_future(observe_eks(aws))
    second = asyncio.ensure_future(observe_eks(aws))
    await asyncio.sleep(0)
    first.cancel()
    found = await second
    assert found.errors == []
    assert calls["eks:ListClusters"] == 1, calls
