"""The AWSRoute53RecordSetConfig controller: one DNS name's weighted records in a Route 53
hosted zone, written in one change batch, in effect from INSYNC + TTL (see `controller`);
the pure plan is in `plan`."""

from okra_controllers.route53config.controller import Route53ConfigReconciler, register, setup
from okra_controllers.route53config.plan import applied, desired, effective_at, in_sync, plan

__all__ = [
    "Route53ConfigReconciler",
    "applied",
    "desired",
    "effective_at",
    "in_sync",
    "plan",
    "register",
    "setup",
]
