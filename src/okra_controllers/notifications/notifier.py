"""Delivery: a background queue per process, so a reconcile only enqueues.

Each notification is posted until the receiver answers 2xx, with exponential
backoff (0.5 s doubling, capped at 30 s) for `MAX_ATTEMPTS` tries: a receiver
that is down for a few minutes still gets every notification, in order per
Cell. Service settings (ConfigMap `okra-notifications`) and secrets (Secret
`okra-notifications`) are read when a notification is sent, so a fixed URL
takes effect for notifications already queued. Secret values are never logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
import yaml

from okra_controllers.notifications.triggers import Fired, Subscription
from okra_runtime.client import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.gvk import GVK

CONFIGMAP = GVK("", "v1", "ConfigMap")
SECRET = GVK("", "v1", "Secret")
NAME = "okra-notifications"
MAX_ATTEMPTS = 12
TIMEOUT = aiohttp.ClientTimeout(total=10)
log = structlog.get_logger("okra.notifications")
_FIELD = re.compile(r"\{\{\s*\.?([A-Za-z]+)\s*\}\}")


@dataclass(frozen=True)
class Notification:
    namespace: str
    cell: str
    subscription: Subscription
    fired: Fired
    fields: dict[str, Any]


def fields_for(cell: dict[str, Any], status: Any, fired: Fired) -> dict[str, Any]:
    meta = cell.get("metadata") or {}
    return {
        "trigger": fired.trigger,
        "cell": meta.get("name"),
        "namespace": meta.get("namespace"),
        "message": fired.message,
        "phase": status.phase,
        "health": status.health,
        "stableVersion": status.stable_version,
        "canaryVersion": status.canary_version,
        "canaryWeight": status.canary_weight,
        "step": fired.step + 1 if fired.step is not None else None,
        "rolloutId": status.rollout_id,
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def body(kind: str, settings: dict[str, Any], n: Notification) -> bytes:
    f = {**n.fields, "recipient": n.subscription.recipient}
    if isinstance(settings.get("body"), str):
        raw = _FIELD.sub(lambda m: json.dumps(str(f.get(m.group(1), "")))[1:-1], settings["body"])
        return raw.encode()
    if kind == "slack":
        text = f"[okra] {f['namespace']}/{f['cell']}: {f['trigger']}: {f['message']}"
        doc: dict[str, Any] = {"text": text}
        if n.subscription.recipient:
            doc["channel"] = n.subscription.recipient
        return json.dumps(doc).encode()
    return json.dumps(f).encode()


class Notifier:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.queue: asyncio.Queue[Notification] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._session: aiohttp.ClientSession | None = None

    def send(self, n: Notification) -> None:
        """Enqueue (never blocks); the sender starts with the first notification."""
        self.queue.put_nowait(n)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="notifier")

    async def _run(self) -> None:
        try:
            while True:
                n = await self.queue.get()
                await self._deliver(n)
        finally:
            if self._session is not None:
                await self._session.close()
                self._session = None

    async def _settings(self, n: Notification) -> tuple[str, dict[str, Any]] | None:
        try:
            cm = await self.client.get(CONFIGMAP, NAME, n.namespace)
        except NotFoundError:
            return None
        data = cm.get("data") or {}
        for kind in ("webhook", "slack"):
            raw = data.get(f"service.{kind}.{n.subscription.service}")
            if raw is not None:
                settings = yaml.safe_load(raw) or {}
                return kind, settings if isinstance(settings, dict) else {}
        return None

    async def _secret(self, namespace: str) -> dict[str, str]:
        import base64

        try:
            s = await self.client.get(SECRET, NAME, namespace)
        except NotFoundError:
            return {}
        return {k: base64.b64decode(v).decode() for k, v in (s.get("data") or {}).items()}

    async def _deliver(self, n: Notification) -> None:
        delay = 0.5
        where = f"{n.namespace}/{n.cell} {n.fired.trigger} -> {n.subscription.service}"
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                found = await self._settings(n)
                if found is None:
                    log.warning("no such notification service", notification=where)
                    return
                kind, settings = found
                secrets = await self._secret(n.namespace)

                def resolve(v: Any, secrets: dict[str, str] = secrets) -> str:
                    s = str(v or "")
                    return secrets.get(s[1:], "") if s.startswith("$") else s

                url = resolve(settings.get("url"))
                headers = {"Content-Type": "application/json"}
                for h in settings.get("headers") or []:
                    headers[str(h.get("name"))] = resolve(h.get("value"))
                if self._session is None:
                    self._session = aiohttp.ClientSession(timeout=TIMEOUT)
                async with self._session.post(
                    url, data=body(kind, settings, n), headers=headers
                ) as resp:
                    if 200 <= resp.status < 300:
                        log.info("notification sent", notification=where, attempt=attempt)
                        return
                    problem = f"HTTP {resp.status}"
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as e:
                problem = type(e).__name__
            except Exception as e:  # an API error reading the settings: retried too
                problem = f"{type(e).__name__}: {e}"
            log.warning(
                "notification not delivered; retrying",
                notification=where,
                attempt=attempt,
                problem=problem,
            )
            await asyncio.sleep(delay)
            delay = min(30.0, delay * 2)
        log.error("notification dropped after retries", notification=where)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
