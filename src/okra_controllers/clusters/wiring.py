"""What a controller that reaches workload clusters through Argo CD cluster Secrets wires
onto the manager (the AWSTargetGroupSet and AWSTargetGroupBinding controllers): a mapper
that wakes its objects when a cluster Secret changes, and one `ClusterConnections`, closed
when the manager stops."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from okra_controllers.aws.config import AwsConfig
from okra_controllers.clusters.connect import SECRET_TYPE_LABEL, ClusterConnections
from okra_runtime.reconcile import Request

if TYPE_CHECKING:
    from okra_runtime.cache import Store
    from okra_runtime.events import EventRecorder
    from okra_runtime.manager import Manager

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
