"""The config controllers' skeleton: the one reconcile the ALB listener rule, NLB default
action and Route 53 records controllers run (`reconciler`), what one pass found and did
(`outcome`), and their wiring into a manager (`wiring`). Each controller supplies its
backend: how to read AWS, how to write it, how to compare, its spec and status models."""

from okra_controllers.configctl.outcome import Look, Outcome
from okra_controllers.configctl.reconciler import DEFAULT_RESYNC, ConfigReconciler
from okra_controllers.configctl.wiring import register, setup

__all__ = ["DEFAULT_RESYNC", "ConfigReconciler", "Look", "Outcome", "register", "setup"]
