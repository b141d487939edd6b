"""An events recorder for events.k8s.io/v1 that aggregates instead of flooding.

The first occurrence of an event (same object, type, reason, action and note)
creates an Event; repeats only bump its `series.count` and
`series.lastObservedTime`, and at most once per `series_interval` per event,
so a reconciler that reports the same problem every second writes a handful
of requests, not thousands. Recording never raises and never blocks a
reconcile: writes happen in background tasks and failures are logged.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import structlog

from okra_runtime.client import Client
from okra_runtime.errors import ApiError, NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.timeutil import micro_time

EVENT = GVK("events.k8s.io", "v1", "Event")
EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class Event:
    """An Event a pure plan asks for; the controller records it about its object
    (`EventRecorder.event(obj, e.type, e.reason, e.message)`)."""

    type: EventType
    reason: str
    message: str


log = structlog.get_logger("okra_runtime.events")
_NOTE_MAX = 1024
"""The API server's limit on an Event's note, in bytes (UTF-8), not characters."""
_NAME_MAX = 253
_SUFFIX = 17
"""A dot and 16 hex digits after the regarding object's name."""


def _note(note: str) -> str:
    """The note cut to what the API server takes (1024 bytes of UTF-8), never in the
    middle of a character: a longer one makes the Event a 422, and the event is lost."""
    raw = note.encode()
    if len(raw) <= _NOTE_MAX:
        return note
    return raw[: _NOTE_MAX - 3].decode(errors="ignore") + "..."


def _event_name(regarding_name: str) -> str:
    """A unique Event name from the regarding object's: a name near the 253-character
    limit is cut (at a character a DNS label may end with), or the Event is a 422."""
    prefix = regarding_name[: _NAME_MAX - _SUFFIX].rstrip("-.") or "object"
    return f"{prefix}.{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class _Occurrence:
    """One event to record: the object it is about and what is said of it."""

    regarding: dict[str, Any]
    type: str
    reason: str
    note: str
    action: str


@dataclass
class _Series:
    name: str
    namespace: str
    count: int
    last_write: float
    written_count: int


class EventRecorder:
    def __init__(
        self,
        client: Client,
        controller: str,
        instance: str,
        *,
        series_interval: float = 10.0,
        max_tracked: int = 4096,
    ) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance
        self.series_interval = series_interval
        self._series: OrderedDict[tuple[str, ...], _Series] = OrderedDict()
        self._max = max_tracked
        self._tasks: set[asyncio.Task[None]] = set()
        self._locks: dict[tuple[str, ...], asyncio.Lock] = {}

    def event(
        self,
        regarding: dict[str, Any],
        type_: EventType,
        reason: str,
        note: str,
        action: str | None = None,
    ) -> None:
        """Record an event about `regarding` (an object dict). Fire and forget."""
        meta = regarding.get("metadata") or {}
        note = _note(note)
        log.debug(
            "event",
            kind=regarding.get("kind"),
            object=f"{meta.get('namespace') or ''}/{meta.get('name')}",
            type=type_,
            reason=reason,
            note=note,
        )
        key = (
            meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}",
            type_,
            reason,
            action or reason,
            note,
        )
        occurrence = _Occurrence(regarding, type_, reason, note, action or reason)
        task = asyncio.get_running_loop().create_task(self._record(key, occurrence))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def flush(self) -> None:
        """Wait for pending writes (tests and shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _record(self, key: tuple[str, ...], occurrence: _Occurrence) -> None:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            try:
                await self._write(key, occurrence)
            except (ApiError, ConnectionError, OSError) as e:
                log.warning("could not record event", reason=occurrence.reason, error=str(e))

    async def _write(self, key: tuple[str, ...], occurrence: _Occurrence) -> None:
        now = time.monotonic()
        series = self._series.get(key)
        if series is not None:
            series.count += 1
            self._series.move_to_end(key)
            if now - series.last_write < self.series_interval:
                return  # counted; written with a later repeat
            try:
                await self.client.patch(
                    EVENT,
                    series.name,
                    {"series": {"count": series.count, "lastObservedTime": micro_time()}},
                    namespace=series.namespace,
                )
                series.last_write, series.written_count = now, series.count
                return
            except NotFoundError:
                del self._series[key]  # expired on the server: start a new one
        regarding = occurrence.regarding
        meta = regarding.get("metadata") or {}
        namespace = meta.get("namespace") or "default"
        ref = {
            k: v
            for k, v in {
                "apiVersion": regarding.get("apiVersion"),
                "kind": regarding.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            }.items()
            if v
        }
        name = _event_name(str(meta.get("name") or "object"))
        await self.client.create(
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "eventTime": micro_time(),
                "reportingController": self.controller,
                "reportingInstance": self.instance,
                "action": occurrence.action,
                "reason": occurrence.reason,
                "type": occurrence.type,
                "note": occurrence.note,
                "regarding": ref,
            }
        )
        self._series[key] = _Series(name, namespace, 1, now, 1)
        while len(self._series) > self._max:
            old, _ = self._series.popitem(last=False)
            self._locks.pop(old, None)
