"""What one pass of a config controller looked at (`Look`) and what its backend's sync
found and did (`Outcome`): the facts the skeleton turns into Events, status and the next
look, whatever the backend."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

C = TypeVar("C")
S = TypeVar("S")

Json = dict[str, Any]


@dataclass
class Look(Generic[C, S]):
    """The config this pass syncs: the object as last written (`raw`, replaced when the
    pass writes it, as when the finalizer goes on), its parsed model and status, and
    whether okra had this very spec applied and read back (`was_synced`: a write needed
    now repairs a change made outside okra, not a spec change)."""

    raw: Json
    config: C
    status: S
    was_synced: bool


@dataclass
class Outcome:
    """What one sync found and did. A backend adds what it read (a rule, a listener,
    records) in a subclass of its own."""

    reason: str
    message: str
    synced: bool = False
    wrote: str | None = None
    """The reason of the Normal Event of the AWS write made (`RuleCreated`,
    `ListenerModified`, `RecordsChanged`, ...); None: nothing written."""
    notes: list[str] = field(default_factory=list)
    """What was done, the message of that Event."""
    noted: str | None = None
    """The reason of a Normal Event of `notes` when nothing was written (`RuleAdopted`)."""
    warn: bool = False
    """`reason` is a problem the user should see: a Warning Event of it (`Conflict`,
    `ListenerNotFound`, `NoLoadBalancer`)."""
    drift: str | None = None
    """The `DriftRepaired` Event's message: AWS was changed outside okra and this sync
    wrote it back."""
    before: str = ""
    """What AWS showed before the repairing write (`name=70, other=30`), for the log."""
    read_at: datetime.datetime | None = None
    """When AWS was read for what the status shows (`status.lastReadTime`); None: not read."""
    soon: bool = False
    """Written but not (yet) shown by AWS: look again soon, on the controller's backoff."""
    wait: float | None = None
    """Seconds until the config should be looked at again (a pending change, a TTL), at
    most the idle period; None: the idle period."""
    written: Json | None = None
    """The status as the sync already wrote it (a pending change made durable at once):
    the report patches from there."""
