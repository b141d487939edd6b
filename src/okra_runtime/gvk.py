"""Group/version/kind and the resource information discovery resolves it to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class GVK:
    group: str
    version: str
    kind: str

    @classmethod
    def of(cls, api_version: str, kind: str) -> GVK:
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> GVK:
        try:
            return cls.of(obj["apiVersion"], obj["kind"])
        except KeyError as e:
            raise ValueError(
                f"object has no {e.args[0]}: every object needs apiVersion and kind"
            ) from None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return (
            f"{self.kind}.{self.version}.{self.group}"
            if self.group
            else f"{self.kind}.{self.version}"
        )


@dataclass(frozen=True, slots=True)
class Resource:
    """What discovery knows of a kind: its plural name, scope and verbs."""

    gvk: GVK
    plural: str
    namespaced: bool
    verbs: frozenset[str] = frozenset()
    subresources: frozenset[str] = frozenset()

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        base = (
            f"/apis/{self.gvk.group}/{self.gvk.version}"
            if self.gvk.group
            else f"/api/{self.gvk.version}"
        )
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


def object_key(obj: dict[str, Any]) -> str:
    """`namespace/name`, or `name` for cluster-scoped objects (client-go's key)."""
    meta = obj["metadata"]
    ns = meta.get("namespace")
    return f"{ns}/{meta['name']}" if ns else str(meta["name"])
