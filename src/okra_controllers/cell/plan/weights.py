"""Weights: how a version's share becomes forward entries, and whether AWS shows them.

A version's share is split evenly across its target groups (the remainder to the last
by name) and zero shares leave the rule, so every planned forward list totals exactly
100. A step that moves weight completes only once AWS shows exactly what was planned
(`applied`), which is Argo Rollouts' `--aws-verify-target-group`, always on.

A target group can be in both versions of a walk (two AWSTargetGroups with its ARN, one
per version: a system keeping one of its clusters, {a, b} to {a, c}). The walk is then
planned per target group (`walk_forward`): each starts at its share of the stable
version's split and ends at its share of the canary's; one whose share is the same at
both ends keeps it at every step, the others move monotonically, unit by unit, the
ones losing weight giving exactly what the ones gaining it take. The rule lists each
target group once.
"""

from __future__ import annotations

import hashlib
import json

from okra_controllers.api.v1alpha1.cell import TargetGroupWeight
from okra_controllers.cell.plan.model import Forward, Observed, Plan
from okra_controllers.cell.versions import TargetGroup, split_evenly

TOTAL = 100
"""What every planned forward list totals."""


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


def overlap(stable: list[TargetGroup], canary: list[TargetGroup]) -> list[str]:
    """The target groups (by name, the stable side's) that are in both versions."""
    arns = {tg.arn for tg in canary}
    return [tg.name for tg in stable if tg.arn in arns]


def walk_forward(
    stable: list[TargetGroup], canary: list[TargetGroup], weight: int
) -> tuple[Forward, ...]:
    """The forward list with the canary at `weight` percent of the walk. Versions with no
    target group in common: the stable version's split of 100 - `weight` and the canary's
    of `weight`. Otherwise planned per target group (the module's docstring); a target
    group in both is named as on the stable side."""
    if not overlap(stable, canary):
        return forward_for([(stable, TOTAL - weight), (canary, weight)])
    before, after, moves = _ends(stable, canary)
    down = {arn: before[arn] - after.get(arn, 0) for arn in moves if before[arn] > after[arn]}
    up = {arn: after[arn] - before.get(arn, 0) for arn in moves if after[arn] > before[arn]}
    moved = (sum(up.values()) * max(0, min(weight, TOTAL)) + TOTAL // 2) // TOTAL
    given, taken = _fill(moved, up), _fill(moved, down)
    by_arn = {tg.arn: tg for tg in canary} | {tg.arn: tg for tg in stable}
    out = []
    for arn, tg in sorted(by_arn.items(), key=lambda kv: kv[1].name):
        w = before.get(arn, 0) + given.get(arn, 0) - taken.get(arn, 0)
        if w > 0:
            out.append(Forward(tg.name, arn, w, tg.version.text))
    return tuple(out)


def walked_share(
    forward: tuple[Forward, ...], stable: list[TargetGroup], canary: list[TargetGroup]
) -> int:
    """How far `forward` is along the walk from `stable` to `canary`, in percent: the
    canary's weight when they have no target group in common, else the share of the
    weight that moves which has moved (with 50 to move, in steps of 2)."""
    if not overlap(stable, canary):
        arns = {tg.arn for tg in canary}
        return sum(f.weight for f in forward if f.arn in arns)
    before, after, moves = _ends(stable, canary)
    now = {f.arn: f.weight for f in forward}
    gained = sum(max(0, now.get(a, 0) - before.get(a, 0)) for a in moves if after[a] > before[a])
    total = sum(after[a] - before[a] for a in moves if after[a] > before[a])
    return round(gained * TOTAL / total) if total else TOTAL


def _ends(
    stable: list[TargetGroup], canary: list[TargetGroup]
) -> tuple[dict[str, int], dict[str, int], list[str]]:
    """Each target group's weight before and after the walk, and those that differ."""
    before = {f.arn: f.weight for f in forward_for([(stable, TOTAL)])}
    after = {f.arn: f.weight for f in forward_for([(canary, TOTAL)])}
    moves = sorted(a for a in before.keys() | after.keys() if before.get(a, 0) != after.get(a, 0))
    for a in moves:
        before.setdefault(a, 0)
        after.setdefault(a, 0)
    return before, after, moves


def _fill(amount: int, room: dict[str, int]) -> dict[str, int]:
    """`amount` units given one at a time, the h-th to the target group furthest behind
    its proportional part of h (`room`: what each takes at the end; ties by ARN), so that
    each one's part grows with `amount` and stays within a unit of its proportional part.
    (Behind its own share of the whole, as this once chose, gave the first units one each
    to every target group, however small its room, and left a large one 1.75 behind.)"""
    got = dict.fromkeys(room, 0)
    total = sum(room.values())
    for h in range(1, amount + 1):
        # The deficit h * room / total - got, times total: integers, so ties are exact.
        arn = min(
            (a for a in room if got[a] < room[a]),
            key=lambda a: (got[a] * total - h * room[a], a),
        )
        got[arn] += 1
    return got


def forward_hash(forward: tuple[Forward, ...]) -> str:
    """The forward config a check runs for (its results are paired with it)."""
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
