"""The list views: Cells, target groups and clusters, one row each."""

from __future__ import annotations

import base64
import contextlib
import datetime
from collections.abc import Sequence

from okra_controllers.api.kinds import CLUSTERSET
from okra_controllers.api.v1alpha1.cell import DEFAULT_VERSION_LABEL, Cell
from okra_controllers.cli.render.common import Col, Paint, _meta, age, step_label, table
from okra_controllers.cli.view import Obj, cell_selector, created, selects


def cell_row(c: Obj, now: datetime.datetime) -> list[str]:
    """NAME, PHASE, HEALTH, STABLE, CANARY, WEIGHT, STEP, AGE of one Cell."""
    st = c.get("status") or {}
    canary = ((c.get("spec") or {}).get("updateStrategy") or {}).get("canary") or {}
    total = len(canary.get("steps") or [])
    index = st.get("currentStepIndex") if st.get("canaryVersion") else None
    weight = st.get("canaryWeight")
    return [
        str(_meta(c).get("name")),
        st.get("phase") or "Pending",
        st.get("health") or "-",
        st.get("stableVersion") or "-",
        st.get("canaryVersion") or "-",
        "-" if weight is None or not st.get("canaryVersion") else str(weight),
        step_label(index, total) if total else "-",
        age(created(c), now),
    ]


def render_cells(
    cells: Sequence[Obj],
    now: datetime.datetime,
    *,
    color: bool = False,
    namespaces: bool = False,
    wide: bool = False,
) -> str:
    """`okra get cells`: one line per Cell; `namespaces` adds a NAMESPACE column (`-A`),
    `wide` the listener and the status message."""
    paint = Paint(color)
    head = ["NAME", "PHASE", "HEALTH", "STABLE", "CANARY", "WEIGHT", "STEP", "AGE"]
    rows: list[list[Col]] = [
        [*(["NAMESPACE"] if namespaces else []), *head, *(["LISTENER", "MESSAGE"] if wide else [])]
    ]
    for c in sorted(
        cells, key=lambda c: (str(_meta(c).get("namespace")), str(_meta(c).get("name")))
    ):
        name, phase, health, *rest = cell_row(c, now)
        extra: list[Col] = []
        if wide:
            ingress = (c.get("spec") or {}).get("ingress") or {}
            lb = ingress.get("awsApplicationLoadBalancer") or ingress.get("awsNetworkLoadBalancer")
            listener = str((lb or {}).get("listenerARN") or "-")
            if ingress.get("type") == "AWSRoute53":  # the weighted name, not a listener
                listener = str((ingress.get("awsRoute53") or {}).get("recordName") or "-")
            extra = [listener.rsplit("/", 3)[-3] if "/" in listener else listener]
            extra.append(str((c.get("status") or {}).get("message") or "-"))
        rows.append(
            [
                *([str(_meta(c).get("namespace"))] if namespaces else []),
                name,
                (phase, ""),
                (health, ""),
                *rest,
                *extra,
            ]
        )
    if len(rows) == 1:
        return "No cells found.\n"
    return "\n".join(table(rows, paint, indent="")) + "\n"


def target_group_rows(
    target_groups: Sequence[Obj], cells: Sequence[Obj], configs: Sequence[Obj]
) -> list[tuple[str, str, str, str, str]]:
    """(name, version, cell, weight, arn) per target group. The version is read with
    the labels of the first Cell selecting it (default label otherwise), the weight
    from that Cell's load balancer config (`-` when not in it)."""
    config_by_name = {(_meta(c).get("namespace"), _meta(c).get("name")): c for c in configs}
    out = []
    for tg in sorted(target_groups, key=lambda t: str(_meta(t).get("name"))):
        arn = str((tg.get("spec") or {}).get("arn") or "")
        labels = _meta(tg).get("labels") or {}
        ns = _meta(tg).get("namespace")
        owner = next(
            (
                c
                for c in cells
                if _meta(c).get("namespace") in (ns, None) and selects(cell_selector(c), tg)
            ),
            None,
        )
        version_labels = [DEFAULT_VERSION_LABEL]
        if owner is not None:
            with contextlib.suppress(ValueError):
                version_labels = Cell.model_validate(owner).spec.labels_for_version()
        version = next((labels[k] for k in version_labels if k in labels), "-")
        weight = "-"
        cell_name = "-"
        if owner is not None:
            cell_name = str(_meta(owner).get("name"))
            config = config_by_name.get((_meta(owner).get("namespace"), cell_name)) or {}
            for f in (config.get("spec") or {}).get("forwardTargetGroups") or []:
                if f.get("arn") == arn:
                    weight = str(f.get("weight"))
        out.append((str(_meta(tg).get("name")), version, cell_name, weight, arn))
    return out


