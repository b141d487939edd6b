"""Delivery: from the outbox in an object's status to the receiver, in the background.

A controller records pending notifications in the status it writes (`outbox`) and hands
them to `Notifier.track`, which returns at once: the reconcile never waits for a
receiver. Each (object, service) has its own lane, a task that posts the lane's entries
in order until the receiver answers 2xx, with exponential backoff (0.5 s doubling,
capped at `MAX_DELAY`), then removes the entry from the status. An entry older than
`TTL` is dropped with an error line. A manager that restarts tracks the outboxes again
as it reconciles every object, so nothing recorded is lost; an entry may be sent twice
(killed after the receiver accepted, before the removal), always under the same key
(`Idempotency-Key` header and `id` field) so that the receiver can drop the duplicate.

Service settings (ConfigMap `okra-notifications`) and secrets (Secret
`okra-notifications`) are read when a notification is sent, so a fixed URL takes
effect for notifications already pending. Secret values are never logged.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import datetime
import json
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import aiohttp
import structlog
import yaml

from okra_controllers.api.kinds import CELL, CONFIGMAP, SECRET
from okra_controllers.api.v1alpha1.common import APP_LABEL, SYSTEM_LABEL, PendingNotification
from okra_controllers.notifications import outbox
from okra_controllers.notifications.triggers import Fired, subscriptions
from okra_controllers.templating import Syntax, render
from okra_runtime.client import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.gvk import GVK
from okra_runtime.timeutil import utcnow

if TYPE_CHECKING:
    from okra_runtime.manager import Manager

NAME = "okra-notifications"
MAX_DELAY = 30.0
TTL = datetime.timedelta(hours=24)
TIMEOUT = aiohttp.ClientTimeout(total=10)
log = structlog.get_logger("okra.notifications")
_FIELDS = Syntax(dot="optional")


def fields_for(cell: dict[str, Any], status: Any, fired: Fired) -> dict[str, Any]:
    """The fields of a Cell's notification (the JSON body, and what a body template may
    name: `{{cell}}`, `{{trigger}}`, `{{message}}`, ...)."""
    meta = cell.get("metadata") or {}
    labels = meta.get("labels") or {}
    out = {
        **common_fields(cell, fired),
        "cell": meta.get("name"),
        "phase": status.phase,
        "health": status.health,
        "stableVersion": status.stable_version,
        "canaryVersion": status.canary_version,
        "canaryWeight": status.canary_weight,
        "step": fired.step + 1 if fired.step is not None else None,
        "rolloutId": status.rollout_id,
    }
    if labels.get(SYSTEM_LABEL) and labels.get(APP_LABEL):
        # an application's Cell of a system Cell: which application of which system
        out["system"], out["application"] = labels[SYSTEM_LABEL], labels[APP_LABEL]
    return out


def common_fields(obj: dict[str, Any], fired: Fired) -> dict[str, Any]:
    """The fields every notification has, whatever kind of object sent it."""
    meta = obj.get("metadata") or {}
    return {
        "trigger": fired.trigger,
        "kind": obj.get("kind"),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "message": fired.message,
        "time": utcnow().isoformat(timespec="seconds").replace("+00:00", "Z"),
    }


def body(kind: str, settings: dict[str, Any], fields: dict[str, Any], recipient: str) -> bytes:
    f = {**fields, "recipient": recipient}
    if isinstance(settings.get("body"), str):
        # An absent field reads as empty: a body written for one trigger serves them all.
        return render(settings["body"], f, _FIELDS, escape="json", missing="").encode()
    if kind == "slack":
        text = f"[okra] {f.get('namespace')}/{f.get('name')}: {f['trigger']}: {f.get('message')}"
        if f.get("system") and f.get("application"):
            text = (
                f"[okra] {f.get('namespace')}/{f['system']}: application {f['application']}: "
                f"{f['trigger']}: {f.get('message')}"
            )
        doc: dict[str, Any] = {"text": text}
        if recipient:
            doc["channel"] = recipient
        return json.dumps(doc).encode()
    return json.dumps(f).encode()


Lane = tuple[GVK, str, str, str]  # kind, namespace, name, service


class Notifier:
    """Sends the outboxes of the objects it is told about (`track`); one per manager
    (`notifier_for`), so two controllers adding to one object's outbox never send an
    entry twice from one process."""

    def __init__(self, client: Client, events: EventRecorder | None = None) -> None:
        self.client = client
        self.events = events  # where a subscription to an undefined service is reported
        self._queues: dict[Lane, asyncio.Queue[PendingNotification]] = {}
        self._tasks: dict[Lane, asyncio.Task[None]] = {}
        self._known: set[str] = set()  # keys queued or being sent
        self._done: OrderedDict[str, None] = OrderedDict()  # keys sent or dropped (recent)

    def track(
        self, gvk: GVK, namespace: str, name: str, pending: list[PendingNotification]
    ) -> None:
        """Queue the entries of this outbox not queued yet (never blocks)."""
        loop = asyncio.get_running_loop()
        for entry in pending:
            if entry.key in self._known or entry.key in self._done:
                continue
            self._known.add(entry.key)
            lane = (gvk, namespace, name, entry.service)
            queue = self._queues.setdefault(lane, asyncio.Queue())
            queue.put_nowait(entry)
            task = self._tasks.get(lane)
            if task is None or task.done():
                # A fresh context: the lane outlives the reconcile that started it, whose
                # log keys (reconcile_id, ...) must not label its lines.
                self._tasks[lane] = loop.create_task(
                    self._run(lane), name=f"notify {name}", context=contextvars.Context()
                )

    def track_object(self, gvk: GVK, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.track(gvk, meta.get("namespace") or "", meta.get("name") or "", outbox.pending_of(obj))

    async def notify_owner(self, obj: dict[str, Any], fired: Fired, now: datetime.datetime) -> None:
        """Report `fired`, which happened to `obj` (a load balancer config), to the
        subscriptions of the Cell that owns it: the entries go into the Cell's outbox
        (read-modify-write of its status), then out as the Cell's own do. Nothing when no
        Cell owns `obj` or none of its subscriptions wants `fired`."""
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or ""
        ref = next(
            (r for r in meta.get("ownerReferences") or [] if r.get("kind") == CELL.kind),
            None,
        )
        if ref is None:
            return
        try:
            cell = await self.client.get(CELL, ref["name"], ns)
        except NotFoundError:
            return
        if (cell.get("metadata") or {}).get("uid") != ref.get("uid"):
            return  # another Cell of the same name
        subs = subscriptions((cell.get("metadata") or {}).get("annotations") or {})

        def fields(f: Fired) -> dict[str, Any]:
            return {**common_fields(cell, f), "cell": ref["name"], "config": meta.get("name")}

        source = f"{meta.get('uid')}/{meta.get('resourceVersion')}"
        new = outbox.entries(subs, [fired], fields, source=source, now=now)
        if new:
            self.track(
                CELL, ns, ref["name"], await outbox.add(self.client, CELL, ref["name"], ns, new)
            )

    async def _run(self, lane: Lane) -> None:
        queue = self._queues[lane]
        while not queue.empty():  # checked again after the session closes (an await)
            async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
                while not queue.empty():
                    await self._send(session, lane, queue.get_nowait())

    async def _send(
        self, session: aiohttp.ClientSession, lane: Lane, entry: PendingNotification
    ) -> None:
        try:
            await self._deliver(session, lane, entry)
        finally:
            self._known.discard(entry.key)
            self._done[entry.key] = None
            while len(self._done) > 10_000:
                self._done.popitem(last=False)
        gvk, ns, name, _ = lane
        try:
            await outbox.remove(self.client, gvk, name, ns, entry.key)
        except Exception as e:  # the entry stays: sent again after a restart (same key)
            log.warning("notification sent but not removed", key=entry.key, error=str(e))

    async def _settings(self, namespace: str, service: str) -> tuple[str, dict[str, Any]] | None:
        try:
            cm = await self.client.get(CONFIGMAP, NAME, namespace)
        except NotFoundError:
            return None
        data = cm.get("data") or {}
        for kind in ("webhook", "slack"):
            raw = data.get(f"service.{kind}.{service}")
            if raw is not None:
                settings = yaml.safe_load(raw) or {}
                return kind, settings if isinstance(settings, dict) else {}
        return None

    async def _secret(self, namespace: str) -> dict[str, str]:
        try:
            s = await self.client.get(SECRET, NAME, namespace)
        except NotFoundError:
            return {}
        return {k: base64.b64decode(v).decode() for k, v in (s.get("data") or {}).items()}

    async def _deliver(
        self, session: aiohttp.ClientSession, lane: Lane, n: PendingNotification
    ) -> None:
        """Post `n` until its receiver accepts it, or it is too old, or its service is
        not defined (a Warning Event on the object says so: the entry is dropped, not
        retried for a day)."""
        _, ns, name, service = lane
        delay = 0.5
        where = f"{ns}/{name} {n.trigger} -> {service}"
        fields = json.loads(n.payload)
        attempt = 0
        while True:
            attempt += 1
            try:
                found = await self._settings(ns, service)
                if found is None:
                    await self._undefined(lane, n)
                    return
                kind, settings = found
                secrets = await self._secret(ns)

                def resolve(v: Any, secrets: dict[str, str] = secrets) -> str:
                    s = str(v or "")
                    return secrets.get(s[1:], "") if s.startswith("$") else s

                url = resolve(settings.get("url"))
                headers = {"Content-Type": "application/json", "Idempotency-Key": n.key}
                for h in settings.get("headers") or []:
                    headers[str(h.get("name"))] = resolve(h.get("value"))
                async with session.post(
                    url, data=body(kind, settings, fields, n.recipient), headers=headers
                ) as resp:
                    if 200 <= resp.status < 300:
                        log.info("notification sent", notification=where, attempt=attempt)
                        return
                    problem = f"HTTP {resp.status}"
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as e:
                problem = type(e).__name__
            except Exception as e:  # an API error reading the settings: retried too
                problem = f"{type(e).__name__}: {e}"
            if utcnow() - n.created > TTL:
                log.error("notification dropped: not accepted for a day", notification=where)
                return
            log.warning(
                "notification not delivered; retrying",
                notification=where,
                attempt=attempt,
                problem=problem,
            )
            await asyncio.sleep(delay)
            delay = min(MAX_DELAY, delay * 2)

    async def _undefined(self, lane: Lane, n: PendingNotification) -> None:
        """Report a subscription naming a service that the namespace does not define: a
        Warning Event on the subscribed object saying what to add (the notification itself
        is dropped: there is nowhere to send it)."""
        gvk, ns, name, service = lane
        message = (
            f"notification {n.trigger} not sent: subscription to service {service!r}, which "
            f"is not defined; add service.webhook.{service} or service.slack.{service} to "
            f"ConfigMap {NAME} in namespace {ns}, or remove the annotation "
            f"notifications.okra.mumo.co/subscribe.<trigger>.{service}"
        )
        log.warning("no such notification service", notification=f"{ns}/{name}", error=message)
        if self.events is None:
            return
        try:
            obj = await self.client.get(gvk, name, ns)
        except Exception as e:  # gone, or the API unreachable: the log line stays
            log.debug("undefined service not reported as an Event", error=str(e))
            return
        self.events.event(obj, "Warning", "NotificationServiceMissing", message)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


_NOTIFIERS: weakref.WeakKeyDictionary[Manager, Notifier] = weakref.WeakKeyDictionary()


def notifier_for(mgr: Manager) -> Notifier:
    """The manager's one Notifier (made on first use; its lanes end with the manager)."""
    n = _NOTIFIERS.get(mgr)
    if n is None:
        n = _NOTIFIERS[mgr] = Notifier(mgr.client, mgr.event_recorder("okra-notifications"))
        mgr.add_closer("notifier", n.close)  # sending stops with the manager
    return n
