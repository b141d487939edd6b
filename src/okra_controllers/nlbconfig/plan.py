"""The AWSNetworkLoadBalancerConfig's plan: pure functions from the spec and the listener (as
DescribeListeners returns it) to the one write of its default action (`plan` -> `Action`),
whether it is in sync, what it does in the config's own shape (`status.applied`), and the
spec's problems. No I/O; the controller observes, acts and reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from okra_controllers.api.v1alpha1.cell import (
    AWSNetworkLoadBalancerConfig,
    AWSNetworkLoadBalancerConfigSpec,
    ForwardTargetGroup,
)
from okra_controllers.aws import elbv2
from okra_controllers.aws.elbv2 import Json
from okra_controllers.lbconfig import (
    in_spec_order,
    parse_spec,
    tg_name,
)

APPLICATION_PROTOCOLS = ("HTTP", "HTTPS")
"""Listener protocols of an Application Load Balancer: its default action is not okra's
to own (an ALB Cell owns one rule; see AWSApplicationLoadBalancerConfig)."""


@dataclass(frozen=True)
class ModifyDefault:
    """The default action differs: ModifyListener with the weighted forward."""

    actions: list[Json]


@dataclass(frozen=True)
class Nothing:
    """The default action already forwards as wanted."""


@dataclass(frozen=True)
class Refuse:
    """okra must not (or cannot) write: the listener is missing or is not an NLB's."""

    reason: str
    message: str


Action = ModifyDefault | Nothing | Refuse


def forward_action(tgs: list[ForwardTargetGroup]) -> Json:
    """An NLB weighted forward. No stickiness block: NLB forwards keep connections on
    their target by themselves, and a read-back without one means "off"."""
    return {
        "Type": "forward",
        "ForwardConfig": {
            "TargetGroups": [{"TargetGroupArn": tg.arn, "Weight": tg.weight} for tg in tgs]
        },
    }


def plan(spec: AWSNetworkLoadBalancerConfigSpec, listener: Mapping[str, Any] | None) -> Action:
    """The one write (or none) that makes `listener` (as DescribeListeners returns it;
    None: not found) forward as `spec` says."""
    if listener is None:
        return Refuse(
            "ListenerNotFound",
            f"listener {spec.listener_arn} does not exist: fix spec.listenerARN",
        )
    protocol = str(listener.get("Protocol", ""))
    if protocol in APPLICATION_PROTOCOLS:
        return Refuse(
            "NotNetworkListener",
            f"listener {spec.listener_arn} speaks {protocol}: it belongs to an Application "
            "Load Balancer, whose default action okra does not own; use an "
            "AWSApplicationLoadBalancerConfig (one listener rule) instead",
        )
    want = [forward_action(spec.forward_target_groups)]
    if elbv2.same_forward(listener.get("DefaultActions") or [], want):
        return Nothing()
    return ModifyDefault(want)


def in_sync(spec: AWSNetworkLoadBalancerConfigSpec, listener: Mapping[str, Any] | None) -> bool:
    """Whether AWS's `listener` forwards exactly as `spec` asks."""
    return listener is not None and isinstance(plan(spec, listener), Nothing)


def applied_from_listener(
    spec: AWSNetworkLoadBalancerConfigSpec, listener: Mapping[str, Any]
) -> AWSNetworkLoadBalancerConfigSpec | None:
    """What the listener's default action does, in the config's own shape
    (`status.applied`); names of target groups come from the spec where it lists them.
    None when it cannot be said in that shape (not a single forward)."""
    forwards = [a for a in listener.get("DefaultActions") or [] if a.get("Type") == "forward"]
    if len(forwards) != 1:
        return None
    names = {tg.arn: tg.name for tg in spec.forward_target_groups}
    try:
        tgs = [
            ForwardTargetGroup(name=names.get(arn) or tg_name(arn), arn=arn, weight=weight)
            for arn, weight in elbv2.forward_weights(forwards[0])
        ]
        return AWSNetworkLoadBalancerConfigSpec(
            listenerARN=str(listener.get("ListenerArn") or spec.listener_arn),
            forward_target_groups=in_spec_order(tgs, spec.forward_target_groups, lambda t: t.arn),
        )
    except (ValidationError, KeyError, TypeError, ValueError):
        return None


def validate(spec: AWSNetworkLoadBalancerConfigSpec) -> list[str]:
    """What AWS would reject in the forward (the listener's kind is checked against
    AWS itself: its ARN does not always say, e.g. in emulators)."""
    problems: list[str] = []
    if ":listener/" not in spec.listener_arn:
        problems.append(
            f"spec.listenerARN: {spec.listener_arn!r} is not a listener ARN "
            "(arn:aws:elasticloadbalancing:REGION:ACCOUNT:listener/net/...)"
        )
    return problems + elbv2.validate_target_groups(spec.forward_target_groups, "NLB")


def spec_problems(
    raw: Mapping[str, Any],
) -> tuple[AWSNetworkLoadBalancerConfig | None, list[str]]:
    """The parsed config, or the problems with it, each naming the field."""
    return parse_spec(AWSNetworkLoadBalancerConfig, raw, lambda c: validate(c.spec))
