"""The AWSApplicationLoadBalancerConfig controller: one ALB listener rule forwarding with
the configured weights, verified by reading it back (`plan`: what to write; `controller`:
observe, act, report)."""

from okra_controllers.albconfig.controller import FINALIZER, AlbConfigReconciler, register, setup
from okra_controllers.albconfig.plan import (
    Conflict,
    Create,
    Modify,
    Move,
    Nothing,
    plan,
    same_spec,
)

__all__ = [
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
