"""Freeze and ClusterFreeze: shapes and judges for the field walk
(test_every_field_acts_more.py).

A freeze is judged by what `freeze/hold.py` says of it over a small world: objects of its
namespace and of another, labelled and not, in namespaces labelled and not, every five
minutes over three quarters of an hour and a few seconds after each — which holds them
(`hold_at`: the freezes, why, by whom, until when) and when one next starts (`next_hold`).
"""

from __future__ import annotations

import datetime
from typing import Any

from okra_controllers.api.v1alpha1.freeze import ClusterFreeze, Freeze
from okra_controllers.freeze.hold import hold_at, next_hold

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
TIMES = [T0 + datetime.timedelta(minutes=m, seconds=s) for m in range(-5, 45, 5) for s in (0, 8)]
LABELS: list[dict[str, str]] = [{}, {"walked": "walked"}, {"app": "web"}]
"""An object's labels: none, those the walker writes in a map, another's."""
NAMESPACE_LABELS: list[dict[str, str]] = [{}, {"walked": "walked"}, {"env": "prod"}]

FREEZE_SHAPES: dict[str, dict[str, Any]] = {
    "manual": {"reason": "release week"},
    "recurring": {
        "reason": "nightly batch",
        "windows": [{"schedule": "*/15 * * * *", "duration": "5m"}],
    },
}
"""A freeze of each shape: manual (from `start` to `until`), and recurring (windows)."""
CLUSTER_FREEZE_SHAPES: dict[str, dict[str, Any]] = {
    **FREEZE_SHAPES,
    "by-namespace": {"reason": "prod only", "namespaceSelector": {"matchLabels": {"env": "prod"}}},
}


def _held(f: Freeze | ClusterFreeze, namespaces: list[str]) -> list[Any]:
    out: list[Any] = []
    for ns in namespaces:
        for ns_labels in NAMESPACE_LABELS:
            for labels in LABELS:
                for t in TIMES:
                    out.append(repr(hold_at([f], ns, labels, t, ns_labels)))
                    out.append(next_hold([f], ns, labels, t, ns_labels))
    return out


def freeze_outputs(raw: dict[str, Any]) -> list[Any]:
    """Whom the Freeze holds, until when, and when it next starts, in its namespace and
    another."""
    f = Freeze.model_validate(raw)
    return _held(f, [f.metadata.namespace or "", "other"])


def cluster_freeze_outputs(raw: dict[str, Any]) -> list[Any]:
    """As for a Freeze, in two namespaces (a ClusterFreeze picks them by their labels)."""
    return _held(ClusterFreeze.model_validate(raw), ["one", "other"])
