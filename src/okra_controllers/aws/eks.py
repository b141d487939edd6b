"""What EKS says about the account's clusters: one ListClusters walk, DescribeCluster each.

Shared by the ClusterSet controller (clusters become Argo CD cluster Secrets) and the
AWSTargetGroupSet controller (clusters found by tag are read for TargetGroupBindings); it
lives under `aws/` so that neither controller imports the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.aws.config import AwsConfig

DESCRIBE_CONCURRENCY = 8


@dataclass(frozen=True)
class EksCluster:
    """The part of an EKS DescribeCluster answer a Secret is made of."""

    name: str
    status: str
    endpoint: str
    ca_data: str = field(repr=False)
    """certificateAuthority.data: base64 PEM, exactly what Argo CD's caData wants."""
    tags: Mapping[str, str] = field(default_factory=dict)


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


async def observe_eks(aws: AwsConfig, page_size: int = 100) -> EksClusters:
    """Every EKS cluster of the account and region, described; one ListClusters walk."""
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
                out.clusters.append(
                    EksCluster(
                        name=c["name"],
                        status=c.get("status", ""),
                        endpoint=c.get("endpoint") or "",
                        ca_data=(c.get("certificateAuthority") or {}).get("data") or "",
                        tags=dict(c.get("tags") or {}),
                    )
                )

            await asyncio.gather(*(describe(n) for n in names))
    except (ClientError, BotoCoreError) as e:
        raise AwsReadError(f"EKS ListClusters: {_aws_message(e)}") from e
    return out
