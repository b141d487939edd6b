"""What the Cells page shows of a system Cell: one card, pure functions from the
objects as the informers hold them (no I/O).

A system's application Cells (labelled with the system's and the application's names) are
not rows of their own: each sits in its system's card, beside what the system says of the
application (`status.applications[]`). The card shows the system's clusters (ready, or what
each waits for and since when, from `status.clusters[]`) and, per application, its phase,
the versions it comes from and goes to, the weights as AWS shows them (its Cell's load
balancer config's `status.applied`, by version and by cluster), the traffic reading if its
Cell has one, and its Checks (each one's last run, and the failed runs counted at the
current step). An application Cell whose system is not in the cache is a row as any Cell.

The card's actions, for the system and for each application, say why one would not act now
as `okra promote | abort | retry SYSTEM [--application NAME]` would (`cli.fanout`): the
application Cells' own refusals and what the system decides over them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from okra_controllers.cell.observe import PAUSED
from okra_controllers.cell.system.names import APP_LABEL, CHECK_LABEL, SYSTEM_LABEL, dns
from okra_controllers.cli.dashboard.model import _iso, _meta, key
from okra_controllers.cli.fanout import Target, refusal
from okra_controllers.cli.system import is_system

Obj = dict[str, Any]


def system_of(cell: Obj, systems: Mapping[str, Obj]) -> str | None:
    """The key (`namespace/name`) of the system Cell among `systems` that `cell` is an
    application Cell of; None for a Cell of no system (or of one not in `systems`)."""
    labels = _meta(cell).get("labels") or {}
    system, app = labels.get(SYSTEM_LABEL), labels.get(APP_LABEL)
    if not system or not app:
        return None
    k = f"{_meta(cell).get('namespace') or ''}/{system}"
    return k if k in systems and is_system(systems[k]) else None


def cluster_weights(cell: Obj, config: Obj | None) -> dict[str, int]:
    """Target group name -> weight as okra last read it from AWS (`status.applied` of the
    application Cell's load balancer config: an ALB or NLB forward, whose ARNs are named
    by the Cell's `status.targetGroups`, or Route 53 records, each named by its target
    group: its SetIdentifier); empty before anything was applied."""
    applied = ((config or {}).get("status") or {}).get("applied") or {}
    names = {
        str(t.get("arn")): str(t.get("name"))
        for t in (cell.get("status") or {}).get("targetGroups") or []
    }
    out: dict[str, int] = {}
    for f in applied.get("forwardTargetGroups") or []:
        arn = str(f.get("arn"))
        name = names.get(arn, arn)
        out[name] = out.get(name, 0) + int(f.get("weight") or 0)
    for r in applied.get("records") or []:
        out[str(r.get("setIdentifier"))] = int(r.get("weight") or 0)
    return out


def _clusters(st: Obj) -> list[Obj]:
    return [
        {
            "name": c.get("name"),
            "eks": c.get("eksClusterName") or "",
            "ready": bool(c.get("ready")),
            "message": c.get("message") or "",
            "since": _iso(c.get("waitingSince")) if not c.get("ready") else None,
        }
        for c in st.get("clusters") or []
    ]


def _checks(system: str, app: Obj, checks: Iterable[Obj]) -> list[Obj]:
    """The application's Checks: which check of the spec each runs, on which cluster (a
    Check per cluster when their queries differ), its last run, and the failed runs the
    system counted at the current step."""
    name = str(app.get("name"))
    tries = {str(t.get("name")): t for t in app.get("checkTries") or []}
    clusters = list(dict.fromkeys([*(app.get("clusters") or []), *(app.get("serving") or [])]))
    out = []
    for check in checks:
        meta = _meta(check)
        st = check.get("status") or {}
        labels = meta.get("labels") or {}
        spec_name = str(labels.get(CHECK_LABEL) or "")
        check_name = str(meta.get("name"))
        cluster = next((c for c in clusters if dns(system, name, spec_name, c) == check_name), "")
        results = (st.get("analysis") or {}).get("results") or []
        last = results[-1] if results else {}
        t = tries.get(check_name) or {}
        out.append(
            {
                "name": check_name,
                "check": spec_name,
                "cluster": cluster,
                "passed": st.get("lastPassed"),
                "lastRun": _iso(st.get("lastRunTime")),
                "value": last.get("value"),
                "message": last.get("message") or "",
                "failed": int(t.get("failed") or 0),
            }
        )
    out.sort(key=lambda c: (c["check"], c["cluster"], c["name"]))
    return out


def _cluster_weight_list(system: str, app: Obj, weights: Mapping[str, int]) -> list[Obj]:
    """Each cluster of the application (those it comes from, then those it goes to) with
    the weight AWS shows for its target group, when AWS shows one."""
    name = str(app.get("name"))
    out = []
    sets = [(app.get("servingVersion") or "", app.get("serving") or [])]
    sets.append((app.get("version") or "", app.get("clusters") or []))
    seen = set()
    for version, clusters in sets:
        for c in clusters:
            if c in seen:
                continue
            seen.add(c)
            tg = dns(system, name, c)
            out.append({"cluster": c, "version": version, "weight": weights.get(tg)})
    return out


VERBS = ("promote", "abort", "retry")
"""The actions a system and its applications offer that can have nothing to do (pause and
resume always act)."""


def app_actions(system: Obj, app: str, child: Obj, row: Obj | None, held: bool) -> Obj:
    """Why each of `VERBS` on application `app` (its Cell `child`, `row` as the Cells list
    computes it) would not act now: None where it would; `held` when the system is paused."""
    if row is None:
        return {v: f"application {app} has no Cell yet" for v in VERBS}
    t = Target(app, str(_meta(child).get("name")))
    return {v: refusal(system, v, t, held) or row["actions"][v] for v in VERBS}


def system_actions(system: Obj, apps: Iterable[Obj], held: bool) -> Obj:
    """The same for the whole system (`apps`: each application's `actions` as if the system
    were not paused): a verb acts when it acts on one application at least; promote also
    when the system is paused (it resumes it)."""
    apps = list(apps)
    name = _meta(system).get("name")
    out: Obj = {}
    for v in VERBS:
        if v == "promote" and held:
            out[v] = None
        elif not apps:
            out[v] = f"system {name} has no Cell for any application yet"
        elif any(a["actions"][v] is None for a in apps):
            out[v] = None
        else:
            why = "; ".join(f"{a['name']}: {a['actions'][v]}" for a in apps)
            out[v] = f"nothing to {v}: {why}"
    return out


def system_row(
    cell: Obj,
    children: Mapping[str, tuple[Obj, Obj, Obj | None]],
    checks: Iterable[Obj],
) -> Obj:
    """The card of a system Cell. `children`: application name -> (its Cell, its row as
    the Cells list computes it, its load balancer config); `checks`: the Checks of the
    namespace (those of this system are picked by their labels)."""
    meta, st = _meta(cell), cell.get("status") or {}
    name = str(meta.get("name"))
    ours = [
        c
        for c in checks
        if (_meta(c).get("labels") or {}).get(SYSTEM_LABEL) == name
        and _meta(c).get("namespace") == meta.get("namespace")
    ]
    spec_apps = [str(a.get("name")) for a in (cell.get("spec") or {}).get("applications") or []]
    status_apps = {str(a.get("name")): a for a in st.get("applications") or []}
    held = (meta.get("annotations") or {}).get(PAUSED) == "true"
    applications, unheld = [], []
    for app_name in dict.fromkeys([*spec_apps, *status_apps]):
        a = status_apps.get(app_name) or {"name": app_name}
        child_cell, child_row, config = children.get(app_name) or ({}, None, None)
        weights = cluster_weights(child_cell, config) if child_row is not None else {}
        app_checks = [c for c in ours if (_meta(c).get("labels") or {}).get(APP_LABEL) == app_name]
        applications.append(
            {
                "name": app_name,
                "phase": a.get("phase") or "Pending",
                "message": a.get("message") or "",
                "cell": a.get("cell") or "",
                "version": a.get("version") or "",
                "clusters": list(a.get("clusters") or []),
                "servingVersion": a.get("servingVersion") or "",
                "serving": list(a.get("serving") or []),
                "weight": a.get("weight"),
                "rollbackAt": _iso(a.get("rollbackAt")),
                "child": child_row,
                "clusterWeights": _cluster_weight_list(name, a, weights),
                "checks": _checks(name, a, app_checks),
                "actions": app_actions(cell, app_name, child_cell, child_row, held),
            }
        )
        if child_row is not None:
            unheld.append(
                {
                    "name": app_name,
                    "actions": app_actions(cell, app_name, child_cell, child_row, False),
                }
            )
    return {
        "key": key(cell),
        "namespace": meta.get("namespace"),
        "name": name,
        "system": True,
        "phase": st.get("phase") or "Pending",
        "health": st.get("health") or "",
        "message": st.get("message") or "",
        "paused": held,
        "clusters": _clusters(st),
        "applications": applications,
        "actions": system_actions(cell, unheld, held),
    }
