"""Kubernetes time formats."""

from __future__ import annotations

import datetime


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
