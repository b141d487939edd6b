"""What EKS says about the account's clusters: one ListClusters walk, DescribeCluster each.

Shared by the ClusterSet controller (clusters become Argo CD cluster Secrets) and the
AWSTargetGroupSet controller (clusters found by tag are read for TargetGroupBindings); it
lives under `aws/` so that neither controller imports the other.

Callers that ask while a walk of the same account and region is under way share that walk
(single flight) instead of starting their own, and a walk that succeeded answers the callers
that come within `SHARE_SECONDS` after it ended: a burst of reconciles (a hundred sets created
at once, each set's resync landing together) costs one ListClusters walk, not one per set, and
a set sees EKS as it was at most a few seconds ago. EKS has no watch, so every caller polls
anyway (ClusterSets every 60 s); a few seconds of sharing is far below that period. A failed
walk is not kept: the next caller tries again.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.aws.config import AwsConfig

DESCRIBE_CONCURRENCY = 8
SHARE_SECONDS = 5.0
"""How long a successful walk's answer is handed to further callers after it ended."""

_clock = time.monotonic  # when a walk ended (tests move it)


@dataclass(frozen=True)
class EksCluster:
    """The part of an EKS DescribeCluster answer a Secret is made of."""

    name: str
    status: str
    endpoint: str
    ca_data: str = field(repr=False)
    """certificateAuthority.data: base64 PEM, exactly what Argo CD's caData wants."""
    tags: Mapping[str, str] = field(default_factory=dict)
    vpc_id: str = ""
    """resourcesVpcConfig.vpcId ("" when EKS does not say)."""
    subnet_ids: tuple[str, ...] = ()


class AwsReadError(Exception):
    """ListClusters failed: nothing is known, so nothing may be deleted."""


@dataclass
class EksClusters:
    clusters: list[EksCluster] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    """Listed but not described (an error other than not-found)."""
    errors: list[str] = field(default_factory=list)


def _aws_message(e: Exception) -> str:
    if isinstance(e, ClientError):
        err = e.response.get("Error", {})
        return f"{err.get('Code', 'Error')}: {err.get('Message', '')}".rstrip(": ")
    return str(e)


_Key = tuple[AwsConfig, int]
_walks: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[_Key, asyncio.Task[EksClusters]]
] = weakref.WeakKeyDictionary()
"""Walks under way, per event loop, by account/region (the AwsConfig) and page size."""
_answers: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[_Key, tuple[float, EksClusters]]
] = weakref.WeakKeyDictionary()
"""The last successful walk's answer and when it ended, per event loop and key."""


async def observe_eks(
    aws: AwsConfig, page_size: int = 100, *, max_age: float = SHARE_SECONDS
) -> EksClusters:
    """Every EKS cluster of the account and region, described; one ListClusters walk,
    shared with every caller that asks while it is under way or within `max_age` seconds
    after it succeeded. The result is shared: callers read it, never change it."""
    loop = asyncio.get_running_loop()
    walks = _walks.setdefault(loop, {})
    answers = _answers.setdefault(loop, {})
    key = (aws, page_size)
    answer = answers.get(key)
    if answer is not None and _clock() - answer[0] < max_age:
        return answer[1]
    walk = walks.get(key)
    if walk is None:
        walk = walks[key] = loop.create_task(_walk(aws, page_size))

        def ended(t: asyncio.Task[EksClusters]) -> None:
            if walks.get(key) is t:
                del walks[key]
            if t.cancelled():
                return
            if t.exception() is None:  # retrieved, even when every caller was cancelled
                answers[key] = (_clock(), t.result())
            else:
                answers.pop(key, None)

        walk.add_done_callback(ended)
    # One caller cancelled (its reconcile ended) does not cancel the walk the others wait on.
    return await asyncio.shield(walk)


async def _walk(aws: AwsConfig, page_size: int) -> EksClusters:
    out = EksClusters()
    try:
        async with aws.client("eks") as eks:
            names: list[str] = []
            token: str | None = None
            while True:
                kwargs: dict[str, Any] = {"maxResults": page_size}
                if token:
                    kwargs["nextToken"] = token
                page = await eks.list_clusters(**kwargs)
                names.extend(page.get("clusters") or [])
                token = page.get("nextToken")
                if not token:
                    break
            gate = asyncio.Semaphore(DESCRIBE_CONCURRENCY)

            async def describe(name: str) -> None:
                async with gate:
                    try:
                        c = (await eks.describe_cluster(name=name))["cluster"]
                    except ClientError as e:
                        if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                            return  # deleted between List and Describe: gone
                        out.unknown.append(name)
                        out.errors.append(f"DescribeCluster {name}: {_aws_message(e)}")
                        return
                    except BotoCoreError as e:
                        out.unknown.append(name)
                        out.errors.append(f"DescribeCluster {name}: {e}")
                        return
                vpc = c.get("resourcesVpcConfig") or {}
                out.clusters.append(
                    EksCluster(
                        name=c["name"],
                        status=c.get("status", ""),
                        endpoint=c.get("endpoint") or "",
                        ca_data=(c.get("certificateAuthority") or {}).get("data") or "",
                        tags=dict(c.get("tags") or {}),
                        vpc_id=str(vpc.get("vpcId") or ""),
                        subnet_ids=tuple(str(s) for s in vpc.get("subnetIds") or ()),
                    )
                )

            await asyncio.gather(*(describe(n) for n in names))
    except (ClientError, BotoCoreError) as e:
        raise AwsReadError(f"EKS ListClusters: {_aws_message(e)}") from e
    return out


async def subnet_vpcs(aws: AwsConfig, subnet_ids: list[str]) -> dict[str, str]:
    """subnet id -> its VPC, in one EC2 DescribeSubnets call: the VPC of an EKS cluster
    whose DescribeCluster answer has no `vpcId` (EKS gives it; some emulators do not).
    Raises `AwsReadError`."""
    if not subnet_ids:
        return {}
    try:
        async with aws.client("ec2") as ec2:
            out = await ec2.describe_subnets(SubnetIds=sorted(set(subnet_ids)))
    except (ClientError, BotoCoreError) as e:
        raise AwsReadError(f"EC2 DescribeSubnets: {_aws_message(e)}") from e
    return {str(s["SubnetId"]): str(s["VpcId"]) for s in out.get("Subnets") or []}
