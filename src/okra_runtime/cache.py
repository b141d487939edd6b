"""The informer's store: objects by key, with indexes.

Objects are kept as the raw dicts decoded from the API server. Reads hand out
deep copies, so a caller that edits what it got can never corrupt the cache
(controller-runtime's contract). A reader that never mutates what it reads (it
parses it, compares it, picks fields out of it) may pass `copy=False` and get the
cached objects themselves, as controller-runtime's `UnsafeDisableDeepCopy` does:
the copy is most of the cost of a read. Its tests must show that it leaves them as
they were. Built-in indexes: namespace, owner UID and
label (`key=value`); add your own with `add_index(name, fn)` where `fn` maps
an object to the index values it should be found under.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from okra_runtime.gvk import object_key
from okra_runtime.labels import Selector, as_selector

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]

NAMESPACE_INDEX = "namespace"
OWNER_INDEX = "owner-uid"
LABEL_INDEX = "label"


def json_copy(value: Any) -> Any:
    """Deep copy of a JSON tree (dicts, lists, scalars); several times faster
    than copy.deepcopy because it knows there is nothing else."""
    if isinstance(value, dict):
        return {k: json_copy(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def _namespace(obj: Obj) -> Iterable[str]:
    return (obj["metadata"].get("namespace") or "",)


def _owners(obj: Obj) -> Iterable[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or () if "uid" in ref]


def _labels(obj: Obj) -> Iterable[str]:
    return [f"{k}={v}" for k, v in (obj["metadata"].get("labels") or {}).items()]


class Store:
    """Objects by `namespace/name`, with secondary indexes. Not thread-safe;
    used from one event loop."""

    def __init__(self) -> None:
        self._items: dict[str, Obj] = {}
        self._index_funcs: dict[str, IndexFunc] = {
            NAMESPACE_INDEX: _namespace,
            OWNER_INDEX: _owners,
            LABEL_INDEX: _labels,
        }
        self._indexes: dict[str, dict[str, set[str]]] = {n: {} for n in self._index_funcs}

    # -- writes (informer only) --------------------------------------------

    def add_index(self, name: str, func: IndexFunc) -> None:
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} already exists")
        self._index_funcs[name] = func
        index: dict[str, set[str]] = {}
        for key, obj in self._items.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        self._indexes[name] = index

    def upsert(self, obj: Obj) -> Obj | None:
        """Insert or replace; returns the previous object (not a copy)."""
        key = object_key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        for name, func in self._index_funcs.items():
            index = self._indexes[name]
            old_values = set(func(old)) if old is not None else set()
            new_values = set(func(obj))
            for v in old_values - new_values:
                self._discard(index, v, key)
            for v in new_values - old_values:
                index.setdefault(v, set()).add(key)
        return old

    def delete(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            for name, func in self._index_funcs.items():
                for v in func(old):
                    self._discard(self._indexes[name], v, key)
        return old

    @staticmethod
    def _discard(index: dict[str, set[str]], value: str, key: str) -> None:
        keys = index.get(value)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del index[value]

    def raw_items(self) -> dict[str, Obj]:
        """The live mapping, for the informer's own bookkeeping. Never mutate."""
        return self._items

    # -- reads (copies) ----------------------------------------------------

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def keys(self) -> list[str]:
        return list(self._items)

    def has_index(self, name: str) -> bool:
        return name in self._index_funcs

    def keys_by_index(self, index: str, value: str) -> set[str]:
        """The keys of the objects found under `value` in `index` (a new set)."""
        if index not in self._indexes:
            raise KeyError(f"no index {index!r}; known: {sorted(self._indexes)}")
        return set(self._indexes[index].get(value, ()))

    def peek(self, key: str) -> Obj | None:
        """The cached object itself, not a copy, for cheap read-only looks in event
        handlers and mappers that run once per event (a copy of every candidate there
        makes a handler cost grow with the cache). Never mutate what it returns."""
        return self._items.get(key)

    def get(self, name: str, namespace: str | None = None, *, copy: bool = True) -> Obj | None:
        """The object, a deep copy unless `copy=False` (read-only: never mutate it)."""
        obj = self._items.get(f"{namespace}/{name}" if namespace else name)
        return json_copy(obj) if obj is not None and copy else obj

    def get_by_key(self, key: str, *, copy: bool = True) -> Obj | None:
        obj = self._items.get(key)
        return json_copy(obj) if obj is not None and copy else obj

    def by_index(self, index: str, value: str, *, copy: bool = True) -> list[Obj]:
        if index not in self._indexes:
            raise KeyError(f"no index {index!r}; known: {sorted(self._indexes)}")
        keys = sorted(self._indexes[index].get(value, ()))
        if not copy:
            return [self._items[k] for k in keys]
        return [json_copy(self._items[k]) for k in keys]

    def list(
        self,
        namespace: str | None = None,
        selector: Selector | str | dict[str, Any] | None = None,
        *,
        copy: bool = True,
    ) -> list[Obj]:
        """Objects in `namespace` (all if None) matching the label selector,
        sorted by key, deep copies unless `copy=False` (read-only: never mutate them).
        Equality terms are answered from the label index."""
        sel = as_selector(selector)
        candidates: set[str] | None = None
        if namespace is not None:
            candidates = set(self._indexes[NAMESPACE_INDEX].get(namespace, ()))
        for k, v in sel.equality_pairs():
            keys = self._indexes[LABEL_INDEX].get(f"{k}={v}", set())
            candidates = set(keys) if candidates is None else candidates & keys
        out = []
        for key in sorted(self._items if candidates is None else candidates):
            obj = self._items[key]
            if sel.empty or sel.matches(obj["metadata"].get("labels")):
                out.append(json_copy(obj) if copy else obj)
        return out
