"""Kubernetes time formats."""

from __future__ import annotations

import datetime
from typing import Any


def micro_time(now: datetime.datetime | None = None) -> str:
    """A `metav1.MicroTime` string (RFC 3339 with microseconds, UTC)."""
    now = now or datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(now: datetime.datetime | None = None) -> str:
    """A `metav1.Time` string (RFC 3339, seconds, UTC)."""
    now = now or datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def utcnow() -> datetime.datetime:
    """Now, in UTC, to the second: what metav1.Time stores, so a time written to status
    and read back compares equal to the one that was planned with."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def exact_utcnow() -> datetime.datetime:
    """Now, in UTC, to the microsecond: for deadlines, where `utcnow` could be up to a
    second early."""
    return datetime.datetime.now(datetime.UTC)


def parse_time(value: Any) -> datetime.datetime | None:
    """A time the API server stored (RFC 3339, `Z` or an offset, any fraction of a
    second), in UTC if it names no zone; None when unset or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=datetime.UTC)
