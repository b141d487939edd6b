"""The AWSNetworkLoadBalancerConfig controller: make one NLB listener's default action
forward exactly as the config says, and say in status what AWS shows.

observe: ONE DescribeListeners of the listener. plan: `plan` (plan.py), a pure function from the
spec and the listener to one `Action`. act: that one write (ModifyListener with only
`DefaultActions`), none when in sync. report: read the listener back and write
`status.applied` (what AWS now shows, in the config's own shape), `observedGeneration`,
`lastAppliedTime`, `lastReadTime` (when AWS was read for `applied`) and a `Synced`
condition; Events for writes and problems.

The pass around these (the Events, the status write, when to look again, the wiring) is
`configctl`'s; this module is its backend.

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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from okra_controllers import configctl
from okra_controllers.api.kinds import NLB_CONFIG
from okra_controllers.api.v1alpha1.cell import (
    AWSNetworkLoadBalancerConfig,
    AWSNetworkLoadBalancerConfigSpec,
    AWSNetworkLoadBalancerConfigStatus,
)
from okra_controllers.aws import elbv2
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.elbv2 import Json
from okra_controllers.configctl import ConfigReconciler, Look, Outcome
from okra_controllers.lbconfig import SYNCED, tg_name, weights_note
from okra_controllers.nlbconfig.plan import (
    ModifyDefault,
    Refuse,
    applied_from_listener,
    in_sync,
    plan,
    spec_problems,
)

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

DEFAULT_RESYNC = configctl.DEFAULT_RESYNC
"""Seconds between idle checks of the listener (one DescribeListeners each)."""

Config = AWSNetworkLoadBalancerConfig
Status = AWSNetworkLoadBalancerConfigStatus


@dataclass
class NlbOutcome(Outcome):
    listener: Json | None = None
    """The listener as AWS last showed it (None: not read, or refused)."""


def weights_of(spec: AWSNetworkLoadBalancerConfigSpec) -> str:
    return ", ".join(f"{tg_name(t.arn)}={t.weight}" for t in spec.forward_target_groups)


def drift_message(spec: AWSNetworkLoadBalancerConfigSpec, found: str | None) -> str:
    """The DriftRepaired Event's and notification's message."""
    return (
        "the listener's default action was changed outside okra (forwarding "
        f"{found or 'nothing'} instead of {weights_of(spec)}); restored"
    )


class NlbConfigReconciler(ConfigReconciler[Config, Status, NlbOutcome]):
    """One NLB listener's default action: DescribeListeners, ModifyListener."""

    name = "nlbconfig"
    kind = NLB_CONFIG
    service = "elbv2"
    status_model = Status
    log = structlog.get_logger("okra.nlbconfig")
    drift_log = "listener default action drift repaired"
    write_log = "wrote listener default action"

    def load(self, raw: Json) -> tuple[Config | None, list[str]]:
        return spec_problems(raw)

    def was_synced(self, status: Status, config: Config, generation: int | None) -> bool:
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
            and weights(applied) == weights(config.spec.forward_target_groups)
        )

    async def sync(self, api: Any, look: Look[Config, Status]) -> NlbOutcome:
        """Observe the listener, write what the plan says, read it back; a drift found is
        recorded before the repairing write."""
        spec = look.config.spec
        listener = await elbv2.describe_listener(api, spec.listener_arn)
        action = plan(spec, listener)
        if isinstance(action, Refuse):
            return NlbOutcome(action.reason, action.message, warn=True, read_at=self.clock())
        out = NlbOutcome("", "", read_at=self.clock())
        if isinstance(action, ModifyDefault):
            out.before = weights_note((listener or {}).get("DefaultActions")).removeprefix(": ")
            if look.was_synced:
                await self.record_drift(look, drift_message(spec, out.before))
            await elbv2.modify_default_actions(api, spec.listener_arn, action.actions)
            out.wrote = "ListenerModified"
            if look.was_synced:  # the listener changed in AWS
                out.drift = drift_message(spec, out.before)
            out.notes.append(
                f"set the default action of listener {spec.listener_arn}"
                f"{weights_note(action.actions)}"
            )
            listener = await elbv2.describe_listener(api, spec.listener_arn)
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
            out.soon = bool(out.wrote)  # written but not (yet) shown by AWS: look again soon
        return out

    def fill(self, new: Status, config: Config, outcome: NlbOutcome) -> None:
        """`applied` as the listener now shows it."""
        new.applied = (
            applied_from_listener(config.spec, outcome.listener) if outcome.listener else None
        )


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
    return configctl.register(NlbConfigReconciler, mgr, aws, concurrency=concurrency, resync=resync)


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["nlbconfig"]`): the listener looked at every drift
    check period, so that a change made outside okra is put back within it."""
    configctl.setup(NlbConfigReconciler, mgr, settings)
