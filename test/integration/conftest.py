"""Fixtures for EKS clusters whose API servers are local control planes (see
okra_controllers.aws.localeks):

- `eks_webhook`: the session's TokenReview webhook verifying EKS tokens.
- `eks_plane`: a session-scoped workload control plane that accepts EKS tokens for the cluster
  named `EKS_CLUSTER` (and no other).
- `local_eks`: per test, moto behind a proxy that points `EKS_CLUSTER` at `eks_plane`
  (`local_eks.config` is the AWS the code under test uses); `local_eks.cluster(...)` starts more.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from okra_controllers.aws.eksauth import TokenReviewServer
from okra_controllers.aws.emulator import MotoServer
from okra_controllers.aws.localeks import LocalEks, eks_token_webhook, start_eks_plane
from okra_runtime.envtest import ControlPlane

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
