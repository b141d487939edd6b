"""What the controllers that hold rollouts share about Freezes and ClusterFreezes: the
informers they read (`sources`), the hold of one object read from those caches, the objects
a Freeze, ClusterFreeze or Namespace event wakes, and the metric of rollouts held.

A ClusterFreeze's `namespaceSelector` is matched against the labels of the Namespace as the
manager's Namespace informer holds it. A manager run with `--namespace` still sees every
ClusterFreeze (they are cluster-scoped) and applies them to the objects of its namespace."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import Gauge

from okra_controllers.api.kinds import CLUSTER_FREEZE, FREEZE, NAMESPACE
from okra_controllers.api.v1alpha1.freeze import ClusterFreeze
from okra_controllers.freeze.hold import (
    Hold,
    Invalid,
    Parsed,
    cluster_wide,
    hold_at,
    next_hold,
    parse,
    selects,
)
from okra_runtime.cache import Store
from okra_runtime.gvk import GVK
from okra_runtime.informer import Informer
from okra_runtime.metrics import REGISTRY
from okra_runtime.reconcile import Request

HELD = Gauge(
    "okra_rollout_held_by_freeze",
    "1 while a Cell or ProgressiveRollout is held by a Freeze or ClusterFreeze (no new step "
    "starts), else 0; "
    "sum() counts the rollouts held",
    ["kind", "namespace", "name"],
    registry=REGISTRY,
)


class Informers(Protocol):
    """What `sources` needs of the manager (okra_runtime.manager.Manager)."""

    def informer_for(self, kind: GVK) -> Informer: ...


@dataclass(frozen=True)
class Sources:
    """The caches a hold is read from: Freezes, ClusterFreezes and Namespaces (for a
    ClusterFreeze's namespaceSelector); None: not read."""

    freezes: Store
    cluster: Store | None = None
    namespaces: Store | None = None


def sources(mgr: Informers) -> Sources:
    """The manager's shared informers of Freezes, ClusterFreezes and Namespaces."""
    return Sources(
        mgr.informer_for(FREEZE).store,
        mgr.informer_for(CLUSTER_FREEZE).store,
        mgr.informer_for(NAMESPACE).store,
    )


def _sources(s: Store | Sources) -> Sources:
    return s if isinstance(s, Sources) else Sources(s)


def namespace_labels(namespaces: Store | None, namespace: str) -> dict[str, str]:
    """The labels of `namespace` as the cache holds it ({} when not held)."""
    ns = namespaces.get(namespace, copy=False) if namespaces is not None else None
    labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    return dict(labels)


def _version(r: dict[str, Any]) -> tuple[str, str]:
    return (
        str(r["metadata"].get("name")),
        str(r["metadata"].get("resourceVersion") or repr(r.get("spec"))),
    )


CACHED = 4096
"""Answers kept (`_answer`): one per namespace, set of labels and set of Freeze versions."""
RECHECK = datetime.timedelta(seconds=60)
"""How long an answer is kept at most (a chain of windows followed only so far)."""
Answer = tuple[datetime.datetime, Hold | None, datetime.datetime | None]  # valid until, ...
_answers: dict[tuple[Any, ...], Answer] = {}


def _answer(
    src: Store | Sources, obj: dict[str, Any], now: datetime.datetime
) -> tuple[Hold | None, datetime.datetime | None]:
    """Which Freezes of `obj`'s namespace and ClusterFreezes (from the caches) hold it at
    `now`, and when one next starts to. Working it out follows cron schedules (tens of
    milliseconds for a few freezes on a busy machine), so the answer is kept until it can
    change: until the hold ends or a freeze starts, a Freeze, ClusterFreeze or the
    namespace's labels change, or a minute passes."""
    s = _sources(src)
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    labels = meta.get("labels") or {}
    raws = s.freezes.list(ns, copy=False)
    wide = s.cluster.list(copy=False) if s.cluster is not None else []
    ns_labels = namespace_labels(s.namespaces, ns) if wide else {}
    key = (
        ns,
        tuple(sorted(labels.items())),
        tuple(sorted(_version(r) for r in raws)),
        tuple(sorted(_version(r) for r in wide)),
        tuple(sorted(ns_labels.items())),
    )
    kept = _answers.get(key)
    if kept is not None and now < kept[0]:
        return kept[1], kept[2]
    parsed = [parse(f, cluster=False) for f in raws] + [parse(f, cluster=True) for f in wide]
    hold = hold_at(parsed, ns, labels, now, ns_labels)
    start = next_hold(parsed, ns, labels, now, ns_labels)
    valid = now + RECHECK
    for t in (hold.until if hold is not None else None, start):
        if t is not None:
            valid = min(valid, t)
    _answers.pop(key, None)
    _answers[key] = (valid, hold, start)
    while len(_answers) > CACHED:
        del _answers[next(iter(_answers))]
    return hold, start


def hold_of(freezes: Store | Sources, obj: dict[str, Any], now: datetime.datetime) -> Hold | None:
    """The Freezes of `obj`'s namespace and the ClusterFreezes (from the caches) that hold
    it at `now`."""
    return _answer(freezes, obj, now)[0]


def seconds_to_next(
    freezes: Store | Sources, obj: dict[str, Any], now: datetime.datetime
) -> float | None:
    """Seconds until a Freeze or ClusterFreeze next starts to apply to it (None: none
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


def objects_for_freeze(
    objects: Store, namespaces: Store | None = None
) -> Callable[[dict[str, Any]], list[Request]]:
    """Map a Freeze to the objects (of one kind, in `objects`) of its namespace that it
    selects, a ClusterFreeze to those it selects in every namespace (their labels read from
    `namespaces`): a freeze, or its end, is acted on at once. One the manager cannot read
    wakes all it could be about."""

    def mapper(raw: dict[str, Any]) -> list[Request]:
        f = parse(raw)
        if cluster_wide(f):
            within = objects.list(copy=False)
        else:
            within = objects.list(
                f.namespace if isinstance(f, Invalid) else f.metadata.namespace or "", copy=False
            )
        return _selected(f, within, namespaces)

    return mapper


def _selected(f: Parsed, objs: list[dict[str, Any]], namespaces: Store | None) -> list[Request]:
    out = []
    ns_labels: dict[str, dict[str, str]] = {}
    for obj in objs:
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or ""
        if ns not in ns_labels:
            ns_labels[ns] = namespace_labels(namespaces, ns)
        if selects(f, ns, meta.get("labels") or {}, ns_labels[ns]):
            out.append(Request(meta["name"], ns))
    return out


def objects_for_namespace(
    objects: Store, cluster: Store | None
) -> Callable[[dict[str, Any]], list[Request]]:
    """Map a Namespace to its objects (of one kind, in `objects`) while a ClusterFreeze
    selects namespaces by label: its labels changing may start or end a hold."""

    def mapper(raw: dict[str, Any]) -> list[Request]:
        raws = cluster.list(copy=False) if cluster is not None else []
        wide = [parse(f, cluster=True) for f in raws]
        if not any(_by_labels(f) for f in wide):
            return []
        ns = str((raw.get("metadata") or {}).get("name") or "")
        return [Request(o["metadata"]["name"], ns) for o in objects.list(ns, copy=False)]

    return mapper


def _by_labels(f: Parsed) -> bool:
    """Whether `f` picks namespaces by their labels."""
    if isinstance(f, Invalid):
        return f.cluster and (
            f.namespace_selector is None
            or bool(f.namespace_selector.model_dump(exclude_none=True, exclude_defaults=True))
        )
    return isinstance(f, ClusterFreeze) and bool(
        f.spec.namespace_selector.model_dump(exclude_none=True, exclude_defaults=True)
    )
