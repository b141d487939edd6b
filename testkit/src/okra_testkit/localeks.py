"""EKS clusters in moto whose API servers are real local control planes, reached and
authenticated the way okra and Argo CD reach EKS in production, no link skipped:

    okra / Argo CD ──AWS API──▶ CountingProxy ──▶ moto          (EKS DescribeCluster: endpoint and
                                                                  CA rewritten to the local plane's)
    okra / Argo CD ──EKS token (presigned STS GetCallerIdentity)──▶ workload kube-apiserver
        ──TokenReview──▶ TokenReviewServer: SigV4 signature, cluster id, 15-minute age checked
        ──▶ user <IAM ARN> in group okra:eks-cluster-admins ──RBAC──▶ cluster-admin

    async with LocalEks(moto) as eks:
        network = await Seeder(eks.config).network()
        plane = await eks.cluster("web-1-v1", network, tags={"role": "web"})
        # eks.config (AWS through the proxy) is what the code under test gets.

Test and demo machinery: the manager never imports this module.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from okra_controllers.aws.config import AwsConfig
from okra_testkit.eksauth import (
    ADMIN_GROUP,
    EksTokenVerifier,
    TokenReviewServer,
)
from okra_testkit.emulator import CountingProxy, MotoServer, emulator_principal
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import Network, Seeder


def eks_token_webhook() -> TokenReviewServer:
    """A TokenReview webhook (not started) that verifies EKS tokens signed with MotoServer's
    static keys; `LocalEks` adds its moto's and proxy's endpoints as accepted STS hosts."""
    return TokenReviewServer(EksTokenVerifier([emulator_principal()]))


def start_eks_plane(
    webhook: TokenReviewServer,
    cluster: str,
    *,
    name: str | None = None,
    base_dir: str | None = None,
    assets: str | None = None,
    controller_manager: bool = True,
) -> ControlPlane:
    """A started ControlPlane whose kube-apiserver accepts EKS tokens for `cluster` (checked by
    `webhook`) and gives the webhook's group cluster-admin, as an EKS access entry with
    AmazonEKSClusterAdminPolicy does. Blocking: call it through `asyncio.to_thread` from a loop."""
    plane = ControlPlane(
        name=name or cluster,
        base_dir=base_dir,
        assets=assets,
        controller_manager=controller_manager,
        token_webhook=webhook.url_for(cluster),
        token_webhook_ca=webhook.ca_pem,
    )
    plane.start()
    try:
        bind_admin_group(plane)
    except BaseException:
        plane.stop()
        raise
    return plane


def bind_admin_group(plane: ControlPlane, group: str = ADMIN_GROUP) -> None:
    plane.kubectl(
        "create", "clusterrolebinding", "eks-cluster-admins", "--clusterrole=cluster-admin",
        f"--group={group}",
    )  # fmt: skip


@dataclass
class LocalEks:
    """moto behind a CountingProxy that points EKS clusters at local control planes whose
    API servers verify EKS tokens (see the module doc). An async context manager.

    `webhook`: a running TokenReviewServer to share (e.g. session-wide, with planes that outlive
    this object); by default one is started and stopped with it. `config` is the AwsConfig the
    code under test uses (the proxy's endpoint, moto's keys)."""

    moto: MotoServer
    webhook: TokenReviewServer | None = None
    base_dir: str | None = None
    assets: str | None = None
    controller_manager: bool = True
    _proxy: CountingProxy | None = field(init=False, default=None)
    planes: dict[str, ControlPlane] = field(init=False, default_factory=dict)
    _owned_webhook: bool = field(init=False, default=False)
    _owned_planes: set[str] = field(init=False, default_factory=set)

    async def __aenter__(self) -> LocalEks:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        if self.webhook is None:
            self.webhook = eks_token_webhook()
            self.webhook.start()
            self._owned_webhook = True
        verifier = self.webhook.verifier
        verifier.add_sts_endpoint(self.moto.endpoint_url)
        self._proxy = CountingProxy(self.moto.endpoint_url, on_credentials=verifier.add_principal)
        await self._proxy.start()
        verifier.add_sts_endpoint(self._proxy.endpoint_url)

    async def stop(self) -> None:
        planes = [self.planes.pop(n) for n in sorted(self._owned_planes) if n in self.planes]
        self._owned_planes.clear()
        self.planes.clear()
        try:
            await asyncio.gather(*(asyncio.to_thread(p.stop) for p in planes))
        finally:
            if self._proxy is not None:
                await self._proxy.stop()
                self._proxy = None
            if self._owned_webhook and self.webhook is not None:
                self.webhook.stop()
                self.webhook = None

    @property
    def proxy(self) -> CountingProxy:
        """The proxy in front of moto (its `actions()` are the AWS calls made through it)."""
        assert self._proxy is not None, "LocalEks not started"
        return self._proxy

    @property
    def config(self) -> AwsConfig:
        """AWS for the code under test: through the proxy, with moto's static keys."""
        return AwsConfig(
            region=self.moto.region,
            endpoint_url=self.proxy.endpoint_url,
            access_key_id="testing",
            secret_access_key="testing",
        )

    @property
    def endpoint_url(self) -> str:
        return self.proxy.endpoint_url

    def aws_env(self) -> dict[str, str]:
        """Environment for a process that signs EKS tokens with an AWS SDK (Argo CD's
        `argocd-k8s-auth aws`, the AWS CLI): moto's keys, the region, the proxy's endpoint."""
        return {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": self.moto.region,
            "AWS_DEFAULT_REGION": self.moto.region,
            "AWS_ENDPOINT_URL": self.proxy.endpoint_url,
        }

    async def cluster(
        self,
        name: str,
        network: Network,
        *,
        tags: dict[str, str] | None = None,
        version: str = "1.34",
    ) -> ControlPlane:
        """An EKS cluster `name` in moto (with `tags`) whose API server is a new local control
        plane: DescribeCluster through the proxy answers with its URL and CA, and it accepts EKS
        tokens for `name`. Stopped with this object."""
        assert self.webhook is not None, "LocalEks not started"
        plane = await asyncio.to_thread(
            start_eks_plane,
            self.webhook,
            name,
            base_dir=self.base_dir,
            assets=self.assets,
            controller_manager=self.controller_manager,
        )
        self.planes[name] = plane
        self._owned_planes.add(name)
        await self.register(name, plane, network, tags=tags, version=version)
        return plane

    async def register(
        self,
        name: str,
        plane: ControlPlane,
        network: Network | None = None,
        *,
        tags: dict[str, str] | None = None,
        version: str = "1.34",
    ) -> dict[str, Any] | None:
        """Point EKS cluster `name` at an already running `plane` (one made by `start_eks_plane`
        with this webhook, e.g. session-wide); with `network`, also create the cluster in moto
        (returns its CreateCluster answer). The plane is not stopped by this object."""
        self.planes[name] = plane
        self.proxy.route_eks_cluster(name, plane.server, plane.ca_pem)
        if network is None:
            return None
        return await Seeder(self.config).eks_cluster(name, network, tags=tags, version=version)

    async def delete_cluster(self, name: str, *, stop_plane: bool = True) -> None:
        """Delete the EKS cluster in moto and, if this object started it, its control plane."""
        async with self.config.client("eks") as eks:
            await eks.delete_cluster(name=name)
        self.proxy.unroute_eks_cluster(name)
        plane = self.planes.pop(name, None)
        if plane is not None and stop_plane and name in self._owned_planes:
            self._owned_planes.discard(name)
            await asyncio.to_thread(plane.stop)
