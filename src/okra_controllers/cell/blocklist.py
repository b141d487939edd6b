"""A Cell's VersionBlocklist, as the Cell controller reads and appends to it.

The blocklist decides which version may roll out, so a version this process blocked a
moment ago (a failed analysis) must never be planned against a cache that does not show
it yet: until the cache does, the blocklist is read live. Every other reconcile reads it
from the cache, at no API round trip.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from okra_controllers.api.kinds import BLOCKLIST
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_runtime.cache import Store
from okra_runtime.client import Client
from okra_runtime.errors import AlreadyExistsError, ConflictError, NotFoundError

APPEND_TRIES = 5


class Blocklists:
    def __init__(
        self, client: Client, store: Store, clock: Callable[[], datetime.datetime]
    ) -> None:
        """`store` the VersionBlocklists' cache; `clock` the time an entry is written with."""
        self.client = client
        self.store = store
        self.clock = clock
        self.blocked_here: dict[tuple[str, str], set[str]] = {}
        """Versions this process appended to a Cell's VersionBlocklist that its cache
        may not show yet (`read`)."""

    async def read(self, name: str, ns: str) -> dict[str, Any] | None:
        """The Cell's VersionBlocklist, which decides which version may roll out: from the
        cache, unless this process appended a version the cache does not show yet (a
        failed analysis a moment ago); then read live, never planned from a cache that
        would roll the blocked version out again. Other writers' entries (`okra block`,
        a user's edit) reach the Cell through the watch on blocklists, as any input does.
        A manager started afresh has every earlier entry in its first list."""
        key = (ns, name)
        cached = self.store.get(name, ns, copy=False)
        written = self.blocked_here.get(key)
        if not written:
            return cached
        if written <= blocked_versions(cached):
            del self.blocked_here[key]  # the cache shows them now
            return cached
        try:
            live: dict[str, Any] | None = await self.client.get(BLOCKLIST, name, ns)
        except NotFoundError:
            live = None
        written &= blocked_versions(live)  # entries removed since are no longer ours to wait for
        if not written:
            del self.blocked_here[key]
        return live

    async def append(self, raw: dict[str, Any], version: str, cause: str) -> None:
        """Add `version` with its cause to the Cell's VersionBlocklist (made if there is
        none), unless it is there already; retried on a conflict."""
        ns, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
        item = {
            "version": version,
            "cause": cause,
            "time": self.clock().isoformat().replace("+00:00", "Z"),
        }
        self.blocked_here.setdefault((ns, name), set()).add(version)
        for _ in range(APPEND_TRIES):
            try:
                current = await self.client.get(BLOCKLIST, name, ns)
            except NotFoundError:
                try:
                    await self.client.create(new_blocklist(name, ns, item))
                    return
                except AlreadyExistsError:
                    continue
            items = (current.get("spec") or {}).get("items") or []
            if any(i.get("version") == version for i in items):
                return
            current["spec"] = {**(current.get("spec") or {}), "items": [*items, item]}
            try:
                await self.client.update(current)
                return
            except ConflictError:
                continue
        raise ConflictError(409, "Conflict", f"could not add {version} to blocklist {ns}/{name}")


def new_blocklist(name: str, ns: str, item: dict[str, Any]) -> dict[str, Any]:
    """The Cell's first VersionBlocklist, holding `item`."""
    return {
        "apiVersion": API_VERSION,
        "kind": BLOCKLIST.kind,
        "metadata": {"name": name, "namespace": ns, "labels": {"okra.mumo.co/cell": name}},
        "spec": {"items": [item]},
    }


def blocked_versions(blocklist: dict[str, Any] | None) -> set[str]:
    items = ((blocklist or {}).get("spec") or {}).get("items") or []
    return {i["version"] for i in items if isinstance(i, dict) and "version" in i}
