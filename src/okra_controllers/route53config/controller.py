"""The AWSRoute53RecordSetConfig controller: make one name's weighted records in a hosted
zone answer as the config says, and say in status when resolvers see them.

observe: a pending change first (GetChange), the load balancers of `targetGroupARN`
records (DescribeTargetGroups, DescribeLoadBalancers; once per target group and process,
as a load balancer's DNS name never changes), then ONE ListResourceRecordSets of the name.
plan: `plan.plan`, pure: the one change batch, or none. act: that batch
(ChangeResourceRecordSets; Route 53 applies a batch atomically). report: the records read
back into `status.applied`, `inSyncAt`/`effectiveAt`, and a `Synced` condition; Events
for writes, problems and repaired drift.

When weights count: Route 53 says a change is applied when GetChange answers INSYNC, and
resolvers that asked before still hold the old answer for the TTL. So `Synced` turns True
only at `effectiveAt` (INSYNC + `spec.ttl`, to the second up); until then it is False with
reason `Pending` (not yet INSYNC) or `Propagating` (INSYNC, TTL not yet past). A Cell
moves to its next step (an analysis) only on `Synced`, so it never judges weights that
resolvers have not seen.

Crash safety: the change's ID is written to `status.pendingChange` the moment Route 53
accepts it. A manager killed before INSYNC finds it there on restart and polls GetChange;
it writes nothing until that change is INSYNC. (Killed between the change and that status
write, the records already read as planned, so the restart writes nothing either, and
counts the TTL from when it looked.)

Deletion: there is no finalizer and nothing is undone: removing the records would take the
name out of DNS.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.api.kinds import ROUTE53_CONFIG
from okra_controllers.api.v1alpha1.route53 import (
    AWSRoute53RecordSetConfig,
    AWSRoute53RecordSetConfigSpec,
    AWSRoute53RecordSetConfigStatus,
    PendingChange,
)
from okra_controllers.aws import route53
from okra_controllers.aws.config import AwsConfig
from okra_controllers.lbconfig import (
    SYNCED,
    aws_message,
    dump_status,
    parse_spec,
    patch_status,
    role_refusal,
    status_of,
    with_read_time,
    with_synced,
)
from okra_controllers.notifications.notifier import Notifier, notifier_for
from okra_controllers.notifications.triggers import DRIFT_REPAIRED, Fired
from okra_controllers.route53config.plan import (
    applied,
    desired,
    effective_at,
    plan,
    weights_note,
)
from okra_runtime.client import Client
from okra_runtime.events import EventRecorder
from okra_runtime.informer import Informer
from okra_runtime.predicates import GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_runtime.timeutil import exact_utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

DEFAULT_RESYNC = 300.0
"""Seconds between idle looks at the records (one ListResourceRecordSets each)."""
POLL = 2.0
"""Seconds between GetChange calls while a change is PENDING."""
INSYNC = "INSYNC"
NO_LOAD_BALANCER = "NoLoadBalancer"

log = structlog.get_logger("okra.route53config")


def whole_second_up(t: datetime.datetime) -> datetime.datetime:
    whole = t.replace(microsecond=0)
    return whole if whole == t else whole + datetime.timedelta(seconds=1)


@dataclass
class Outcome:
    reason: str
    message: str
    synced: bool = False
    found: list[dict[str, Any]] | None = None
    wrote: bool = False
    notes: list[str] = field(default_factory=list)
    before: str = ""
    """The weights found before a write (`a=70, b=30`)."""
    read_at: datetime.datetime | None = None
    pending: PendingChange | None = None
    in_sync_at: datetime.datetime | None = None
    effective_at: datetime.datetime | None = None
    written: dict[str, Any] | None = None
    """The status as written when the change was accepted (its pending change)."""
    wait: float | None = None
    """Seconds until this config should be looked at again (a pending change, the TTL)."""


def _was_synced(
    status: AWSRoute53RecordSetConfigStatus,
    spec: AWSRoute53RecordSetConfigSpec,
    generation: int | None,
) -> bool:
    """okra had this very spec applied and read back (a write needed now means the
    records changed in Route 53, not the spec)."""
    synced = any(c.type == SYNCED and c.status == "True" for c in status.conditions or [])
    if not synced or status.observed_generation != generation or status.applied is None:
        return False
    got = {(r.set_identifier, r.weight) for r in status.applied.records}
    return got == {(r.set_identifier, r.weight) for r in spec.records}


class Route53ConfigReconciler:
    def __init__(
        self,
        client: Client,
        informer: Informer,
        events: EventRecorder,
        aws: AwsConfig,
        *,
        resync: float = DEFAULT_RESYNC,
        clock: Callable[[], datetime.datetime] = exact_utcnow,
        notifier: Notifier | None = None,
    ) -> None:
        self.client = client
        self.configs = informer.store
        self.events = events
        self.aws = aws
        self.resync = resync
        self.clock = clock
        self.notifier = notifier or Notifier(client)
        self._load_balancers: dict[str, route53.LoadBalancer] = {}
        """Target group ARN -> its load balancer (never changes for an ARN)."""

    def now(self) -> datetime.datetime:
        return whole_second_up(self.clock())

    async def reconcile(self, req: Request) -> Result | None:
        raw = self.configs.get(req.name, req.namespace)
        if raw is None or raw["metadata"].get("deletionTimestamp"):
            return None
        status = status_of(AWSRoute53RecordSetConfigStatus, raw)
        config, problems = parse_spec(AWSRoute53RecordSetConfig, raw, lambda _: [])
        if config is None or problems:
            message = "; ".join(problems)
            self.events.event(raw, "Warning", "InvalidSpec", message)
            await self._report(raw, status, Outcome("InvalidSpec", message))
            return None
        spec = config.spec
        was_synced = _was_synced(status, spec, raw["metadata"].get("generation"))
        try:
            outcome = await self._sync(raw, status, spec, was_synced)
        except (ClientError, BotoCoreError) as e:
            message = aws_message(e)
            refusal = role_refusal(e, spec.role_arn)
            if refusal is not None:
                message = refusal
            self.events.event(raw, "Warning", "AWSError", message)
            await self._report(raw, status, Outcome("AWSError", message))
            if refusal is not None:
                raise ReportedError(message) from None
            raise
        if outcome.wrote and was_synced:
            message = (
                f"records of {spec.record_name} {spec.record_type} were changed outside okra "
                f"(weights {outcome.before} instead of "
                f"{', '.join(f'{r.set_identifier}={r.weight}' for r in spec.records)}); restored"
            )
            self.events.event(raw, "Warning", "DriftRepaired", message)
            log.warning("route 53 record drift repaired", found=outcome.before)
        if outcome.wrote:
            self.events.event(raw, "Normal", "RecordsChanged", "; ".join(outcome.notes))
            log.info("wrote route 53 records", notes=outcome.notes)
        elif outcome.reason in (NO_LOAD_BALANCER,):
            self.events.event(raw, "Warning", outcome.reason, outcome.message)
        await self._report(raw, status, outcome, spec)
        if outcome.wait is not None:
            return Result(requeue_after=min(outcome.wait, self.resync))
        return Result(requeue_after=self.resync)

    async def _resolve(self, spec: AWSRoute53RecordSetConfigSpec) -> Mapping[str, Any]:
        """The load balancers of the spec's target groups (with the manager's own
        credentials: the identity that reads those target groups' health)."""
        arns = {r.target_group_arn for r in spec.records if r.target_group_arn}
        missing = arns - set(self._load_balancers)
        if missing:
            self._load_balancers.update(await route53.load_balancers_of(self.aws, missing))
        return self._load_balancers

    # Long on purpose: Route 53's change lifecycle (pending, INSYNC, effective) in one place.
    async def _sync(
        self,
        raw: dict[str, Any],
        status: AWSRoute53RecordSetConfigStatus,
        spec: AWSRoute53RecordSetConfigSpec,
        was_synced: bool,
    ) -> Outcome:
        aws = self.aws.assuming(spec.role_arn)
        out = Outcome("", "", in_sync_at=status.in_sync_at, effective_at=status.effective_at)
        async with aws.client("route53") as r53:
            pending = status.pending_change
            if pending is not None:
                info = await route53.get_change(r53, pending.id)
                if info.get("Status") != INSYNC:
                    out.reason, out.pending, out.wait = "Pending", pending, POLL
                    out.message = (
                        f"Route 53 change {pending.id} is {info.get('Status')}: waiting for "
                        "INSYNC before anything else is written"
                    )
                    out.found = None
                    return out
                self._insync(out, spec)
            lbs = await self._resolve(spec)
            want = desired(spec, lbs)
            found = await route53.list_records(r53, spec.hosted_zone_id, *_key(spec))
            out.read_at = self.clock()
            out.found = found
            if want.problems:
                out.reason, out.message = NO_LOAD_BALANCER, "; ".join(want.problems)
                return out
            p = plan(want.records, found)
            if not p.nothing:
                out.before = weights_note(found)
                if was_synced:
                    await self.notifier.notify_owner(
                        raw,
                        Fired(
                            DRIFT_REPAIRED,
                            f"records of {spec.record_name} were changed outside okra "
                            f"({out.before}); restored",
                        ),
                        self.clock(),
                    )
                info = await route53.change_records(
                    r53, spec.hosted_zone_id, p.changes, f"okra {raw['metadata']['name']}"
                )
                out.wrote = True
                out.notes.append(
                    f"changed {spec.record_name} {spec.record_type} in one batch: "
                    f"{weights_note([c['ResourceRecordSet'] for c in p.changes])}"
                    + (f" (deleted {', '.join(p.deleted)})" if p.deleted else "")
                )
                change = PendingChange(
                    id=str(info["Id"]),
                    submitted_at=self.now(),
                    generation=raw["metadata"].get("generation"),
                )
                # Durable before anything else: a restart polls this change, not writes anew.
                pending_status = status.model_copy(deep=True)
                pending_status.pending_change = change
                out.written = dump_status(pending_status)
                await patch_status(
                    self.client, ROUTE53_CONFIG, raw, dump_status(status), out.written
                )
                if info.get("Status") != INSYNC:
                    out.reason, out.pending, out.wait = "Pending", change, POLL
                    out.message = f"Route 53 change {change.id} is {info.get('Status')}"
                    return out
                self._insync(out, spec)
                found = await route53.list_records(r53, spec.hosted_zone_id, *_key(spec))
                out.read_at = self.clock()
                out.found = found
            if not plan(want.records, found).nothing:
                out.reason = "NotApplied"
                out.message = "the records do not (yet) show the written state"
                out.wait = POLL
                return out
        now = self.clock()
        if out.effective_at is not None and now < out.effective_at:
            out.reason = "Propagating"
            out.message = (
                f"Route 53 is INSYNC since {_iso(out.in_sync_at)}; resolvers holding the "
                f"previous answer keep it for the TTL ({spec.ttl}s): in effect at "
                f"{_iso(out.effective_at)}"
            )
            out.wait = (out.effective_at - now).total_seconds()
            return out
        out.synced = True
        out.reason, out.message = "Synced", "the records answer as specified"
        return out

    def _insync(self, out: Outcome, spec: AWSRoute53RecordSetConfigSpec) -> None:
        out.pending = None
        out.in_sync_at = self.now()
        out.effective_at = effective_at(out.in_sync_at, spec.ttl)

    async def _report(
        self,
        raw: dict[str, Any],
        old: AWSRoute53RecordSetConfigStatus,
        outcome: Outcome,
        spec: AWSRoute53RecordSetConfigSpec | None = None,
    ) -> None:
        """Write status if it changed (an idle look writes nothing). A sync that could not
        look (invalid spec, AWS error) keeps `applied` and the pending change."""
        new = with_synced(
            old,
            synced=outcome.synced,
            reason=outcome.reason,
            message=outcome.message,
            generation=raw["metadata"].get("generation"),
            now=whole_second_up(self.clock()),
            wrote=outcome.wrote,
        )
        if spec is not None:
            new.pending_change = outcome.pending
            new.in_sync_at = outcome.in_sync_at
            new.effective_at = outcome.effective_at
            if outcome.found is not None:
                new.applied = applied(spec, outcome.found)
        new = with_read_time(old, new, outcome.read_at)
        # A pending change just written is in the API server already: patch from there.
        before = outcome.written if outcome.written is not None else dump_status(old)
        await patch_status(self.client, ROUTE53_CONFIG, raw, before, dump_status(new))


