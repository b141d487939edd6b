"""The reconcile every config controller (ALB listener rule, NLB default action, Route 53
records) runs; a subclass, its backend, supplies what differs.

One pass: the config read into its model (an `InvalidSpec` Event and condition naming
the field when it cannot be), the backend's `sync` (observe AWS, write what its plan
says, read it back) on one AWS client of the config's role, then the Events, the status
(`status.applied`, `observedGeneration`, `lastAppliedTime`, `lastReadTime`, `Synced`)
written only when something in it changed, and when to look again. AWS refusing is an
`AWSError` Event and condition; STS refusing the config's role is reported once and
retried on the reported backoff, without a traceback.

Drift: a write needed for a spec okra had applied and read back means AWS was changed
outside okra. The backend hands what it found to `record_drift` before the repairing
write (into the owning Cell's notification outbox: a manager killed between the repair
and a later report would restore AWS and never tell), and the pass says it in a
`DriftRepaired` Event once the repair is written.

Deletion: a backend with a `finalizer` has it put on by `claim` before it writes or
adopts anything in AWS, and `release`s what okra made when the config is deleted; the
finalizer then comes off. The others let a deleted config go and undo nothing.
"""

from __future__ import annotations

import datetime
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.api.v1alpha1.cell import LoadBalancerConfigStatus
from okra_controllers.aws.config import AwsConfig
from okra_controllers.configctl.outcome import Json, Look, Outcome
from okra_controllers.finalizers import remove_finalizer
from okra_controllers.lbconfig import (
    aws_message,
    dump_status,
    patch_status,
    role_refusal,
    status_of,
    with_read_time,
    with_synced,
)
from okra_controllers.notifications.notifier import Notifier
from okra_controllers.notifications.triggers import DRIFT_REPAIRED, Fired
from okra_runtime.client import Client
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.gvk import GVK
from okra_runtime.informer import Informer
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_runtime.timeutil import utcnow

DEFAULT_RESYNC = 300.0
"""Seconds between idle looks at AWS, unless a controller's drift check is shorter."""


class _Spec(Protocol):
    @property
    def role_arn(self) -> str | None: ...


class Config(Protocol):
    """A config model: its spec names the role okra assumes for it (`roleARN`)."""

    @property
    def spec(self) -> _Spec: ...


ConfigT = TypeVar("ConfigT", bound=Config)
StatusT = TypeVar("StatusT", bound=LoadBalancerConfigStatus)
OutcomeT = TypeVar("OutcomeT", bound=Outcome)


class NotClaimedError(Exception):
    """The finalizer could not be added (the config changed or is gone): end the pass
    with `result`, having written nothing to AWS."""

    def __init__(self, result: Result | None) -> None:
        super().__init__("finalizer not added")
        self.result = result


