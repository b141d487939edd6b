"""Weights: how a version's share becomes forward entries, and whether AWS shows them.

A version's share is split evenly across its target groups (the remainder to the last
by name) and zero shares leave the rule, so every planned forward list totals exactly
100. A step that moves weight completes only once AWS shows exactly what was planned
(`applied`), which is Argo Rollouts' `--aws-verify-target-group`, always on.
"""

from __future__ import annotations

import hashlib
import json

from okra_controllers.api.v1alpha1.cell import TargetGroupWeight
from okra_controllers.cell.plan.model import Forward, Observed, Plan
from okra_controllers.cell.versions import TargetGroup, split_evenly


def forward_for(weights: list[tuple[list[TargetGroup], int]]) -> tuple[Forward, ...]:
    """Forward entries for (target groups, total weight) pairs; zero weights leave the rule."""
    out: list[Forward] = []
    for tgs, total in weights:
        if total <= 0:
            continue
        out.extend(
            Forward(tg.name, tg.arn, w, tg.version.text) for tg, w in split_evenly(total, tgs)
        )
    return tuple(out)


def forward_hash(forward: tuple[Forward, ...]) -> str:
    """The forward config a check runs for (seed 002: results are paired with it)."""
    raw = json.dumps(sorted((f.arn, f.weight) for f in forward))
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def weights_status(p: Plan) -> None:
    """The planned weights, as the Cell's status shows them."""
    assert p.forward is not None
    p.status.target_groups = [
        TargetGroupWeight(name=f.name, arn=f.arn, weight=f.weight, version=f.version)
        for f in p.forward
    ]


def same_weights(a: tuple[Forward, ...], b: tuple[Forward, ...]) -> bool:
    """The two forward lists give the same target groups the same weights."""
    return sorted((f.arn, f.weight) for f in a) == sorted((f.arn, f.weight) for f in b)


def applied(o: Observed, forward: tuple[Forward, ...]) -> bool:
    """AWS shows exactly `forward` (the config holds it and says it is applied)."""
    return o.synced and o.forward is not None and same_weights(o.forward, forward)
