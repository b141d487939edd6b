"""`okra get cell NAME` for a system Cell: the system as a tree — its clusters,
then each application with the versions it is going to and coming from, the clusters of
each and the weight each has now (from the application's Cell)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.cell.system.names import APP_LABEL, dns
from okra_controllers.cell.system.shape import is_system as is_system
from okra_runtime.timeutil import parse_time

Obj = dict[str, Any]


def render_system_cell(cell: Obj, children: Sequence[Obj], now: datetime.datetime) -> str:
    meta = cell.get("metadata") or {}
    name = str(meta.get("name"))
    st = CellStatus.model_validate(cell.get("status") or {})
    lines = [
        f"Cell {name} (a system: {len(cell['spec'].get('clusters') or [])} clusters, "
        f"{len(cell['spec'].get('applications') or [])} applications)",
        f"  Phase:   {st.phase or 'Pending'}",
        f"  Health:  {st.health or '-'}",
    ]
    if st.message:
        lines.append(f"  Message: {st.message}")
    lines += ["", "Clusters"]
    for c in st.clusters or []:
        eks = f" (EKS {c.eks_cluster_name})" if c.eks_cluster_name != c.name else ""
        if c.ready:
            state = "ready"
        else:
            since = c.waiting_since
            waited = f" for {_ago(since, now)}" if since is not None else ""
            state = f"waiting{waited}: {c.message}"
        lines.append(f"  {c.name}{eks}  {state}")
    if not st.clusters:
        lines.append("  (not looked at yet)")
    lines += ["", "Applications"]
    by_app = {str((c["metadata"].get("labels") or {}).get(APP_LABEL)): c for c in children}
    for a in st.applications or []:
        child = by_app.get(a.name)
        weights = _weights(child)
        lines.append(f"  {a.name}  {a.phase}  (Cell {a.cell})")
        sets = []
        if a.serving_version and a.serving_version != a.version:
            sets.append((a.serving_version, a.serving, "serving"))
        if a.version:
            label = "serving" if a.version == a.serving_version else "going to"
            sets.append((a.version, a.clusters, label))
        for i, (version, clusters, label) in enumerate(sets):
            branch = "└─" if i == len(sets) - 1 else "├─"
            shown = (
                ", ".join(_cluster(name, a.name, c, weights) for c in clusters) or "(no cluster)"
            )
            lines.append(f"    {branch} {version} {label}: {shown}")
        if a.message:
            lines.append(f"       {a.message}")
    if not st.applications:
        lines.append("  (not looked at yet)")
    return "\n".join(lines) + "\n"


def _weights(child: Obj | None) -> dict[str, int]:
    """Target group name -> weight, as the application's Cell last saw AWS."""
    if child is None:
        return {}
    tgs = (child.get("status") or {}).get("targetGroups") or []
    return {str(t.get("name")): int(t.get("weight") or 0) for t in tgs}


def _cluster(system: str, app: str, cluster: str, weights: dict[str, int]) -> str:
    tg = dns(system, app, cluster)
    return f"{cluster} ({weights[tg]}%)" if tg in weights else cluster


def _ago(when: Any, now: datetime.datetime) -> str:
    t = parse_time(when) if not isinstance(when, datetime.datetime) else when
    if t is None:
        return "?"
    seconds = int((now - t).total_seconds())
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"
