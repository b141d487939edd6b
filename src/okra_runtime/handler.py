"""Event handlers that turn informer events into reconcile Requests.

- `EnqueueForObject`: the object itself (`for_`).
- `EnqueueForOwner`: the object's controlling owner of a given kind (`owns`).
- `EnqueueMapped`: whatever a mapper function returns (`watches`).
Each applies its predicates first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from okra_runtime.cache import Obj
from okra_runtime.gvk import GVK
from okra_runtime.predicates import Predicate
from okra_runtime.reconcile import Request

Enqueue = Callable[[Request], None]
Mapper = Callable[[Obj], Iterable[Request]]


def request_for(obj: Obj) -> Request:
    meta = obj["metadata"]
    return Request(meta["name"], meta.get("namespace") or "")


@dataclass
class _Filtered:
    enqueue: Enqueue
    predicates: Sequence[Predicate]

    def _requests(self, obj: Obj) -> Iterable[Request]:
        raise NotImplementedError

    def on_add(self, obj: Obj) -> None:
        if all(p.create(obj) for p in self.predicates):
            for r in self._requests(obj):
                self.enqueue(r)

    def on_update(self, old: Obj, new: Obj) -> None:
        if all(p.update(old, new) for p in self.predicates):
            seen = set()
            for r in (*self._requests(old), *self._requests(new)):
                if r not in seen:
                    seen.add(r)
                    self.enqueue(r)

    def on_delete(self, obj: Obj) -> None:
        if all(p.delete(obj) for p in self.predicates):
            for r in self._requests(obj):
                self.enqueue(r)


def controlled(obj: Obj) -> bool:
    """Has the object a controlling owner (another controller made it, as part of a change)?"""
    return any(ref.get("controller") for ref in obj["metadata"].get("ownerReferences") or ())


@dataclass
class EnqueueForObject(_Filtered):
    """`made`: told of each new object that another controller made (it has a controlling
    owner reference) and the predicates let through, before its Request is queued."""

    made: Enqueue | None = None

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return (request_for(obj),)

    def on_add(self, obj: Obj) -> None:
        if all(p.create(obj) for p in self.predicates):
            req = request_for(obj)
            if self.made is not None and controlled(obj):
                self.made(req)
            self.enqueue(req)

    def on_update(self, old: Obj, new: Obj) -> None:  # same key: one request
        if all(p.update(old, new) for p in self.predicates):
            self.enqueue(request_for(new))


@dataclass
class EnqueueForOwner(_Filtered):
    owner: GVK
    only_controller: bool = True

    def _requests(self, obj: Obj) -> Iterable[Request]:
        ns = obj["metadata"].get("namespace") or ""
        for ref in obj["metadata"].get("ownerReferences") or ():
            if ref.get("kind") != self.owner.kind:
                continue
            group = ref.get("apiVersion", "").rpartition("/")[0]
            if group != self.owner.group:
                continue
            if self.only_controller and not ref.get("controller"):
                continue
            yield Request(ref["name"], ns)


@dataclass
class EnqueueMapped(_Filtered):
    mapper: Mapper

    def _requests(self, obj: Obj) -> Iterable[Request]:
        return self.mapper(obj)
