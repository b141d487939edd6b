"""The write-loop guard: an object this process writes without pause is said once.

A controller whose status never reaches a fixed point (a message that grows on every
pass, a timestamp written each time) writes the object, its own watch sees the write,
it reconciles again, and writes again: tens of writes a second, for as long as the
object exists. Nothing fails, so nothing says so; the API server, etcd and every watcher
carry the load until the object reaches etcd's size limit. controller-runtime has no
guard against it: operators find such loops by their etcd bill.

`HotLoopGuard` watches every write the manager's client makes (`Client.on_write`) and
counts, per object, the writes that changed it (a new resourceVersion; a write the
server answers unchanged costs etcd nothing). An object changed more than `rate` times
a second, sustained over `window` seconds, is a loop: it is logged once (kind,
namespace, name, writes in the window) and counted in
`okra_runtime_hot_loop_objects_total`, which the monitoring kit alerts on. It is said
again only after the object has been quiet for a window and loops anew.

The cost is a deque of recent write times per object written in the last window, pruned
as it goes: objects at rest hold nothing.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from okra_runtime.metrics import HOT_LOOP_OBJECTS

log = structlog.get_logger("okra_runtime.hotloop")

Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name
LOOP_EVENT = "object written without pause: a controller does not reach a fixed point"
"""The log line's event: what to search a manager's log for."""


@dataclass(frozen=True)
class HotLoopOptions:
    # A real loop writes tens of times a second; a system Cell whose applications all move
    # at once legitimately writes 5 a second for a few seconds (seen on a real node).
    rate: float = 8.0  # changes a second above which an object is looping...
    window: float = 10.0  # ...sustained over this many seconds


class HotLoopGuard:
    def __init__(
        self, options: HotLoopOptions | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.options = options or HotLoopOptions()
        self._clock = clock
        self._writes: dict[Key, deque[float]] = {}
        self._versions: dict[Key, str] = {}
        self._looping: set[Key] = set()
        self._swept = clock()
        self.found: list[Key] = []
        """Every loop said so far, in order (what the log and the metric said)."""

    @property
    def _limit(self) -> int:
        return int(self.options.rate * self.options.window)

    def wrote(self, obj: dict[str, Any]) -> None:
        """The API server's answer to a write: counted when it changed the object."""
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            return
        key: Key = (
            str(obj.get("apiVersion") or ""),
            str(obj.get("kind") or ""),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )
        version = str(meta.get("resourceVersion") or "")
        if self._versions.get(key) == version:
            return  # unchanged: the server wrote nothing
        self._versions[key] = version
        now = self._clock()
        times = self._writes.setdefault(key, deque())
        times.append(now)
        while times and times[0] <= now - self.options.window:
            times.popleft()
        sustained = len(times) > self._limit and now - times[0] >= self.options.window * 0.8
        if sustained and key not in self._looping:
            self._looping.add(key)
            self._said(key, len(times))
        if now - self._swept >= self.options.window:
            self._sweep(now)

    def _said(self, key: Key, writes: int) -> None:
        api_version, kind, namespace, name = key
        self.found.append(key)
        group, _, version = api_version.rpartition("/")
        HOT_LOOP_OBJECTS.labels(group, version, kind).inc()
        log.warning(
            LOOP_EVENT,
            kind=kind,
            namespace=namespace,
            name=name,
            writes=writes,
            seconds=self.options.window,
        )

    def _sweep(self, now: float) -> None:
        """Forget objects quiet for a window: a loop that ended may be said again."""
        self._swept = now
        for key in [
            k for k, t in self._writes.items() if not t or t[-1] <= now - self.options.window
        ]:
            del self._writes[key]
            self._versions.pop(key, None)
            self._looping.discard(key)
