"""What `okra get cell` shows: the Cell and the objects around it.

`select_view` picks, from everything in the namespace, the Cell's target groups
(its selector), its AnalysisRuns (owner UID) and, by the Cell's name, its load
balancer config and VersionBlocklist. It is pure, so the one-shot read
(`fetch_view`, plain GETs and LISTs) and `--watch` (informer caches) show
exactly the same thing.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.api.kinds import ANALYSIS_RUN, BLOCKLIST, CELL, TARGET_GROUP
from okra_controllers.cell.observe import config_gvk
from okra_controllers.cli.kube import CliError, get_or_none
from okra_runtime.client import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.timeutil import parse_time

Obj = dict[str, Any]


@dataclass(frozen=True)
class CellView:
    cell: Obj
    target_groups: list[Obj] = field(default_factory=list)
    config: Obj | None = None
    runs: list[Obj] = field(default_factory=list)
    blocklist: Obj | None = None

    def fingerprint(self) -> tuple[str, ...]:
        """Resource versions of everything shown: equal fingerprints, same view."""
        objs = [self.cell, *self.target_groups, self.config, *self.runs, self.blocklist]
        return tuple(
            f"{(o or {}).get('kind')}/{_meta(o).get('name')}@{_meta(o).get('resourceVersion')}"
            for o in objs
        )

    def document(self) -> Obj:
        """The view as one document, for `-o yaml|json`."""
        return {
            "cell": strip(self.cell),
            "targetGroups": [strip(t) for t in self.target_groups],
            "loadBalancerConfig": strip(self.config) if self.config else None,
            "analysisRuns": [strip(r) for r in self.runs],
            "versionBlocklist": strip(self.blocklist) if self.blocklist else None,
        }


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def strip(obj: Obj) -> Obj:
    """The object without managedFields (noise for a reader)."""
    meta = {k: v for k, v in _meta(obj).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def cell_selector(cell: Obj) -> dict[str, str]:
    ingress = (cell.get("spec") or {}).get("ingress") or {}
    lb = ingress.get("awsApplicationLoadBalancer") or ingress.get("awsNetworkLoadBalancer") or {}
    if ingress.get("type") == "AWSRoute53":
        lb = ingress.get("awsRoute53") or {}
    labels = (lb.get("targetGroupSelector") or {}).get("matchLabels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def selects(selector: dict[str, str], obj: Obj) -> bool:
    labels = _meta(obj).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def owned_by(obj: Obj, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in _meta(obj).get("ownerReferences") or [])


def created(obj: Obj) -> datetime.datetime | None:
    return parse_time(_meta(obj).get("creationTimestamp"))


def select_view(
    cell: Obj,
    target_groups: Iterable[Obj],
    configs: Iterable[Obj],
    runs: Iterable[Obj],
    blocklists: Iterable[Obj],
) -> CellView:
    name, uid = _meta(cell).get("name"), _meta(cell).get("uid") or ""
    selector = cell_selector(cell)
    epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    owned = [r for r in runs if uid and owned_by(r, uid)]
    owned.sort(key=lambda r: (created(r) or epoch, _meta(r).get("name", "")), reverse=True)
    return CellView(
        cell=cell,
        target_groups=sorted(
            (t for t in target_groups if selects(selector, t)),
            key=lambda t: str(_meta(t).get("name")),
        ),
        config=next((c for c in configs if _meta(c).get("name") == name), None),
        runs=owned,
        blocklist=next((b for b in blocklists if _meta(b).get("name") == name), None),
    )


async def get_cell(client: Client, name: str, namespace: str) -> Obj:
    try:
        return await client.get(CELL, name, namespace)
    except NotFoundError:
        raise CliError(f"cell {name} not found in namespace {namespace}") from None


async def fetch_view(client: Client, name: str, namespace: str) -> CellView:
    """The view from plain reads (one GET or LIST per kind)."""
    cell = await get_cell(client, name, namespace)
    tgs = (await client.list(TARGET_GROUP, namespace)).items
    config = await get_or_none(client, config_gvk(cell), name, namespace)
    runs = (await client.list(ANALYSIS_RUN, namespace)).items
    blocklist = await get_or_none(client, BLOCKLIST, name, namespace)
    return select_view(
        cell, tgs, [config] if config else [], runs, [blocklist] if blocklist else []
    )