def render_target_groups(
    target_groups: Sequence[Obj],
    cells: Sequence[Obj],
    configs: Sequence[Obj],
    *,
    show_cell: bool = True,
    color: bool = False,
    namespaces: bool = False,
    wide: bool = False,
) -> str:
    """`okra get targetgroups`: (namespace,) name, version, (cell,) weight in the config,
    ARN; `wide` adds the labels."""
    rows: list[list[Col]] = [
        [
            *(["NAMESPACE"] if namespaces else []),
            "NAME",
            "VERSION",
            *(["CELL"] if show_cell else []),
            "WEIGHT",
            "ARN",
            *(["LABELS"] if wide else []),
        ]
    ]
    by_name = {(_meta(t).get("namespace"), str(_meta(t).get("name"))): t for t in target_groups}
    ordered = sorted(
        target_groups, key=lambda t: (str(_meta(t).get("namespace")), str(_meta(t).get("name")))
    )
    for tg in ordered:
        ns = _meta(tg).get("namespace")
        for name, version, cell, weight, arn in target_group_rows([tg], cells, configs):
            labels = _meta(by_name[(ns, name)]).get("labels") or {}
            rows.append(
                [
                    *([str(ns)] if namespaces else []),
                    name,
                    version,
                    *([cell] if show_cell else []),
                    weight,
                    arn,
                    *(
                        [",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "-"]
                        if wide
                        else []
                    ),
                ]
            )
    if len(rows) == 1:
        return "No target groups found.\n"
    return "\n".join(table(rows, Paint(color), indent="")) + "\n"


ARGOCD_SECRET_TYPE = "argocd.argoproj.io/secret-type"


def cluster_rows(secrets: Sequence[Obj]) -> list[dict[str, object]]:
    """What `okra get clusters` shows of each Argo CD cluster Secret: its name, the cluster's
    name and server (decoded from data or stringData), its labels without Argo CD's type
    label, and the ClusterSet that owns it. Never the `config` (it holds credentials)."""
    out: list[dict[str, object]] = []
    for s in sorted(secrets, key=lambda s: str(_meta(s).get("name"))):
        meta = _meta(s)
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != ARGOCD_SECRET_TYPE}
        owner = next(
            (
                r.get("name")
                for r in meta.get("ownerReferences") or []
                if r.get("kind") == CLUSTERSET.kind and r.get("controller")
            ),
            None,
        )
        out.append(
            {
                "name": meta.get("name"),
                "cluster": _secret_field(s, "name"),
                "server": _secret_field(s, "server"),
                "labels": labels,
                "clusterSet": owner,
            }
        )
    return out


def _secret_field(secret: Obj, key: str) -> str | None:
    plain = (secret.get("stringData") or {}).get(key)
    if plain is not None:
        return str(plain)
    encoded = (secret.get("data") or {}).get(key)
    if encoded is None:
        return None
    try:
        return base64.b64decode(encoded).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def render_clusters(
    secrets: Sequence[Obj], *, color: bool = False, namespaces: bool = False
) -> str:
    """`okra get clusters`: one line per Argo CD cluster Secret."""
    paint = Paint(color)
    head = ["NAME", "CLUSTER", "SERVER", "CLUSTERSET", "LABELS"]
    rows: list[list[Col]] = [[*(["NAMESPACE"] if namespaces else []), *head]]
    ns_of = {str(_meta(s).get("name")): str(_meta(s).get("namespace")) for s in secrets}
    for r in cluster_rows(secrets):
        labels = r["labels"]
        assert isinstance(labels, dict)
        rows.append(
            [
                *([ns_of.get(str(r["name"]), "-")] if namespaces else []),
                str(r["name"]),
                str(r["cluster"] or "-"),
                str(r["server"] or "-"),
                str(r["clusterSet"] or "-"),
                ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "-",
            ]
        )
    if len(rows) == 1:
        return "No clusters found.\n"
    return "\n".join(table(rows, paint, indent="")) + "\n"