class ConfigReconciler(ABC, Generic[ConfigT, StatusT, OutcomeT]):
    """A config controller's reconciler. A subclass names its kind, AWS service, models
    and logs, and implements `load`, `was_synced`, `sync`, `fill`; the rest is here."""

    name: ClassVar[str]
    """The controller's name (`--controllers`, metrics, the Event recorder's)."""
    kind: ClassVar[GVK]
    service: ClassVar[str]
    """The AWS service `sync` is handed a client of (`elbv2`, `route53`)."""
    finalizer: ClassVar[str | None] = None
    releasing: ClassVar[str] = ""
    """What `release` does, prefixing its AWS errors' Event (`deleting the listener rule`)."""
    log: ClassVar[Any]
    drift_log: ClassVar[str]
    write_log: ClassVar[str]
    status_model: type[StatusT]

    def __init__(
        self,
        client: Client,
        informer: Informer,
        events: EventRecorder,
        aws: AwsConfig,
        *,
        resync: float = DEFAULT_RESYNC,
        clock: Callable[[], datetime.datetime] = utcnow,
        notifier: Notifier | None = None,
    ) -> None:
        self.client = client
        self.notifier = notifier or Notifier(client)
        self.configs = informer.store
        self.events = events
        self.aws = aws
        self.resync = resync
        self.clock = clock

    # What a backend supplies.

    @abstractmethod
    def load(self, raw: Json) -> tuple[ConfigT | None, list[str]]:
        """The config parsed, or the problems with it, each naming the field."""

    @abstractmethod
    def was_synced(self, status: StatusT, config: ConfigT, generation: int | None) -> bool:
        """Whether `status` says okra had this very spec applied and read back."""

    @abstractmethod
    async def sync(self, api: Any, look: Look[ConfigT, StatusT]) -> OutcomeT:
        """Observe AWS through `api`, write what the plan says, read it back."""

    @abstractmethod
    def fill(self, new: StatusT, config: ConfigT, outcome: OutcomeT) -> None:
        """Put what `sync` read (`applied`, ...) into the status to be written."""

    def loaded(self, raw: Json, config: ConfigT, status: StatusT) -> None:
        """Said of a config just read (its deprecated spellings); nothing by default."""

    def idle(self, config: ConfigT) -> float:
        """Seconds until a config with nothing pending is looked at again."""
        return self.resync

    def now(self) -> datetime.datetime:
        """The time the status records for this pass (`lastTransitionTime`, ...)."""
        return self.clock()

    def dump(self, status: StatusT) -> Json:
        """The status as written."""
        return dump_status(status)

    async def release(self, api: Any, raw: Json, status: StatusT) -> None:
        """Undo what okra made in AWS for a deleted config (with a `finalizer` only)."""

    def drift_repaired(self, outcome: OutcomeT) -> None:
        self.log.warning(self.drift_log, found=outcome.before)

    def written(self, outcome: OutcomeT) -> None:
        self.log.info(self.write_log, notes=outcome.notes)

    # What a backend calls from `sync`.

    async def claim(self, look: Look[ConfigT, StatusT]) -> None:
        """Put the finalizer on (once), before anything is written to or adopted in AWS;
        `NotClaimedError` when the config changed or is gone meanwhile."""
        finalizers = look.raw["metadata"].get("finalizers") or []
        if self.finalizer is None or self.finalizer in finalizers:
            return
        look.raw["metadata"]["finalizers"] = [*finalizers, self.finalizer]
        try:
            look.raw = await self.client.update(look.raw)
        except ConflictError:
            raise NotClaimedError(Result(requeue=True)) from None
        except NotFoundError:
            raise NotClaimedError(None) from None

    async def record_drift(self, look: Look[ConfigT, StatusT], message: str) -> None:
        """Tell the owning Cell's subscribers that AWS was changed outside okra, before the
        repair is written. An API error here fails the pass before the repair; it is
        retried as any."""
        await self.notifier.notify_owner(look.raw, Fired(DRIFT_REPAIRED, message), self.clock())

    # The pass.

    async def reconcile(self, req: Request) -> Result | None:
        raw = self.configs.get(req.name, req.namespace)
        if raw is None:
            return None
        if raw["metadata"].get("deletionTimestamp"):
            return await self._finalize(raw) if self.finalizer is not None else None
        status = status_of(self.status_model, raw)
        config, problems = self.load(raw)
        if config is None or problems:
            message = "; ".join(problems)
            self.events.event(raw, "Warning", "InvalidSpec", message)
            await self._report(raw, status, Outcome("InvalidSpec", message))
            return None
        self.loaded(raw, config, status)
        synced = self.was_synced(status, config, raw["metadata"].get("generation"))
        look = Look(raw, config, status, synced)
        try:
            async with self.aws.assuming(config.spec.role_arn).client(self.service) as api:
                outcome = await self.sync(api, look)
        except NotClaimedError as e:
            return e.result
        except (ClientError, BotoCoreError) as e:
            reported = await self._refused(look, e)
            if reported is not None:
                raise reported from None
            raise
        self._announce(look.raw, outcome)
        await self._report(look.raw, status, outcome, lambda new: self.fill(new, config, outcome))
        if outcome.soon:
            return Result(requeue=True)
        idle = self.idle(config)
        return Result(requeue_after=idle if outcome.wait is None else min(outcome.wait, idle))

    async def _refused(
        self, look: Look[ConfigT, StatusT], e: ClientError | BotoCoreError
    ) -> Exception | None:
        """AWS refusing, as an `AWSError` Event and condition; the `ReportedError` to
        raise when it is STS refusing the config's role (None: raise `e` itself)."""
        refusal = role_refusal(e, look.config.spec.role_arn)
        message = refusal or aws_message(e)
        self.events.event(look.raw, "Warning", "AWSError", message)
        await self._report(look.raw, look.status, Outcome("AWSError", message))
        return None if refusal is None else ReportedError(message)

    def _announce(self, raw: Json, outcome: OutcomeT) -> None:
        """The Events of a sync: the drift it repaired, then its write, an adoption or a
        problem."""
        if outcome.drift is not None:
            self.events.event(raw, "Warning", "DriftRepaired", outcome.drift)
            self.drift_repaired(outcome)
        if outcome.wrote:
            self.events.event(raw, "Normal", outcome.wrote, "; ".join(outcome.notes))
            self.written(outcome)
        elif outcome.noted:
            self.events.event(raw, "Normal", outcome.noted, "; ".join(outcome.notes))
        elif outcome.warn:
            self.events.event(raw, "Warning", outcome.reason, outcome.message)

    async def _report(
        self,
        raw: Json,
        old: StatusT,
        outcome: Outcome,
        fill: Callable[[StatusT], None] | None = None,
    ) -> None:
        """Write status if it changed (an idle look writes nothing). What AWS showed is
        kept from before when this pass could not look (invalid spec, AWS error: no
        `fill`)."""
        new = with_synced(
            old,
            synced=outcome.synced,
            reason=outcome.reason,
            message=outcome.message,
            generation=raw["metadata"].get("generation"),
            now=self.now(),
            wrote=bool(outcome.wrote),
        )
        if fill is not None:
            fill(new)
        new = with_read_time(old, new, outcome.read_at)
        before = outcome.written if outcome.written is not None else self.dump(old)
        await patch_status(self.client, self.kind, raw, before, self.dump(new))

    async def _finalize(self, raw: Json) -> Result | None:
        """`release`, then let the config go (the finalizer off)."""
        finalizer = self.finalizer
        if finalizer is None or finalizer not in (raw["metadata"].get("finalizers") or []):
            return None
        status = status_of(self.status_model, raw)
        role = (raw.get("spec") or {}).get("roleARN")
        try:
            async with self.aws.assuming(role if isinstance(role, str) else None).client(
                self.service
            ) as api:
                await self.release(api, raw, status)
        except (ClientError, BotoCoreError) as e:
            message = aws_message(e)
            self.events.event(raw, "Warning", "AWSError", f"{self.releasing}: {message}")
            raise
        return await remove_finalizer(self.client, raw, finalizer)
