"""The canary steps read for what they mean: the weight after each, a pause's end, the hash.

The step hash identifies a rollout's plan: a change to the steps (or to the version)
starts the rollout over. The steps themselves come from `bluegreen.steps_of`, which
reads a BlueGreen strategy as a canary too.
"""

from __future__ import annotations

import datetime
import hashlib
import json

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.cell import CellSpec
from okra_controllers.api.v1alpha1.strategy import CanaryStep


def has_checks(spec: CellSpec) -> bool:
    return bool(spec.prechecks or spec.postchecks)


def step_hash(version: str, spec: CellSpec) -> str:
    canary = spec.update_strategy.canary
    parts: list[object] = [
        version,
        canary.model_dump(mode="json", by_alias=True) if canary else None,
    ]
    blue_green = spec.update_strategy.blue_green
    if spec.update_strategy.type == "BlueGreen":
        parts.append(blue_green.model_dump(mode="json", by_alias=True) if blue_green else None)
    raw = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def weight_before(steps: list[CanaryStep], index: int) -> int:
    """The canary weight once steps[:index] have completed."""
    w = 0
    for step in steps[:index]:
        if step.set_weight is not None:
            w = step.set_weight
        elif step.step_weight is not None:
            w = min(100, w + step.step_weight)
    return w


def pause_expiry(step: CanaryStep, now: datetime.datetime) -> datetime.datetime | None:
    """When a `pause` step started `now` ends; None: it waits until promoted."""
    assert step.pause is not None
    d = step.pause.duration
    if d is None or d == "":
        return None
    seconds = float(d) if isinstance(d, int) or d.isdigit() else parse_duration(d)
    return now + datetime.timedelta(seconds=seconds)
