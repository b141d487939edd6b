"""From what the binding's clusters hold and what the target group has to the calls to make: a
pure function.

Rules:
- A target is an (id, port) pair. An `ids` entry wants each id at its port; a cluster entry wants
  the instance behind each matching Node (`spec.providerID` `aws:///<az>/<instance-id>`) of every
  cluster it names or selects. Nodes being deleted, labelled
  `node.kubernetes.io/exclude-from-external-load-balancers`, or without an AWS providerID are
  left out.
- The binding owns the group's targets: what is registered and not wanted is deregistered, what
  is wanted and not registered is registered (a `draining` target counts as gone).
- A cluster okra could not read (unreachable, or no Secret names it) keeps what its entries had:
  every id the entry reported last time (`previous`) is neither deregistered nor dropped from
  status; with no such record (a first reconcile), nothing at all is deregistered. okra does not
  deregister what it cannot see; the entry's other clusters still add.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from okra_controllers.api.v1alpha1.targetgroupbinding import TargetSpec, TargetStatus

EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"

Target = tuple[str, int]
"""(id, port) as RegisterTargets takes it."""


def instance_id(provider_id: str | None) -> str | None:
    """`aws:///us-east-1a/i-0abc` → `i-0abc`; None for anything that is not an EC2 instance."""
    if not provider_id or not provider_id.startswith("aws://"):
        return None
    last = provider_id.rstrip("/").rsplit("/", 1)[-1]
    return last if last.startswith("i-") and len(last) > 2 else None


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    provider_id: str | None = None
    deleting: bool = False

    @property
    def instance_id(self) -> str | None:
        return instance_id(self.provider_id)


@dataclass(frozen=True)
class ObservedCluster:
    """A cluster some entry targets. `nodes` is None when it could not be read."""

    name: str
    nodes: tuple[Node, ...] | None
    message: str = ""


@dataclass(frozen=True)
class EntryResult:
    name: str
    port: int
    clusters: tuple[str, ...] | None
    """None for an `ids` entry."""
    ids: tuple[str, ...]
    kept: tuple[str, ...] = ()
    """Ids kept from the last status because a cluster of this entry could not be read."""

    def status(self) -> TargetStatus:
        return TargetStatus(
            name=self.name,
            port=self.port,
            clusters=list(self.clusters) if self.clusters is not None else None,
            ids=list(self.ids),
        )


@dataclass(frozen=True)
class Plan:
    register: tuple[Target, ...]
    deregister: tuple[Target, ...]
    entries: tuple[EntryResult, ...]
    unreachable: tuple[tuple[str, str], ...]
    """(cluster, why) of every cluster that could not be read, by name."""

    @property
    def in_sync(self) -> bool:
        return not self.register and not self.deregister


def _selected(node: Node, spec: TargetSpec) -> bool:
    if node.deleting or EXCLUDE_LABEL in node.labels or node.instance_id is None:
        return False
    if spec.node_name is not None and node.name != spec.node_name:
        return False
    wanted = spec.node_selector.selector() if spec.node_selector is not None else {}
    return all(node.labels.get(k) == v for k, v in wanted.items())


def plan(
    targets: Sequence[TargetSpec],
    clusters_of: Mapping[str, Sequence[str]],
    observed: Mapping[str, ObservedCluster],
    registered: Iterable[Target],
    previous: Sequence[TargetStatus] = (),
) -> Plan:
    """`clusters_of`: entry name → the clusters it targets (its `clusterName`, or what its
    `clusterSelector` selected); `observed`: cluster name → what was read there (a cluster
    missing here counts as unreadable); `registered`: the group's targets now; `previous`:
    `status.targets` as last reported."""
    prev = {p.name: p for p in previous}
    have = set(registered)
    desired: set[Target] = set()
    protected: set[Target] = set()
    entries: list[EntryResult] = []
    unreachable: dict[str, str] = {}
    for spec in targets:
        if spec.ids is not None:
            ids = tuple(sorted(set(spec.ids)))
            desired.update((i, spec.port) for i in ids)
            entries.append(EntryResult(spec.name, spec.port, None, ids))
            continue
        names = tuple(sorted(set(clusters_of.get(spec.name, ()))))
        found: set[str] = set()
        blind = False
        for c in names:
            oc = observed.get(c)
            if oc is None or oc.nodes is None:
                blind = True
                unreachable[c] = oc.message if oc is not None else "not observed"
                continue
            found.update(n.instance_id for n in oc.nodes if _selected(n, spec) and n.instance_id)
        desired.update((i, spec.port) for i in found)
        kept: tuple[str, ...] = ()
        last = prev.get(spec.name)
        if blind and last is None:
            protected.update(have)  # no record of what the entry had: deregister nothing
        elif blind and last is not None:
            protected.update((i, last.port) for i in last.ids)
            if last.port == spec.port:
                kept = tuple(sorted(set(last.ids) - found))
        entries.append(
            EntryResult(spec.name, spec.port, names, tuple(sorted(found | set(kept))), kept)
        )
    return Plan(
        register=tuple(sorted(desired - have)),
        deregister=tuple(sorted(have - desired - protected)),
        entries=tuple(entries),
        unreachable=tuple(sorted(unreachable.items())),
    )
