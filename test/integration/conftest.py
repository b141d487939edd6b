"""Fixtures for EKS clusters whose API servers are local control planes (see
okra_testkit.localeks):

- `eks_webhook`: the session's TokenReview webhook verifying EKS tokens.
- `eks_plane`: a session-scoped workload control plane that accepts EKS tokens for the cluster
  named `EKS_CLUSTER` (and no other).
- `local_eks`: per test, moto behind a proxy that points `EKS_CLUSTER` at `eks_plane`
  (`local_eks.config` is the AWS the code under test uses); `local_eks.cluster(...)` starts more.
- `eks_controllers`: ClusterSet and AWSTargetGroupSet in an in-process Manager for the test's
  namespace, with `local_eks.config` as their AWS.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from okra_controllers.clusterset.controller import setup as setup_clustersets
from okra_controllers.settings import Settings
from okra_controllers.targetgroupset.controller import register
from okra_runtime import Client, Manager, ManagerOptions
from okra_testkit.eksauth import TokenReviewServer
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.localeks import LocalEks, eks_token_webhook, start_eks_plane
from support import stop_manager

REPO = Path(__file__).resolve().parents[2]

EKS_CLUSTER = "eks-workload"


@pytest.fixture(scope="session")
def eks_webhook() -> Iterator[TokenReviewServer]:
    with eks_token_webhook() as server:
        yield server


@pytest.fixture(scope="session")
def eks_plane(eks_webhook: TokenReviewServer) -> Iterator[ControlPlane]:
    plane = start_eks_plane(eks_webhook, EKS_CLUSTER)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
async def local_eks(
    moto: MotoServer, eks_webhook: TokenReviewServer, eks_plane: ControlPlane
) -> AsyncIterator[LocalEks]:
    async with LocalEks(moto, webhook=eks_webhook) as eks:
        await eks.register(EKS_CLUSTER, eks_plane)
        yield eks


@pytest.fixture
async def eks_controllers(
    rt_client: Client, namespace: str, control_plane: ControlPlane, local_eks: LocalEks
) -> AsyncIterator[None]:
    """ClusterSet and AWSTargetGroupSet wired as okra-manager wires them, with AWS through the
    proxy (the only AWS endpoint they know)."""
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    setup_clustersets(mgr, Settings(namespace, namespace, local_eks.config, 1))
    register(mgr, local_eks.config, resync=1.0)
    task = asyncio.create_task(mgr.start())
    try:
        yield
    finally:
        await stop_manager(mgr, task)
