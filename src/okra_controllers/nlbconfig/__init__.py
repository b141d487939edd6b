"""The AWSNetworkLoadBalancerConfig controller: one NLB listener's default action
forwarding with the configured weights, verified by reading it back (see `controller`)."""

from okra_controllers.nlbconfig.controller import (
    NLB_CONFIG,
    ModifyDefault,
    NlbConfigReconciler,
    Nothing,
    Refuse,
    applied_from_listener,
    forward_action,
    in_sync,
    plan,
    register,
    setup,
    validate,
)

__all__ = [
    "NLB_CONFIG",
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