def _key(spec: AWSRoute53RecordSetConfigSpec) -> tuple[str, str]:
    return spec.record_name, spec.record_type


def _iso(t: datetime.datetime | None) -> str:
    return t.isoformat().replace("+00:00", "Z") if t is not None else "-"


def register(
    mgr: Manager,
    aws: AwsConfig,
    *,
    concurrency: int = 1,
    resync: float = DEFAULT_RESYNC,
) -> Route53ConfigReconciler:
    """Build the reconciler and its controller on `mgr`. Reconciles on spec changes only;
    the controller requeues itself (every `resync`, or sooner while a change propagates)."""
    rec = Route53ConfigReconciler(
        mgr.client,
        mgr.informer_for(ROUTE53_CONFIG),
        mgr.event_recorder("route53config-controller"),
        aws,
        resync=resync,
        notifier=notifier_for(mgr),
    )
    (
        mgr.builder("route53config")
        .for_(ROUTE53_CONFIG, predicates=(GenerationChanged(),))
        .with_options(max_concurrent_reconciles=concurrency)
        .complete(rec)
    )
    return rec


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["route53config"]`)."""
    register(
        mgr,
        settings.aws,
        concurrency=settings.concurrency,
        resync=min(DEFAULT_RESYNC, settings.drift_check),
    )
