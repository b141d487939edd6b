"""What the controllers that hold rollouts share about Freezes: the kind, the hold
of one object read from the informer's cache, the objects a Freeze event wakes, and the
metric of rollouts held."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from typing import Any

from prometheus_client import Gauge

from okra_controllers.freeze.hold import Hold, Invalid, hold_at, next_hold, parse, selects
from okra_runtime.cache import Store
from okra_runtime.metrics import REGISTRY
from okra_runtime.reconcile import Request

HELD = Gauge(
    "okra_rollout_held_by_freeze",
    "1 while a Cell or ProgressiveRollout is held by a Freeze (no new step starts), else 0; "
    "sum() counts the rollouts held",
    ["kind", "namespace", "name"],
    registry=REGISTRY,
)


CACHED = 4096
"""Answers kept (`_answer`): one per namespace, set of labels and set of Freeze versions."""
RECHECK = datetime.timedelta(seconds=60)
"""How long an answer is kept at most (a chain of windows followed only so far)."""
Answer = tuple[datetime.datetime, Hold | None, datetime.datetime | None]  # valid until, ...
_answers: dict[tuple[Any, ...], Answer] = {}


def _answer(
    freezes: Store, obj: dict[str, Any], now: datetime.datetime
) -> tuple[Hold | None, datetime.datetime | None]:
    """Which Freezes of `obj`'s namespace (from the cache) hold it at `now`, and when one
    next starts to. Working it out follows cron schedules (tens of milliseconds for a few
    freezes on a busy machine), so the answer is kept until it can change: until the hold
    ends or a freeze starts, a Freeze changes, or a minute passes."""
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    labels = meta.get("labels") or {}
    raws = freezes.list(ns, copy=False)
    key = (
        ns,
        tuple(sorted(labels.items())),
        tuple(
            sorted(
                (
                    str(r["metadata"].get("name")),
                    str(r["metadata"].get("resourceVersion") or repr(r.get("spec"))),
                )
                for r in raws
            )
        ),
    )
    kept = _answers.get(key)
    if kept is not None and now < kept[0]:
        return kept[1], kept[2]
    parsed = [parse(f) for f in raws]
    hold = hold_at(parsed, ns, labels, now)
    start = next_hold(parsed, ns, labels, now)
    valid = now + RECHECK
    for t in (hold.until if hold is not None else None, start):
        if t is not None:
            valid = min(valid, t)
    _answers.pop(key, None)
    _answers[key] = (valid, hold, start)
    while len(_answers) > CACHED:
        del _answers[next(iter(_answers))]
    return hold, start


def hold_of(freezes: Store, obj: dict[str, Any], now: datetime.datetime) -> Hold | None:
    """The Freezes of `obj`'s namespace (from the cache) that hold it at `now`."""
    return _answer(freezes, obj, now)[0]


def seconds_to_next(freezes: Store, obj: dict[str, Any], now: datetime.datetime) -> float | None:
    """Seconds until a Freeze of `obj`'s namespace next starts to apply to it (None: none
    will): the object is looked at again then, to hold at its next step boundary."""
    start = _answer(freezes, obj, now)[1]
    return None if start is None else max(0.0, (start - now).total_seconds())


def report_held(kind: str, namespace: str, name: str, held: bool | None) -> None:
    """The metric for one object (None: it is gone, its series too)."""
    if held is None:
        with contextlib.suppress(KeyError):
            HELD.remove(kind, namespace, name)
        return
    HELD.labels(kind, namespace, name).set(int(held))


def objects_for_freeze(objects: Store) -> Callable[[dict[str, Any]], list[Request]]:
    """Map a Freeze to the objects (of one kind, in `objects`) of its namespace that it
    selects: a freeze, or its end, is acted on at once. A Freeze the manager cannot read
    wakes its whole namespace."""

    def mapper(raw: dict[str, Any]) -> list[Request]:
        f = parse(raw)
        ns = f.namespace if isinstance(f, Invalid) else f.metadata.namespace or ""
        out = []
        for obj in objects.list(ns, copy=False):
            meta = obj.get("metadata") or {}
            if selects(f, ns, meta.get("labels") or {}):
                out.append(Request(meta["name"], ns))
        return out

    return mapper
