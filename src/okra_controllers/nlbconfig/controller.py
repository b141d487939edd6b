"""The AWSNetworkLoadBalancerConfig controller: make one NLB listener's default action
forward exactly as the config says, and say in status what AWS shows.

observe: ONE DescribeListeners of the listener. plan: `plan` (plan.py), a pure function from the
spec and the listener to one `Action`. act: that one write (ModifyListener with only
`DefaultActions`), none when in sync. report: read the listener back and write
`status.applied` (what AWS now shows, in the config's own shape), `observedGeneration`,
`lastAppliedTime`, `lastReadTime` (when AWS was read for `applied`) and a `Synced`
condition; Events for writes and problems.

Why the default action: an NLB listener has no rules; its default action is its only
routing, and since November 2025 it may forward to up to five weighted target groups
(0..999), as an ALB rule does. So okra owns that action, whole. Anything else on the
listener (port, protocol, certificates) is never written.

Deletion: there is no finalizer and nothing is undone. An NLB listener always has a
default action; deleting the config leaves it forwarding as it last did, because a
listener that forwarded nowhere would cut every connection.

Idle cost: every `resync` seconds one DescribeListeners and nothing else; no AWS write
and no status write when nothing changed.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.api.kinds import NLB_CONFIG
from okra_controllers.api.v1alpha1.cell import (
    AWSNetworkLoadBalancerConfigSpec,
    AWSNetworkLoadBalancerConfigStatus,
)
from okra_controllers.aws import elbv2
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.elbv2 import Json
from okra_controllers.lbconfig import (
    SYNCED,
    aws_message,
    dump_status,
    patch_status,
    role_refusal,
    status_of,
    tg_name,
    weights_note,
    with_read_time,
    with_synced,
)
from okra_controllers.nlbconfig.plan import (
    ModifyDefault,
    Refuse,
    applied_from_listener,
    in_sync,
    plan,
    spec_problems,
)
from okra_controllers.notifications.notifier import Notifier, notifier_for
from okra_controllers.notifications.triggers import DRIFT_REPAIRED, Fired
from okra_runtime.client import Client
from okra_runtime.events import EventRecorder
from okra_runtime.informer import Informer
from okra_runtime.predicates import GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_runtime.timeutil import utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

DEFAULT_RESYNC = 300.0
"""Seconds between idle checks of the listener (one DescribeListeners each)."""

log = structlog.get_logger("okra.nlbconfig")


@dataclass
class Outcome:
    reason: str
    message: str
    synced: bool = False
    listener: Json | None = None
    wrote: bool = False
    notes: list[str] = field(default_factory=list)
    found: str = ""
    """The forward found in AWS before a write (`name=70, other=30`)."""
    read_at: datetime.datetime | None = None
    """When AWS was read for `listener` (`status.lastReadTime`); None: not read."""


def weights_of(spec: AWSNetworkLoadBalancerConfigSpec) -> str:
    return ", ".join(f"{tg_name(t.arn)}={t.weight}" for t in spec.forward_target_groups)


def _was_synced(
    status: AWSNetworkLoadBalancerConfigStatus,
    spec: AWSNetworkLoadBalancerConfigSpec,
    generation: int | None,
) -> bool:
    """Whether okra had this very spec applied and read back (so a write needed now
    means the listener changed in AWS, not the spec)."""
    synced = any(c.type == SYNCED and c.status == "True" for c in status.conditions or [])
    applied = status.applied.forward_target_groups if status.applied else None

    def weights(tgs: Any) -> set[tuple[str, int]]:
        return {(t.arn, t.weight) for t in tgs if t.weight}

    return (
        synced
        and status.observed_generation == generation
        and applied is not None
        and weights(applied) == weights(spec.forward_target_groups)
    )


class NlbConfigReconciler:
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
        self.configs = informer.store
        self.events = events
        self.aws = aws
        self.resync = resync
        self.clock = clock
        self.notifier = notifier or Notifier(client)

    async def reconcile(self, req: Request) -> Result | None:
        raw = self.configs.get(req.name, req.namespace)
        if raw is None or raw["metadata"].get("deletionTimestamp"):
            return None
        status = status_of(AWSNetworkLoadBalancerConfigStatus, raw)
        config, problems = spec_problems(raw)
        if config is None or problems:
            message = "; ".join(problems)
            self.events.event(raw, "Warning", "InvalidSpec", message)
            await self._report(raw, status, Outcome("InvalidSpec", message))
            return None
        spec = config.spec

        def drift_message(found: str | None) -> str:
            return (
                "the listener's default action was changed outside okra (forwarding "
                f"{found or 'nothing'} instead of {weights_of(spec)}); restored"
            )

        async def record_drift(found: str | None) -> None:
            # Into the owning Cell's outbox before the repair is written (a manager killed
            # in between would otherwise restore the listener and never tell).
            fired = Fired(DRIFT_REPAIRED, drift_message(found))
            await self.notifier.notify_owner(raw, fired, self.clock())

        # okra had this very spec applied and read back: a write now repairs a drift.
        was_synced = _was_synced(status, spec, raw["metadata"].get("generation"))
        try:
            async with self.aws.assuming(spec.role_arn).client("elbv2") as elb:
                outcome = await self._sync(elb, spec, record_drift if was_synced else None)
        except (ClientError, BotoCoreError) as e:
            refusal = role_refusal(e, spec.role_arn)
            message = refusal or aws_message(e)
            self.events.event(raw, "Warning", "AWSError", message)
            await self._report(raw, status, Outcome("AWSError", message))
            if refusal is not None:
                raise ReportedError(message) from None
            raise
        if outcome.wrote and was_synced:  # the listener changed in AWS
            message = drift_message(outcome.found)
            self.events.event(raw, "Warning", "DriftRepaired", message)
            log.warning("listener default action drift repaired", found=outcome.found)
        if outcome.wrote:
            self.events.event(raw, "Normal", "ListenerModified", "; ".join(outcome.notes))
            log.info("wrote listener default action", notes=outcome.notes)
        elif not outcome.synced and outcome.listener is None:
            self.events.event(raw, "Warning", outcome.reason, outcome.message)
        await self._report(raw, status, outcome, config.spec)
        if outcome.synced or not outcome.wrote:
            return Result(requeue_after=self.resync)
        return Result(requeue=True)  # written but not (yet) shown by AWS: look again soon

    async def _sync(
        self,
        elb: Any,
        spec: AWSNetworkLoadBalancerConfigSpec,
        record_drift: Callable[[str | None], Awaitable[None]] | None,
    ) -> Outcome:
        """Observe the listener, write what the plan says, read it back; `record_drift`,
        when given, is told what was found before the repairing write."""
        listener = await elbv2.describe_listener(elb, spec.listener_arn)
        action = plan(spec, listener)
        if isinstance(action, Refuse):
            return Outcome(action.reason, action.message, read_at=self.clock())
        out = Outcome("", "", read_at=self.clock())
        if isinstance(action, ModifyDefault):
            out.found = weights_note((listener or {}).get("DefaultActions")).removeprefix(": ")
            if record_drift is not None:
                await record_drift(out.found)
            await elbv2.modify_default_actions(elb, spec.listener_arn, action.actions)
            out.wrote = True
            out.notes.append(
                f"set the default action of listener {spec.listener_arn}"
                f"{weights_note(action.actions)}"
            )
            listener = await elbv2.describe_listener(elb, spec.listener_arn)
            out.read_at = self.clock()
        out.listener = listener
        out.synced = in_sync(spec, listener)
        if out.synced:
            out.reason, out.message = (
                "Synced",
                "the listener's default action forwards as specified",
            )
        else:
            out.reason = "NotApplied"
            out.message = "the listener's default action does not (yet) show the written state"
        return out

    async def _report(
        self,
        raw: Json,
        old: AWSNetworkLoadBalancerConfigStatus,
        outcome: Outcome,
        spec: AWSNetworkLoadBalancerConfigSpec | None = None,
    ) -> None:
        """Write status if it changed (an idle resync writes nothing). `applied` is kept
        from before when this sync could not look (invalid spec, AWS error)."""
        new = with_synced(
            old,
            synced=outcome.synced,
            reason=outcome.reason,
            message=outcome.message,
            generation=raw["metadata"].get("generation"),
            now=self.clock(),
            wrote=outcome.wrote,
        )
        if spec is not None:
            new.applied = (
                applied_from_listener(spec, outcome.listener) if outcome.listener else None
            )
        new = with_read_time(old, new, outcome.read_at)
        await patch_status(self.client, NLB_CONFIG, raw, dump_status(old), dump_status(new))


def register(
    mgr: Manager,
    aws: AwsConfig,
    *,
    concurrency: int = 1,
    resync: float = DEFAULT_RESYNC,
) -> NlbConfigReconciler:
    """Build the reconciler and its controller on `mgr` (tests pick their own `resync`).
    Reconciles on spec changes only: status writes and informer resyncs do not enqueue
    (the controller requeues itself every `resync`)."""
    rec = NlbConfigReconciler(
        mgr.client,
        mgr.informer_for(NLB_CONFIG),
        mgr.event_recorder("nlbconfig-controller"),
        aws,
        resync=resync,
        notifier=notifier_for(mgr),
    )
    (
        mgr.builder("nlbconfig")
        .for_(NLB_CONFIG, predicates=(GenerationChanged(),))
        .with_options(max_concurrent_reconciles=concurrency)
        .complete(rec)
    )
    return rec


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["nlbconfig"]`)."""
    # Idle looks at the listener as often as the ALB controller's drift check (a change
    # made outside okra is put back within that period).
    register(
        mgr,
        settings.aws,
        concurrency=settings.concurrency,
        resync=min(DEFAULT_RESYNC, settings.drift_check),
    )
