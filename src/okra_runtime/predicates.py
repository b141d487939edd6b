"""Predicates filter events before they reach a controller's queue.

Each predicate answers per event kind. Resyncs arrive as updates with an
unchanged object, so `GenerationChanged` also drops them, as it does in
controller-runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from okra_runtime.labels import Selector, as_selector

Obj = dict[str, Any]


class Predicate:
    """Accepts everything; subclass and override what you filter."""

    def create(self, obj: Obj) -> bool:
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True


class GenerationChanged(Predicate):
    """Only spec changes (metadata.generation) pass; status-only updates and
    resyncs do not. Objects without a generation pass on any change."""

    def update(self, old: Obj, new: Obj) -> bool:
        g_old, g_new = old["metadata"].get("generation"), new["metadata"].get("generation")
        if g_old is None or g_new is None:
            return bool(
                old["metadata"].get("resourceVersion") != new["metadata"].get("resourceVersion")
            )
        return bool(g_old != g_new)


class ResourceVersionChanged(Predicate):
    """Drops resyncs (updates whose resourceVersion did not change)."""

    def update(self, old: Obj, new: Obj) -> bool:
        return bool(
            old["metadata"].get("resourceVersion") != new["metadata"].get("resourceVersion")
        )


class LabelsChanged(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return bool(old["metadata"].get("labels") != new["metadata"].get("labels"))


class AnnotationsChanged(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return bool(old["metadata"].get("annotations") != new["metadata"].get("annotations"))


@dataclass
class LabelSelectorPredicate(Predicate):
    """Only objects whose labels match (on update: the new object, or the old
    one, so that an object leaving the selection is still seen once)."""

    selector: Selector

    def __init__(self, selector: Selector | str | dict[str, Any]) -> None:
        self.selector = as_selector(selector)

    def _ok(self, obj: Obj) -> bool:
        return self.selector.matches(obj["metadata"].get("labels"))

    def create(self, obj: Obj) -> bool:
        return self._ok(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self._ok(new) or self._ok(old)

    def delete(self, obj: Obj) -> bool:
        return self._ok(obj)


@dataclass
class FuncPredicate(Predicate):
    """The same test on every event's (new) object."""

    func: Callable[[Obj], bool]

    def create(self, obj: Obj) -> bool:
        return self.func(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self.func(new)

    def delete(self, obj: Obj) -> bool:
        return self.func(obj)


@dataclass
class Any_(Predicate):  # noqa: N801 - mirrors predicate.Or
    """Passes when any of `predicates` passes."""

    predicates: tuple[Predicate, ...]

    def __init__(self, *predicates: Predicate) -> None:
        self.predicates = predicates

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.predicates)
