"""Which Freezes and ClusterFreezes hold an object at a time, and until when: a pure function
of the freezes (as the API server holds them), the object's namespace and labels, the labels
of that namespace, and the time.

A Freeze holds the objects of its namespace that its selector matches; a ClusterFreeze those
its selector matches in every namespace its namespaceSelector matches. Both are one union: an
object is held while any of them applies, until none does. One the manager
cannot read (a schedule or time zone that is no such thing: the API server's schema cannot
tell) holds them too, until it is fixed or deleted, and says what is wrong with it: a freeze
someone meant is never silently ignored, and holding never keeps a bad version serving
(rollbacks and aborts proceed). Until when: until no Freeze holds the object any more,
freezes that follow on from one another taken together.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from okra_controllers.api.kinds import CLUSTER_FREEZE, FREEZE
from okra_controllers.api.v1alpha1.freeze import (
    ClusterFreeze,
    Freeze,
    FreezeSelector,
    NamespaceSelector,
)
from okra_controllers.freeze.windows import applies, next_start
from okra_runtime.labels import selector_from_dict

UNION_LIMIT = 64
"""Freezes followed from one to the next that starts before it ends."""


@dataclass(frozen=True)
class Invalid:
    """A Freeze (or ClusterFreeze) the manager cannot read: what is wrong, and whom it holds
    meanwhile."""

    name: str
    namespace: str
    problem: str
    selector: FreezeSelector | None  # None: unreadable too; it holds its whole namespace
    reason: str = ""
    cluster: bool = False  # a ClusterFreeze
    # a ClusterFreeze's namespaces; None: unreadable too, it holds in every namespace
    namespace_selector: NamespaceSelector | None = None


Parsed = Freeze | ClusterFreeze | Invalid


def is_cluster(raw: Mapping[str, Any]) -> bool:
    """Whether `raw` is a ClusterFreeze: by its kind, or (as an informer's list gives it,
    without one) by having no namespace."""
    kind = raw.get("kind")
    if kind in (CLUSTER_FREEZE.kind, FREEZE.kind):
        return bool(kind == CLUSTER_FREEZE.kind)
    return not (raw.get("metadata") or {}).get("namespace")


def parse(raw: Mapping[str, Any], cluster: bool | None = None) -> Parsed:
    """A Freeze (`cluster`: a ClusterFreeze; None: `is_cluster`) as the API server holds
    it; `Invalid` (naming the field) when it is not one the manager can read."""
    if cluster is None:
        cluster = is_cluster(raw)
    try:
        if cluster:
            return ClusterFreeze.model_validate(raw)
        return Freeze.model_validate(raw)
    except ValidationError as e:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") if isinstance(raw.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        problems = []
        for err in e.errors():
            where = ".".join(str(p) for p in err["loc"])
            problems.append(f"{where}: {err['msg']}")
        selector: FreezeSelector | None
        try:
            selector = FreezeSelector.model_validate(spec.get("selector") or {})
        except ValidationError:
            selector = None
        namespaces: NamespaceSelector | None = None
        if cluster:
            try:
                namespaces = NamespaceSelector.model_validate(spec.get("namespaceSelector") or {})
            except ValidationError:
                namespaces = None
        reason = spec.get("reason")
        return Invalid(
            name=str(meta.get("name") or ""),
            namespace="" if cluster else str(meta.get("namespace") or ""),
            problem="; ".join(problems),
            selector=selector,
            reason=reason if isinstance(reason, str) else "",
            cluster=cluster,
            namespace_selector=namespaces,
        )


def label(name: str, cluster: bool) -> str:
    """How status, Events and the CLI name a freeze: `freeze NAME`, `clusterfreeze NAME`."""
    return f"{'clusterfreeze' if cluster else 'freeze'} {name}"


@dataclass(frozen=True)
class Applying:
    """One Freeze that holds the object now."""

    name: str
    reason: str
    author: str = ""
    until: datetime.datetime | None = None  # None: until it is lifted (or fixed)
    problem: str = ""  # an Invalid Freeze: what is wrong with it
    more: bool = False  # it goes on past `until`, which is as far as it was followed
    cluster: bool = False  # a ClusterFreeze

    @property
    def key(self) -> str:
        """`NAME` for a Freeze, `clusterfreeze/NAME` for a ClusterFreeze."""
        return f"clusterfreeze/{self.name}" if self.cluster else self.name

    def describe(self) -> str:
        by = f", by {self.author}" if self.author else ""
        named = label(self.name, self.cluster)
        said = f"{named} ({self.reason}{by})" if self.reason else named
        if self.problem:
            return f"{said}, which is invalid ({self.problem}) and holds until fixed or deleted"
        return f"{said} until {'at least ' if self.more else ''}{when(self.until)}"


@dataclass(frozen=True)
class Hold:
    """The Freezes that hold an object, and when none will any more (None: not until one
    is lifted)."""

    freezes: tuple[Applying, ...]
    until: datetime.datetime | None
    more: bool = False  # it goes on past `until`, which is as far as it was followed

    @property
    def names(self) -> tuple[str, ...]:
        """Each freeze's `key`: `NAME`, or `clusterfreeze/NAME`."""
        return tuple(f.key for f in self.freezes)

    def describe(self) -> str:
        said = "; ".join(f.describe() for f in self.freezes)
        if len(self.freezes) > 1:
            said += f"; frozen until {'at least ' if self.more else ''}{when(self.until)}"
        return said

    def seconds_left(self, now: datetime.datetime) -> float | None:
        """Seconds until the hold ends (None: no end known)."""
        return None if self.until is None else max(0.0, (self.until - now).total_seconds())


