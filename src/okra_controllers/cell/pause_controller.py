"""The Pause controller: a Pause starts when created and ends when it expires
(at `spec.expireTime`, by a timer, not on the next resync) or is cancelled
(`spec.cancelled`, set by `okra promote`). Its owner reacts to the status."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Literal

from okra_controllers.api.kinds import PAUSE
from okra_controllers.api.v1alpha1.cell import Pause, PauseSpec, PauseStatus
from okra_controllers.api.validation import load_or_report
from okra_controllers.settings import Settings
from okra_controllers.statuswrite import write_status
from okra_runtime.client import Client
from okra_runtime.events import EventRecorder
from okra_runtime.informer import Informer
from okra_runtime.manager import Manager
from okra_runtime.predicates import GenerationChanged
from okra_runtime.reconcile import Request, Result
from okra_runtime.timeutil import utcnow


def pause_phase(
    spec: PauseSpec, now: datetime.datetime
) -> tuple[Literal["Started", "Expired", "Cancelled"], float | None]:
    """The pause's phase at `now`, and the seconds until it expires (None: no timer)."""
    if spec.cancelled:
        return "Cancelled", None
    if spec.expire_time is None:
        return "Started", None
    remaining = (spec.expire_time - now).total_seconds()
    return ("Expired", None) if remaining <= 0 else ("Started", remaining)


class PauseReconciler:
    def __init__(
        self,
        client: Client,
        informer: Informer,
        clock: Callable[[], datetime.datetime] = utcnow,
        events: EventRecorder | None = None,
    ) -> None:
        self.client = client
        self.events = events
        self.pauses = informer.store
        self.clock = clock

    async def reconcile(self, req: Request) -> Result | None:
        loaded = load_or_report(self.pauses, req, Pause, self.events)
        if loaded is None:
            return None
        raw, pause = loaded
        status = pause.status or PauseStatus()
        if status.phase in ("Expired", "Cancelled"):
            return None
        now = self.clock()
        phase, wait = pause_phase(pause.spec, now)
        if phase != status.phase:
            new = PauseStatus(phase=phase, last_transition_time=now)
            if not await write_status(self.client, raw, new):
                return Result(requeue=True)
        return Result(requeue_after=wait) if wait else None


def setup(mgr: Manager, settings: Settings) -> None:
    rec = PauseReconciler(
        mgr.client, mgr.informer_for(PAUSE), events=mgr.event_recorder("pause-controller")
    )
    (
        mgr.builder("pause")
        .for_(PAUSE, predicates=(GenerationChanged(),))
        .with_options(max_concurrent_reconciles=settings.concurrency)
        .complete(rec)
    )
