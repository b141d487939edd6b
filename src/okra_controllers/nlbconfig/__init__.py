"""The AWSNetworkLoadBalancerConfig controller: one NLB listener's default action
forwarding with the configured weights, verified by reading it back (`plan`: what to write;
`controller`: observe, act, report)."""

from okra_controllers.nlbconfig.controller import NlbConfigReconciler, register, setup
from okra_controllers.nlbconfig.plan import (
    ModifyDefault,
    Nothing,
    Refuse,
    applied_from_listener,
    forward_action,
    in_sync,
    plan,
    validate,
)

__all__ = [
    "ModifyDefault",
    "NlbConfigReconciler",
    "Nothing",
    "Refuse",
    "applied_from_listener",
    "forward_action",
    "in_sync",
    "plan",
    "register",
    "setup",
    "validate",
]
