"""Which Cells an event of another kind wakes: an AWSTargetGroup wakes the Cells whose
selector matches it (from an index of the Cells' selector terms, so the cost is that of the
matching Cells, not of every Cell), a cluster Secret or an Argo CD Application the Cells
beside it that have `spec.argocd`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from okra_controllers.api.kinds import SECRET
from okra_controllers.api.v1alpha1.cell import DEFAULT_VERSION_LABEL
from okra_controllers.api.v1alpha1.spelling import normalise_cell
from okra_controllers.cell.argocd import SECRET_TYPE_LABEL
from okra_runtime.cache import Store
from okra_runtime.reconcile import Request

SELECTOR_INDEX = "target-group-selector"
"""Cells by each `key=value` of their target group selector (`*`: an empty selector)."""


def _target_group_selector(cell: dict[str, Any]) -> dict[str, Any] | None:
    """The Cell's target group labels; None for a Cell with no load balancer."""
    ingress = (cell.get("spec") or {}).get("ingress") or {}
    lb = (
        ingress.get("awsNetworkLoadBalancer")
        if ingress.get("type") == "AWSNetworkLoadBalancer"
        else None
    ) or ingress.get("awsApplicationLoadBalancer")
    if ingress.get("type") == "AWSRoute53":
        lb = ingress.get("awsRoute53")
    if not lb:
        return None
    sel: dict[str, Any] = (lb.get("targetGroupSelector") or {}).get("matchLabels") or {}
    return sel


def _version_labels(cell: dict[str, Any]) -> list[str]:
    """The labels the Cell reads a target group's version from (`labels_for_version`,
    from the raw object). A target group with none of them is no version of the Cell's:
    the plan never looks at it, so its events do not wake the Cell (thousands of such
    groups under a selector that matches them all would otherwise keep every Cell
    queued, and a Cell rolling out would wait behind them)."""
    spec = normalise_cell(cell.get("spec") or {})  # the original's spelling too
    labels = [v for v in spec.get("versionLabels") or [] if isinstance(v, str)]
    versioned_by = spec.get("versionedBy")
    by = versioned_by.get("label") if isinstance(versioned_by, dict) else None
    if isinstance(by, str) and by not in labels:
        labels.append(by)
    return labels or [DEFAULT_VERSION_LABEL]


def _selector_terms(cell: dict[str, Any]) -> list[str]:
    sel = _target_group_selector(cell)
    if sel is None:
        return []
    return [f"{k}={v}" for k, v in sel.items()] or ["*"]


def cells_for_target_group(cells: Store) -> Callable[[dict[str, Any]], list[Request]]:
    """Map an AWSTargetGroup to the Cells in its namespace whose selector matches it.

    Runs for every AWSTargetGroup event, thousands at start-up: the candidates come from
    an index of the Cells' selector terms (a Cell whose selector matches has each of its
    terms among the target group's labels), so the cost is that of the matching Cells,
    not of every Cell in the cache."""
    if not cells.has_index(SELECTOR_INDEX):
        cells.add_index(SELECTOR_INDEX, _selector_terms)

    def mapper(tg: dict[str, Any]) -> list[Request]:
        ns = tg["metadata"].get("namespace") or ""
        labels = tg["metadata"].get("labels") or {}
        keys = cells.keys_by_index(SELECTOR_INDEX, "*")
        for k, v in labels.items():
            keys |= cells.keys_by_index(SELECTOR_INDEX, f"{k}={v}")
        out = []
        for key in sorted(keys):
            c = cells.peek(key)
            if c is None or (c["metadata"].get("namespace") or "") != ns:
                continue
            sel = _target_group_selector(c)
            if (
                sel is not None
                and all(labels.get(k) == v for k, v in sel.items())
                and any(k in labels for k in _version_labels(c))
            ):
                out.append(Request(c["metadata"]["name"], ns))
        return out

    return mapper


def cells_with_argocd(cells: Store) -> Callable[[dict[str, Any]], list[Request]]:
    """Map a cluster Secret or an Argo CD Application to the Cells beside it that have
    `spec.argocd` (for a Secret: whose selector matches it)."""

    def mapper(obj: dict[str, Any]) -> list[Request]:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or ""
        labels = meta.get("labels") or {}
        secret = obj.get("kind") == SECRET.kind
        if secret and labels.get(SECRET_TYPE_LABEL) != "cluster":
            return []
        out = []
        for c in cells.list(ns):
            argo = (c.get("spec") or {}).get("argocd")
            if not argo:
                continue
            sel = ((argo.get("clusterSecret") or {}).get("selector") or {}).get("matchLabels")
            if secret and not all(labels.get(k) == v for k, v in (sel or {}).items()):
                continue
            out.append(Request(c["metadata"]["name"], ns))
        return out

    return mapper
