"""The AWSRoute53RecordSetConfig controller: make one name's weighted records in a hosted
zone answer as the config says, and say in status when resolvers see them.

observe: a pending change first (GetChange), the load balancers of `targetGroupARN`
records (DescribeTargetGroups, DescribeLoadBalancers; once per target group and process,
as a load balancer's DNS name never changes), then ONE ListResourceRecordSets of the name.
plan: `plan.plan`, pure: the one change batch, or none. act: that batch
(ChangeResourceRecordSets; Route 53 applies a batch atomically). report: the records read
back into `status.applied`, `inSyncAt`/`effectiveAt`, and a `Synced` condition; Events
for writes, problems and repaired drift.

The pass around these (the Events, the status write, when to look again, the wiring) is
`configctl`'s; this module is its backend.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from okra_controllers import configctl
from okra_controllers.api.kinds import ROUTE53_CONFIG
from okra_controllers.api.v1alpha1.route53 import (
    AWSRoute53RecordSetConfig,
    AWSRoute53RecordSetConfigSpec,
    AWSRoute53RecordSetConfigStatus,
    PendingChange,
)
from okra_controllers.aws import route53
from okra_controllers.aws.config import AwsConfig
from okra_controllers.configctl import ConfigReconciler, Look, Outcome
from okra_controllers.lbconfig import SYNCED, parse_spec, patch_status
from okra_controllers.route53config.plan import (
    Plan,
    applied,
    desired,
    effective_at,
    plan,
    weights_note,
)
from okra_runtime.timeutil import exact_utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

DEFAULT_RESYNC = configctl.DEFAULT_RESYNC
"""Seconds between idle looks at the records (one ListResourceRecordSets each)."""
POLL = 2.0
"""Seconds between GetChange calls while a change is PENDING."""
INSYNC = "INSYNC"
NO_LOAD_BALANCER = "NoLoadBalancer"

Config = AWSRoute53RecordSetConfig
Spec = AWSRoute53RecordSetConfigSpec
Status = AWSRoute53RecordSetConfigStatus
Json = dict[str, Any]


def whole_second_up(t: datetime.datetime) -> datetime.datetime:
    whole = t.replace(microsecond=0)
    return whole if whole == t else whole + datetime.timedelta(seconds=1)


@dataclass
class Route53Outcome(Outcome):
    found: list[Json] | None = None
    """The records as Route 53 last listed them (None: not listed)."""
    pending: PendingChange | None = None
    in_sync_at: datetime.datetime | None = None
    effective_at: datetime.datetime | None = None


class Route53ConfigReconciler(ConfigReconciler[Config, Status, Route53Outcome]):
    """One name's weighted records: GetChange, ListResourceRecordSets,
    ChangeResourceRecordSets."""

    name = "route53config"
    kind = ROUTE53_CONFIG
    service = "route53"
    status_model = Status
    log = structlog.get_logger("okra.route53config")
    drift_log = "route 53 record drift repaired"
    write_log = "wrote route 53 records"

    def __init__(
        self, *args: Any, clock: Callable[[], datetime.datetime] = exact_utcnow, **options: Any
    ) -> None:
        super().__init__(*args, clock=clock, **options)
        self._load_balancers: dict[str, route53.LoadBalancer] = {}
        """Target group ARN -> its load balancer (never changes for an ARN)."""

    def now(self) -> datetime.datetime:
        return whole_second_up(self.clock())

    def load(self, raw: Json) -> tuple[Config | None, list[str]]:
        return parse_spec(AWSRoute53RecordSetConfig, raw, lambda _: [])

    def was_synced(self, status: Status, config: Config, generation: int | None) -> bool:
        """okra had this very spec applied and read back (a write needed now means the
        records changed in Route 53, not the spec)."""
        synced = any(c.type == SYNCED and c.status == "True" for c in status.conditions or [])
        if not synced or status.observed_generation != generation or status.applied is None:
            return False
        got = {(r.set_identifier, r.weight) for r in status.applied.records}
        return got == {(r.set_identifier, r.weight) for r in config.spec.records}

    async def _resolve(self, spec: Spec) -> Mapping[str, Any]:
        """The load balancers of the spec's target groups (with the manager's own
        credentials: the identity that reads those target groups' health)."""
        arns = {r.target_group_arn for r in spec.records if r.target_group_arn}
        missing = arns - set(self._load_balancers)
        if missing:
            self._load_balancers.update(await route53.load_balancers_of(self.aws, missing))
        return self._load_balancers

    async def sync(self, api: Any, look: Look[Config, Status]) -> Route53Outcome:
        """Route 53's change lifecycle: a pending change polled until INSYNC, the records
        listed, the one batch written (and made durable as pending), read back, in effect
        from INSYNC + TTL."""
        status, spec = look.status, look.config.spec
        out = Route53Outcome("", "", in_sync_at=status.in_sync_at, effective_at=status.effective_at)
        pending = status.pending_change
        if pending is not None and not await self._settled(api, pending, spec, out):
            return out
        want = desired(spec, await self._resolve(spec))
        found = await self._list(api, spec, out)
        if want.problems:
            out.reason, out.message = NO_LOAD_BALANCER, "; ".join(want.problems)
            out.warn = True
            return out
        p = plan(want.records, found)
        if not p.nothing:
            if not await self._change(api, look, p, found, out):
                return out
            found = await self._list(api, spec, out)
        if not plan(want.records, found).nothing:
            out.reason = "NotApplied"
            out.message = "the records do not (yet) show the written state"
            out.wait = POLL
            return out
        return self._effect(spec, out)

    async def _settled(
        self, api: Any, change: PendingChange, spec: Spec, out: Route53Outcome
    ) -> bool:
        """Whether the change okra made last is INSYNC; until it is, nothing else is
        written."""
        info = await route53.get_change(api, change.id)
        if info.get("Status") != INSYNC:
            out.reason, out.pending, out.wait = "Pending", change, POLL
            out.message = (
                f"Route 53 change {change.id} is {info.get('Status')}: waiting for "
                "INSYNC before anything else is written"
            )
            return False
        self._insync(out, spec)
        return True

    async def _list(self, api: Any, spec: Spec, out: Route53Outcome) -> list[Json]:
        found = await route53.list_records(api, spec.hosted_zone_id, *_key(spec))
        out.read_at = self.clock()
        out.found = found
        return found

    async def _change(
        self, api: Any, look: Look[Config, Status], p: Plan, found: list[Json], out: Route53Outcome
    ) -> bool:
        """Write the batch and make its change durable as pending; whether Route 53 says
        it is INSYNC already."""
        spec, raw = look.config.spec, look.raw
        out.before = weights_note(found)
        if look.was_synced:
            await self.record_drift(
                look,
                f"records of {spec.record_name} were changed outside okra ({out.before}); restored",
            )
        info = await route53.change_records(
            api, spec.hosted_zone_id, p.changes, f"okra {raw['metadata']['name']}"
        )
        out.wrote = "RecordsChanged"
        if look.was_synced:
            wanted = ", ".join(f"{r.set_identifier}={r.weight}" for r in spec.records)
            out.drift = (
                f"records of {spec.record_name} {spec.record_type} were changed outside okra "
                f"(weights {out.before} instead of {wanted}); restored"
            )
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
        pending_status = look.status.model_copy(deep=True)
        pending_status.pending_change = change
        out.written = self.dump(pending_status)
        await patch_status(self.client, ROUTE53_CONFIG, raw, self.dump(look.status), out.written)
        if info.get("Status") != INSYNC:
            out.reason, out.pending, out.wait = "Pending", change, POLL
            out.message = f"Route 53 change {change.id} is {info.get('Status')}"
            return False
        self._insync(out, spec)
        return True

    def _effect(self, spec: Spec, out: Route53Outcome) -> Route53Outcome:
        """Synced once resolvers holding the previous answer have let it go (the TTL
        past INSYNC)."""
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

    def _insync(self, out: Route53Outcome, spec: Spec) -> None:
        out.pending = None
        out.in_sync_at = self.now()
        out.effective_at = effective_at(out.in_sync_at, spec.ttl)

    def fill(self, new: Status, config: Config, outcome: Route53Outcome) -> None:
        """The pending change, `inSyncAt`, `effectiveAt`, and `applied` as listed (kept
        from before when the records were not listed)."""
        new.pending_change = outcome.pending
        new.in_sync_at = outcome.in_sync_at
        new.effective_at = outcome.effective_at
        if outcome.found is not None:
            new.applied = applied(config.spec, outcome.found)


def _key(spec: Spec) -> tuple[str, str]:
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
    return configctl.register(
        Route53ConfigReconciler, mgr, aws, concurrency=concurrency, resync=resync
    )


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["route53config"]`): the records looked at every drift
    check period, so that a change made outside okra is put back within it."""
    configctl.setup(Route53ConfigReconciler, mgr, settings)
