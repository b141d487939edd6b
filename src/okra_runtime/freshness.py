"""Read-your-writes for one informer's cache: the resourceVersion floor of each object.

A reconciler reads its object from the informer's cache, and the cache trails the API
server by the watch's delay. Right after a reconcile wrote the object (its status, say),
the next reconcile of the same object may still read the version before that write. A
plan made from it decides again what the write already recorded ("the deadline is
exceeded for the first time": one more Event) or flips a condition back and forth. The
write itself is often guarded by the resourceVersion (it would fail with a conflict), but
what a reconcile does besides writing (Events, AWS calls, Jobs) is not.

So every write this process makes through its `Client` is remembered here as a floor:
the resourceVersion the API server gave the written object. Until the cache shows that
object at that version or a later one (or shows it deleted), the object is not `fresh`,
and the controller does not reconcile it from the cache: it waits for the watch to
deliver (`wait`), as controller-runtime users do with expectations. A floor is kept at
most `ttl` seconds, so that a write whose event can never arrive (the object left the
informer's label selector and the deletion went unseen, a bug elsewhere) delays its
object by that long at worst and never stops it.

resourceVersions are opaque by contract; kube-apiserver's are etcd revisions, decimal
integers that grow with every write, and the floor compares them as such. A version that
is not a decimal integer (another API server) sets no floor: such a server gets the
cache's ordinary eventual consistency, never a reconcile that waits for nothing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


def revision(resource_version: object) -> int | None:
    """The resourceVersion as a number, or None when it is not a decimal integer."""
    if isinstance(resource_version, str) and resource_version.isdigit():
        return int(resource_version)
    return None


class Floors:
    """Per object key (`namespace/name`), the lowest resourceVersion the cache must show
    before the object may be reconciled from it. Used from one event loop."""

    def __init__(self, ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._floors: dict[str, tuple[int, float]] = {}  # key -> (revision, set at)
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    def __len__(self) -> int:
        return len(self._floors)

    def wrote(self, key: str, resource_version: object) -> None:
        """This process wrote the object `key`; the API server answered `resource_version`."""
        rv = revision(resource_version)
        if rv is None:
            return
        held = self._floors.get(key)
        if held is None or rv > held[0]:
            self._floors[key] = (rv, self._clock())

    def seen(self, key: str, resource_version: object) -> None:
        """The cache now holds `key` at `resource_version`."""
        held = self._floors.get(key)
        if held is None:
            return
        rv = revision(resource_version)
        if rv is None or rv >= held[0]:
            self._release(key)

    def gone(self, key: str) -> None:
        """The cache no longer holds `key` (deleted): nothing older can be read from it."""
        if key in self._floors:
            self._release(key)

    def fresh(self, key: str) -> bool:
        """True when the cache shows `key` at least as new as this process last wrote it
        (or the floor is older than `ttl`)."""
        held = self._floors.get(key)
        if held is None:
            return True
        if self._clock() - held[1] >= self.ttl:
            self._release(key)
            return True
        return False

    async def wait(self, key: str, timeout: float) -> bool:  # noqa: ASYNC109
        """Until `key` is fresh, at most `timeout` seconds (and never past the floor's
        `ttl`); True when it is."""
        if self.fresh(key):
            return True
        held = self._floors[key]
        left = min(timeout, held[1] + self.ttl - self._clock())
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, []).append(fut)
        try:
            await asyncio.wait_for(asyncio.shield(fut), max(0.0, left))
        except TimeoutError:
            pass
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None and fut in waiters:
                waiters.remove(fut)
                if not waiters:
                    del self._waiters[key]
        return self.fresh(key)

    def _release(self, key: str) -> None:
        self._floors.pop(key, None)
        for fut in self._waiters.pop(key, ()):
            if not fut.done():
                fut.set_result(None)
