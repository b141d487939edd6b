"""What every controller is configured with: okra-manager's flags, typed.

Its own module so that the dependencies point one way: `manager` parses flags into a Settings
and calls each controller's setup (listed in `okra_controllers.registry`); the controllers
import Settings from here and never import the manager.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from okra_controllers.aws.config import AwsConfig
from okra_runtime.manager import Manager

ROLLOUT_HISTORY = 10
"""Rollouts a Cell's `status.history` keeps by default (`--rollout-history`)."""
MAX_ROLLOUT_HISTORY = 30
"""The most `--rollout-history` may ask for: the record is part of the Cell's status, which
the API server keeps whole (about 1.5 MiB at most) and every informer of Cells holds."""


@dataclass(frozen=True)
class Settings:
    namespace: str | None
    okra_namespace: str
    aws: AwsConfig
    concurrency: int
    eks_poll_interval: float = 60.0
    """Seconds between ListClusters/DescribeCluster rounds of a ClusterSet (EKS has no watch)."""
    cluster_poll_interval: float = 30.0
    """Seconds between reads of workload clusters (TargetGroupBindings, nodes, pods): they are
    reached through Argo CD cluster Secrets and not watched."""
    drift_check: float = 60.0  # seconds between looks at each listener rule (drift repair)
    argocd: bool = False
    """Argo CD's Application kind is served: Cells with `spec.argocd` watch Applications."""
    argocd_projects: bool = False
    """Argo CD's AppProject kind is served: ProgressiveRollouts honour each Application's
    project (sync windows, destinations). Without it they check none (and say so): an
    informer on a kind that is not served would never sync and hold every controller back."""
    rollout_history: int = ROLLOUT_HISTORY
    """Rollouts each Cell's `status.history` keeps (`--rollout-history`)."""
    default_metrics_provider: Mapping[str, Any] | None = None
    """`--default-metrics-provider`: the provider of Checks (and system-Cell checks) that
    name none; its credentials as for any provider (Secrets in okra's namespace, AWS)."""


Setup = Callable[[Manager, Settings], None]
"""A controller's entry point: register its informers and controller with the manager."""
