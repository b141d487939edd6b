"""The reconcile contract, as small as controller-runtime's.

A reconciler gets a `Request` (which object changed, never what changed) and
drives the world towards that object's spec. It returns a `Result` (or None)
or raises: an ordinary exception is logged, counted and retried with backoff;
a `TerminalError` is logged and counted but not retried, because retrying
cannot help (the input is wrong until someone changes it, which enqueues anew).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True, order=True)
class Request:
    name: str
    namespace: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True, slots=True)
class Result:
    """`requeue_after`: reconcile again after that many seconds (and forget the
    failure backoff). `requeue`: again soon, with rate-limited backoff."""

    requeue: bool = False
    requeue_after: float | None = None


class TerminalError(Exception):
    """Reconciling this object cannot succeed until its input changes."""


@runtime_checkable
class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result | None: ...


ReconcileFunc = Callable[[Request], Awaitable[Result | None]]
