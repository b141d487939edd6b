"""The AWSApplicationLoadBalancerConfig controller: one ALB listener rule forwarding with
the configured weights, verified by reading it back (see `controller`)."""

from okra_controllers.albconfig.controller import (
    ALB_CONFIG,
    FINALIZER,
    AlbConfigReconciler,
    Conflict,
    Create,
    Modify,
    Move,
    Nothing,
    plan,
    register,
    same_spec,
    setup,
)

__all__ = [
    "ALB_CONFIG",
    "FINALIZER",
    "AlbConfigReconciler",
    "Conflict",
    "Create",
    "Modify",
    "Move",
    "Nothing",
    "plan",
    "register",
    "same_spec",
    "setup",
]
