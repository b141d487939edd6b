"""EKS observation shared by the ClusterSet and AWSTargetGroupSet controllers: callers
that ask while a walk is under way share it; a caller that asks after it ended starts a
new one (nothing is cached); a cancelled caller does not cancel the walk of the others."""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter

from okra_controllers.aws.eks import observe_eks
from okra_testkit.emulator import MotoServer


async def test_concurrent_callers_share_one_listclusters_walk(moto: MotoServer) -> None:
    calls: Counter[str] = Counter()
    aws = dataclasses.replace(moto.config, on_call=lambda op: calls.update([op]))
    results = await asyncio.gather(*(observe_eks(aws) for _ in range(20)))
    assert calls["eks:ListClusters"] == 1, calls
    assert all(r is results[0] for r in results)

    await observe_eks(aws)
    assert calls["eks:ListClusters"] == 2, calls  # a walk that ended is not reused


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
