"""The outbox: pending notifications kept in the notifying object's status.

A controller that fires a trigger appends one `PendingNotification` per subscription to
the status it is about to write, so the change and the promise to report it are one
write (guarded by resourceVersion): either both are in the API server or neither is. The
`Notifier` sends what it finds there and removes each entry once its receiver accepted
it. A manager killed in between finds the entries again when it reconciles the object
after restarting, and sends them again under the same key: at least once, never lost.

`entries` and `merged` are pure; `add` and `remove` are the read-modify-write of the
status (resourceVersion-guarded, retried on conflict) for a writer that is not the
object's own controller (the ALB config controller reporting a repaired drift to its
Cell) and for the notifier.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from okra_controllers.api.v1alpha1.common import PendingNotification
from okra_controllers.notifications.triggers import Fired, Subscription, subscriptions, wanted
from okra_runtime.client import Client
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.gvk import GVK

MAX_PENDING = 50
"""Entries an outbox keeps; beyond that the oldest are dropped (a receiver down for a
long time must not grow an object without bound)."""


def entries(
    subs: Sequence[Subscription],
    fired: Iterable[Fired],
    fields: Callable[[Fired], dict[str, Any]],
    *,
    source: str,
    now: datetime.datetime,
) -> list[PendingNotification]:
    """One entry per fired trigger and subscription that wants it. `source` names the
    change uniquely (the object's uid and the resourceVersion the change was planned
    from): with the trigger's position and the subscription it makes the key."""
    out = []
    for i, f in enumerate(fired):
        for sub in wanted(list(subs), f):
            raw = f"{source}|{i}|{f.trigger}|{sub.service}|{sub.recipient}"
            key = hashlib.sha256(raw.encode()).hexdigest()[:32]
            payload = {**fields(f), "id": key}
            out.append(
                PendingNotification(
                    key=key,
                    trigger=f.trigger,
                    service=sub.service,
                    recipient=sub.recipient,
                    payload=json.dumps(payload, sort_keys=True, default=str),
                    created=now,
                )
            )
    return out


def merged(
    existing: Sequence[PendingNotification] | None, new: Sequence[PendingNotification]
) -> list[PendingNotification] | None:
    """`existing` then the `new` entries it lacks, the newest `MAX_PENDING`; None when
    empty (so an object that never notified has no `notifications` in its status)."""
    keys = {e.key for e in existing or ()}
    out = [*(existing or ()), *(n for n in new if n.key not in keys)]
    return out[-MAX_PENDING:] or None


class WithOutbox(Protocol):
    notifications: list[PendingNotification] | None


def stage(
    obj: dict[str, Any],
    before: WithOutbox,
    after: WithOutbox,
    fired: Sequence[Fired],
    fields: Callable[[Fired], dict[str, Any]],
    now: datetime.datetime,
) -> None:
    """Set `after.notifications` (the status about to be written for `obj`, as the
    cache showed it) to `before`'s pending entries and those of the triggers fired now,
    for `obj`'s subscriptions (its annotations). Every controller whose objects notify
    calls this just before its status write, then `Notifier.track` with the result."""
    meta = obj.get("metadata") or {}
    subs = subscriptions(meta.get("annotations") or {})
    source = f"{meta.get('uid')}/{meta.get('resourceVersion')}"
    new = entries(subs, fired, fields, source=source, now=now) if subs and fired else []
    after.notifications = merged(before.notifications, new)


async def add(
    client: Client, gvk: GVK, name: str, namespace: str, new: Sequence[PendingNotification]
) -> list[PendingNotification]:
    """Append `new` to the object's outbox; the outbox as written (empty if the object
    is gone)."""
    return await _edit(client, gvk, name, namespace, lambda old: merged(old, new))


async def remove(client: Client, gvk: GVK, name: str, namespace: str, key: str) -> None:
    """Drop the entry `key` from the object's outbox (nothing if it is gone already)."""

    def without(old: list[PendingNotification] | None) -> list[PendingNotification] | None:
        return [e for e in old or () if e.key != key] or None

    await _edit(client, gvk, name, namespace, without)


def pending_of(obj: dict[str, Any]) -> list[PendingNotification]:
    """The outbox of an object as the server sent it (entries that do not parse are
    skipped: a hand-edited status must not stop delivery of the others)."""
    out = []
    for item in (obj.get("status") or {}).get("notifications") or []:
        try:
            out.append(PendingNotification.model_validate(item))
        except ValueError:
            continue
    return out


async def _edit(
    client: Client,
    gvk: GVK,
    name: str,
    namespace: str,
    change: Callable[[list[PendingNotification] | None], list[PendingNotification] | None],
) -> list[PendingNotification]:
    for _ in range(10):
        try:
            obj = await client.get(gvk, name, namespace)
        except NotFoundError:
            return []
        old = pending_of(obj) or None
        new = change(old)
        if [e.key for e in old or ()] == [e.key for e in new or ()]:
            return list(new or ())
        status = dict(obj.get("status") or {})
        if new:
            status["notifications"] = [
                e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in new
            ]
        else:
            status.pop("notifications", None)
        obj["status"] = status
        try:
            await client.update_status(obj)  # guarded by the resourceVersion just read
        except ConflictError:
            continue
        except NotFoundError:
            return []
        return list(new or ())
    raise ConflictError(409, "Conflict", f"outbox of {namespace}/{name} kept changing")
