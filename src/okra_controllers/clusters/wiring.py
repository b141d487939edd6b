"""What a controller that reaches workload clusters through Argo CD cluster Secrets wires
onto the manager (the AWSTargetGroupSet and AWSTargetGroupBinding controllers): a mapper
that wakes its objects when a cluster Secret changes, one `ClusterConnections`, closed
when the manager stops, and the reconciler's common part (`ClusterReconciler`)."""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from okra_controllers.api.kinds import SECRET
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.eks import SHARE_SECONDS, EksClusters, observe_eks
from okra_controllers.clusters.connect import SECRET_TYPE_LABEL, ClusterConnections
from okra_runtime.reconcile import Request
from okra_runtime.timeutil import utcnow

if TYPE_CHECKING:
    from okra_runtime.cache import Store
    from okra_runtime.client import Client
    from okra_runtime.events import EventRecorder
    from okra_runtime.manager import Manager

RESYNC = 30.0
"""Seconds between two reads of the workload clusters, by default (`--cluster-poll-interval`)."""

R = TypeVar("R")


def cluster_secret_mapper(
    store: Store, reaches: Callable[[dict[str, Any], Mapping[str, str]], bool]
) -> Callable[[dict[str, Any]], list[Request]]:
    """Map an Argo CD cluster Secret to the objects of `store` in its namespace that
    `reaches` (the object, the Secret's labels); any other Secret to none."""

    def mapper(secret: dict[str, Any]) -> list[Request]:
        labels = secret["metadata"].get("labels") or {}
        if labels.get(SECRET_TYPE_LABEL) != "cluster":
            return []
        ns = secret["metadata"].get("namespace") or ""
        return [Request(o["metadata"]["name"], ns) for o in store.list(ns) if reaches(o, labels)]

    return mapper


def with_connections(
    mgr: Manager,
    aws: AwsConfig,
    name: str,
    make: Callable[[EventRecorder, ClusterConnections], R],
    build: Callable[[R], object],
) -> tuple[R, ClusterConnections]:
    """The controller `name`: its reconciler made (`make`: its Event recorder
    `<name>-controller`, one connection cache) and `build` onto the manager, then the
    connections closed (`<name>-connections`) when the manager stops. The reconciler, and
    the connections."""
    connections = ClusterConnections(aws)
    rec = make(mgr.event_recorder(f"{name}-controller"), connections)
    build(rec)
    mgr.add_closer(f"{name}-connections", connections.close)
    return rec, connections


class ClusterPolling(Protocol):
    """The manager's settings a controller reaching workload clusters runs by."""

    @property
    def aws(self) -> AwsConfig: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def cluster_poll_interval(self) -> float: ...


def register_from(register: Callable[..., object], mgr: Manager, settings: ClusterPolling) -> None:
    """`register(mgr, aws, concurrency=..., resync=...)` as the manager's settings say: the
    workload clusters read again every `cluster_poll_interval` seconds."""
    register(
        mgr,
        settings.aws,
        concurrency=settings.concurrency,
        resync=settings.cluster_poll_interval,
    )


class ClusterReconciler:
    """What a reconciler reaching workload clusters holds: the manager's client, the cluster
    Secrets' store, its Event recorder and connections, the AWS account (okra's own unless
    given), its clock and resync period; and the account's EKS clusters, read as an `awseks`
    generator reads them."""

    def __init__(
        self,
        mgr: Manager,
        events: EventRecorder,
        connections: ClusterConnections,
        aws: AwsConfig | None = None,
        clock: Callable[[], datetime.datetime] = utcnow,
        resync: float = RESYNC,
    ) -> None:
        self.client: Client = mgr.client
        self.secrets: Store = mgr.informer_for(SECRET).store
        self.events = events
        self.connections = connections
        self.aws = aws or connections.aws
        self.clock = clock
        self.resync = resync
        self._stores(mgr)

    def _stores(self, mgr: Manager) -> None:
        """The subclass's own stores and state, taken from `mgr` once the common part is."""

    @property
    def share_age(self) -> float:
        """How long an answer about the account is shared: a sixth of the resync period, at
        most `SHARE_SECONDS` (read again at each resync)."""
        return min(SHARE_SECONDS, self.resync / 6)

    async def eks_clusters(self) -> EksClusters:
        """Every EKS cluster of the account and region (`observe_eks`, shared for
        `share_age`); `AwsReadError` when they cannot be read."""
        return await observe_eks(self.aws, max_age=self.share_age)