def when(t: datetime.datetime | None) -> str:
    if t is None:
        return "lifted"
    return t.astimezone(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def cluster_wide(f: Parsed) -> bool:
    return f.cluster if isinstance(f, Invalid) else isinstance(f, ClusterFreeze)


def _matches(
    selector: FreezeSelector | NamespaceSelector | None, labels: Mapping[str, str]
) -> bool:
    if selector is None:
        return True  # unreadable: everything it could be about
    return selector_from_dict(
        selector.model_dump(by_alias=True, exclude_none=True, mode="json")
    ).matches(labels)


def selects_namespace(f: Parsed, namespace: str, namespace_labels: Mapping[str, str]) -> bool:
    """Whether `f` is about objects of `namespace` (whose labels are `namespace_labels`)."""
    if isinstance(f, Invalid):
        if f.cluster:
            return _matches(f.namespace_selector, namespace_labels)
        return f.namespace == namespace
    if isinstance(f, ClusterFreeze):
        return _matches(f.spec.namespace_selector, namespace_labels)
    return (f.metadata.namespace or "") == namespace


def selects(
    f: Parsed,
    namespace: str,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, str] | None = None,
) -> bool:
    """Whether `f` is about an object of `namespace` with `labels`; `namespace_labels`, the
    namespace's (None: not known, read as none), for a ClusterFreeze's namespaceSelector."""
    if not selects_namespace(f, namespace, namespace_labels or {}):
        return False
    return _matches(f.selector if isinstance(f, Invalid) else f.spec.selector, labels)


def applying(f: Parsed, t: datetime.datetime) -> Applying | None:
    """`f` at `t`: what it says if it applies then, else None."""
    if isinstance(f, Invalid):
        return Applying(f.name, f.reason, problem=f.problem, cluster=f.cluster)
    span = applies(f.spec, t)
    if span is None:
        return None
    return Applying(
        f.metadata.name,
        f.spec.reason,
        f.spec.author,
        span.end,
        more=span.more,
        cluster=isinstance(f, ClusterFreeze),
    )


def hold_at(
    freezes: Iterable[Parsed],
    namespace: str,
    labels: Mapping[str, str],
    t: datetime.datetime,
    namespace_labels: Mapping[str, str] | None = None,
) -> Hold | None:
    """The Freezes and ClusterFreezes that hold an object of `namespace` (labelled
    `namespace_labels`) with `labels` at `t`, and until when none does; None when none
    holds it. Freezes come first, then ClusterFreezes, each by name."""
    scoped = [f for f in freezes if selects(f, namespace, labels, namespace_labels)]
    now = sorted(
        (a for a in (applying(f, t) for f in scoped) if a is not None),
        key=lambda a: (a.cluster, a.name),
    )
    if not now:
        return None
    until, more = _end(now)
    for _ in range(UNION_LIMIT):
        if until is None or more:
            break
        later = [a for a in (applying(f, until) for f in scoped) if a is not None]
        if not later:
            break
        until, more = _end(later)
    return Hold(tuple(now), until, more)


def next_hold(
    freezes: Iterable[Parsed],
    namespace: str,
    labels: Mapping[str, str],
    t: datetime.datetime,
    namespace_labels: Mapping[str, str] | None = None,
) -> datetime.datetime | None:
    """When a Freeze or ClusterFreeze next starts to apply to the object after `t` (None:
    none will)."""
    starts = [
        next_start(f.spec, t)
        for f in freezes
        if not isinstance(f, Invalid) and selects(f, namespace, labels, namespace_labels)
    ]
    return min((s for s in starts if s is not None), default=None)


def _end(held: list[Applying]) -> tuple[datetime.datetime | None, bool]:
    """When the last of `held` ends, and whether it goes on past that."""
    if any(a.until is None for a in held):
        return None, False
    last = max(held, key=lambda a: (a.until, a.more))
    return last.until, last.more
