"""The reconcile contract, as small as controller-runtime's.

A reconciler gets a `Request` (which object changed, never what changed) and
drives the world towards that object's spec. It returns a `Result` (or None)
or raises: an ordinary exception is logged, counted and retried with backoff;
a `TerminalError` is logged and counted but not retried, because retrying
cannot help (the input is wrong until someone changes it, which enqueues anew).
A `ReportedError` is an expected failure the reconciler has already explained to
the object's owner (a status condition, an Event): counted and retried with a
backoff of its own, logged as one warning without a traceback, not as a bug.
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
    failure backoff). `requeue`: again soon, with rate-limited backoff. `in_progress`:
    the object is mid-change (a rollout between two steps); its next reconciles go
    before first reports on new or failing objects (see `okra_runtime.priority`), and
    with a short `requeue_after` (its next step is due then) they keep waiting until
    that step."""

    requeue: bool = False
    requeue_after: float | None = None
    in_progress: bool = False


class TerminalError(Exception):
    """Reconciling this object cannot succeed until its input changes."""


class ReportedError(Exception):
    """Reconciling failed for a reason already told to the object's owner in its
    status and an Event, typically a refusal caused by the user's input (a named
    resource that does not exist, a value the remote API rejects, a permission
    missing). It is not a bug: the controller logs one warning, without a traceback,
    on the first failure and debug on the retries, counts it as a reconcile error,
    and retries it on a backoff of its own (see `Controller`), so that objects
    that keep failing never delay the retries of healthy ones. Raise it (or an
    exception that also subclasses it) only after reporting the cause.
    """


@runtime_checkable
class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result | None: ...


ReconcileFunc = Callable[[Request], Awaitable[Result | None]]
