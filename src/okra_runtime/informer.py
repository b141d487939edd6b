"""Informers: keep a local cache of one kind in step with the API server and
tell handlers what changed.

An informer lists, then watches from the list's resourceVersion with
bookmarks, resuming from the last resourceVersion it saw whenever the stream
ends. Its first list asks for `resourceVersion=0`, as client-go's reflector
does: the API server answers from its watch cache, in one response, instead
of page by page (a 10,000-object start syncs in 0.19 s instead of 0.27 s;
bench/README.md). That state may be a moment older than the latest; the
watch that follows brings the rest (`list_from_watch_cache=False` asks for
the latest instead). It relists on 410 Gone, then asking for the most recent
state in pages of `page_size`, backs off exponentially on errors, and
detects a watch that has gone silent: a stream that delivers no byte for
`inactivity_timeout` (default 100 s) is treated as dead (stalled) and reopened.

Watch timeout: every watch asks the API server to end it after `timeoutSeconds`
(as client-go's reflector does, to rotate watches and end hanging ones), drawn
at random from `watch_timeout` but always within 50-80 % of
`inactivity_timeout` (`watch_timeout_seconds`). The server closes a healthy
watch normally at that point, even on a kind where nothing changes, before the
client could call it silent: so a `stalled` restart always means a stream that
stopped delivering (a dead connection, a hung proxy), never a quiet kind, and
`inactivity_timeout` may be short (a few seconds) without false alarms. A
normal close is counted as `closed`, never as `stalled` or `error`.
While it is not watching, `healthy` is False and `health_message` says why;
the manager's /readyz reports it.

Backoff: an API server that is unreachable or answering 5xx/429 (a restart, an
outage) is retried with a backoff capped at `backoff_max_unreachable` (1 s), so
an informer is watching again within about a second of the server's /readyz; a
server that refuses the request itself (403, 404, a body that does not decode)
is retried up to `backoff_max` (30 s, as client-go). The count restarts when the
kind of failure changes, and every delay is jittered (50-100 %) so that the
informers of one manager do not reconnect in lockstep. The first failure of a
streak, and a change of reason, log a warning; the repeats log at debug.

Transform: every object the informer receives goes through
`InformerOptions.transform` before it is stored or handed to handlers, as
client-go's `SetTransform`. The default, `drop_managed_fields`, removes
`metadata.managedFields` (server-side apply bookkeeping that a reconciler
never reads, often the largest part of a small object): less memory per cached
object, and less to copy on every cache read. Pass `transform=None` to keep
objects exactly as served.

Resync: with `resync_period`, every cached object is handed to the handlers
again as an update once per period, spread evenly over the period in small
batches (jittered), not as one burst that fills the queues at once.

Handlers are plain callbacks run inline on the event loop; they must be cheap
(enqueueing into a workqueue is the intended use).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
import structlog

from okra_runtime import metrics as m
from okra_runtime.cache import Obj, Store
from okra_runtime.client import Client
from okra_runtime.errors import ApiError, GoneError, WatchStalledError, unreachable
from okra_runtime.freshness import Floors, revision
from okra_runtime.gvk import GVK, object_key

log = structlog.get_logger("okra_runtime.informer")

Transform = Callable[[Obj], Obj]


def drop_managed_fields(obj: Obj) -> Obj:
    """The default informer transform: drop `metadata.managedFields` in place."""
    meta = obj.get("metadata")
    if meta is not None:
        meta.pop("managedFields", None)
    return obj


class EventHandler(Protocol):
    def on_add(self, obj: Obj) -> None: ...
    def on_update(self, old: Obj, new: Obj) -> None: ...
    def on_delete(self, obj: Obj) -> None: ...


@dataclass
class FuncHandler:
    """An EventHandler from optional callables."""

    add: Callable[[Obj], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj], None] | None = None

    def on_add(self, obj: Obj) -> None:
        if self.add:
            self.add(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if self.update:
            self.update(old, new)

    def on_delete(self, obj: Obj) -> None:
        if self.delete:
            self.delete(obj)


RESYNC_SLICES = 60
"""A resync is dispatched in at most this many batches spread over its period."""


@dataclass
class InformerOptions:
    namespace: str | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    resync_period: float | None = None
    page_size: int = 500
    watch_timeout: tuple[int, int] = (300, 600)  # random in range, so watches rotate
    inactivity_timeout: float = 100.0  # >= 2 s; caps the watch timeout (see module doc)
    backoff_base: float = 0.2
    backoff_max: float = 30.0
    backoff_max_unreachable: float = 1.0  # server down, restarting or overloaded
    transform: Transform | None = drop_managed_fields  # before storing; None keeps all
    # The first list from the API server's watch cache (resourceVersion=0, client-go's
    # reflector); False asks for the most recent state, as a one-shot reader (a CLI showing
    # what its user just wrote) needs.
    list_from_watch_cache: bool = True


WATCH_TIMEOUT_SHARE = (0.5, 0.8)
"""The server-side watch timeout is drawn within these fractions of the
inactivity timeout (when that is below `watch_timeout`)."""


def watch_timeout_seconds(options: InformerOptions, rng: random.Random | None = None) -> int:
    """The `timeoutSeconds` to ask of the API server for one watch: random in
    `options.watch_timeout`, capped to 50-80 % of `options.inactivity_timeout`,
    and always below it (for any inactivity timeout of at least 2 s), so that the
    server ends a healthy watch before the client would declare it stalled."""
    lo, hi = options.watch_timeout
    low_share, high_share = WATCH_TIMEOUT_SHARE
    hi = max(1, min(hi, math.floor(options.inactivity_timeout * high_share)))
    lo = max(1, min(lo, math.ceil(options.inactivity_timeout * low_share), hi))
    return (rng or random).randint(lo, hi)


def backoff_delay(options: InformerOptions, failures: int, unreachable_server: bool) -> float:
    """The delay before retry number `failures` (0-based) of one kind of failure,
    before jitter."""
    cap = options.backoff_max_unreachable if unreachable_server else options.backoff_max
    return float(min(cap, options.backoff_base * 2.0 ** min(failures, 30)))


@dataclass
class Informer:
    client: Client
    gvk: GVK
    options: InformerOptions = field(default_factory=InformerOptions)
    store: Store = field(default_factory=Store)
    # read-your-writes: what this process wrote and the cache does not show yet
    floors: Floors = field(default_factory=Floors)
    _handlers: list[EventHandler] = field(default_factory=list, init=False)
    _synced: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _rv: str = field(default="", init=False)
    healthy: bool = field(default=False, init=False)
    health_message: str = field(default="not started", init=False)
    last_event: float = field(default=0.0, init=False)

    @property
    def name(self) -> str:
        ns = f" in {self.options.namespace}" if self.options.namespace else ""
        return f"{self.gvk}{ns}"

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    @property
    def resource_version(self) -> str:
        return self._rv

    async def wait_for_sync(self, timeout: float | None = None) -> bool:  # noqa: ASYNC109
        try:
            async with asyncio.timeout(timeout):
                await self._synced.wait()
        except TimeoutError:
            return False
        return True

    def wrote(self, obj: Obj) -> None:
        """This process wrote `obj` (the API server's answer): until the cache shows it at
        that resourceVersion or later, its key is not fresh (`okra_runtime.freshness`). An
        object the cache does not hold (a creation, one outside this informer's namespace or
        selector) sets no floor: its first event is what brings it. Nor does a write whose
        watch event came first (the watch and the write's answer race): the cache already
        shows it, and a floor set now would wait for an event that has passed."""
        meta = obj.get("metadata") or {}
        key = object_key(obj)
        cached = self.store.peek(key)
        if cached is None:
            return
        have = revision((cached.get("metadata") or {}).get("resourceVersion"))
        written = revision(meta.get("resourceVersion"))
        if have is not None and written is not None and have >= written:
            return
        self.floors.wrote(key, meta.get("resourceVersion"))

    def add_handler(self, handler: EventHandler) -> None:
        """Register a handler; if the cache is already filled, it first gets
        an add for every cached object, as client-go does."""
        self._handlers.append(handler)
        if self.has_synced:
            for obj in list(self.store.raw_items().values()):
                handler.on_add(obj)

    # -- the loop ------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled. Never raises on API trouble."""
        labels = (self.gvk.group, self.gvk.version, self.gvk.kind)
        for reason in ("closed", "error", "stalled", "expired"):  # series exist from 0, so
            m.WATCH_RESTARTS.labels(*labels, reason)  # increase() counts the first restart
        need_list, failures = True, 0
        last_kind: bool | None = None
        last_reason = ""
        resync = asyncio.create_task(self._resync_loop()) if self.options.resync_period else None
        try:
            while True:
                try:
                    if need_list:
                        await self._list_and_replace(
                            latest=self._rv != "" or not self.options.list_from_watch_cache
                        )
                        m.INFORMER_RELISTS.labels(*labels).inc()
                        need_list = False
                    await self._watch_once()
                    failures, last_kind, last_reason = 0, None, ""
                    m.WATCH_RESTARTS.labels(*labels, "closed").inc()
                    continue
                except GoneError:
                    need_list = True
                    self._unhealthy("resourceVersion expired (410 Gone); relisting")
                    m.WATCH_RESTARTS.labels(*labels, "expired").inc()
                    continue
                except WatchStalledError as e:
                    self._unhealthy(str(e))
                    m.WATCH_RESTARTS.labels(*labels, "stalled").inc()
                    kind = True
                except (ApiError, ConnectionError, OSError, ValueError, aiohttp.ClientError) as e:
                    self._unhealthy(f"{type(e).__name__}: {e}")
                    m.WATCH_RESTARTS.labels(*labels, "error").inc()
                    kind = unreachable(e)
                except Exception as e:
                    self._unhealthy(f"unexpected {type(e).__name__}: {e}")
                    m.WATCH_RESTARTS.labels(*labels, "error").inc()
                    log.exception("informer error", informer=self.name)
                    kind = False
                if kind != last_kind:
                    failures = 0  # a new kind of failure starts its own backoff
                delay = backoff_delay(self.options, failures, kind)
                failures += 1
                reason = self.health_message.split(":")[0]
                (log.warning if reason != last_reason else log.debug)(
                    "watch interrupted; retrying",
                    informer=self.name,
                    reason=self.health_message,
                    retry_in=round(delay, 2),
                )
                last_kind, last_reason = kind, reason
                await asyncio.sleep(delay * (0.5 + random.random() / 2))
        finally:
            self.healthy, self.health_message = False, "stopped"
            if resync:
                resync.cancel()

    def _unhealthy(self, why: str) -> None:
        self.healthy, self.health_message = False, why

    def _opened(self) -> None:
        self.healthy, self.health_message = True, "watching"

    async def _list_and_replace(self, latest: bool) -> None:
        """List and make the store match. The first list (`latest` False) may come from the
        API server's watch cache; a relist after 410 Gone asks for the most recent state."""
        o = self.options
        listed = await self.client.list(
            self.gvk,
            o.namespace,
            label_selector=o.label_selector,
            field_selector=o.field_selector,
            limit=o.page_size,
            resource_version=None if latest else "0",
        )
        seen: set[str] = set()
        transform = o.transform
        for obj in listed.items:
            if transform is not None:
                obj = transform(obj)
            key = object_key(obj)
            seen.add(key)
            old = self.store.upsert(obj)
            if len(self.floors):
                self.floors.seen(key, obj["metadata"].get("resourceVersion"))
            if old is None:
                for h in self._handlers:
                    h.on_add(obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                for h in self._handlers:
                    h.on_update(old, obj)
        for key in [k for k in self.store.raw_items() if k not in seen]:
            gone = self.store.delete(key)
            self.floors.gone(key)
            if gone is not None:
                for h in self._handlers:
                    h.on_delete(gone)
        self._rv = listed.resource_version
        self._synced.set()
        self.last_event = time.monotonic()

    async def _watch_once(self) -> None:
        o = self.options
        stream = self.client.watch(
            self.gvk,
            o.namespace,
            resource_version=self._rv,
            label_selector=o.label_selector,
            field_selector=o.field_selector,
            timeout_seconds=watch_timeout_seconds(o),
            inactivity_timeout=o.inactivity_timeout,
            on_open=self._opened,
        )
        async for event in stream:
            self.last_event = time.monotonic()
            self._apply(event["type"], event["object"])

    def _apply(self, kind: str, obj: dict[str, Any]) -> None:
        rv = obj.get("metadata", {}).get("resourceVersion")
        if rv:
            self._rv = rv
        if kind == "BOOKMARK":
            return
        if self.options.transform is not None:
            obj = self.options.transform(obj)
        if kind in ("ADDED", "MODIFIED"):
            old = self.store.upsert(obj)
            if len(self.floors):
                self.floors.seen(object_key(obj), rv)
            for h in self._handlers:
                if old is None:
                    h.on_add(obj)
                else:
                    h.on_update(old, obj)
        elif kind == "DELETED":
            key = object_key(obj)
            gone = self.store.delete(key)
            self.floors.gone(key)
            for h in self._handlers:
                h.on_delete(gone if gone is not None else obj)

    async def _resync_loop(self) -> None:
        """Every period, hand each cached object to the handlers again, spread over
        the period: the keys are shuffled and dispatched in up to RESYNC_SLICES
        batches with the period divided between them, so a resync of thousands of
        objects is a steady trickle into the queues rather than one burst. An
        object deleted (or replaced) meanwhile is dispatched as it is now."""
        period = self.options.resync_period
        assert period
        await asyncio.sleep(period * (0.5 + random.random() / 2))  # stagger informers
        while True:
            if not self.has_synced:
                await asyncio.sleep(period)
                continue
            keys = list(self.store.raw_items())
            random.shuffle(keys)
            slices = max(1, min(RESYNC_SLICES, len(keys)))
            size = -(-len(keys) // slices)
            for i in range(slices):
                items = self.store.raw_items()
                for key in keys[i * size : (i + 1) * size]:
                    obj = items.get(key)
                    if obj is not None:
                        for h in self._handlers:
                            h.on_update(obj, obj)
                await asyncio.sleep(period / slices)
