"""okra-manager: the controller manager running okra's controllers.

The manager parses flags into `okra_controllers.settings.Settings` and calls the setup of each
enabled controller from `okra_controllers.registry`; no controller imports this module.

    okra-manager --kubeconfig ~/.kube/config --aws-region eu-west-1

Every flag has an environment variable (OKRA_<FLAG>, e.g. OKRA_AWS_ENDPOINT_URL)
so the Deployment can set them either way.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import structlog
from pydantic import ValidationError

from okra_controllers.analysis.check_controller import QUERY_PROVIDERS
from okra_controllers.api.kinds import APP_PROJECT, APPLICATION
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_controllers.aws.config import AwsConfig, close_clients
from okra_controllers.registry import CACHE_SELECTORS, CONTROLLERS, REQUIRED_KINDS
from okra_controllers.serverversion import server_version
from okra_controllers.settings import MAX_ROLLOUT_HISTORY, ROLLOUT_HISTORY
from okra_controllers.settings import Settings as Settings
from okra_runtime import Client, Manager, ManagerOptions, configure_logging
from okra_runtime import loop as event_loop
from okra_runtime.errors import NoKindMatchError
from okra_runtime.gvk import GVK
from okra_runtime.informer import InformerOptions
from okra_runtime.leaderelection import LeadershipLostError

log = structlog.get_logger("okra.manager")


async def _served(client: Client, name: str) -> bool:
    gvk = REQUIRED_KINDS.get(name)
    if gvk is None or await _kind_served(client, gvk):
        return True
    log.warning("controller off: a kind it needs is not served", controller=name, kind=str(gvk))
    return False


async def _kind_served(client: Client, gvk: GVK) -> bool:
    try:
        await client.resource(gvk)
    except NoKindMatchError:
        return False
    return True


async def _check_server_version(client: Client, mgr: Manager) -> None:
    """Log the Kubernetes version found; below the oldest supported minor, say so in one
    line and in the readiness (`serverversion`)."""
    found = await server_version(client)
    if found is None:
        log.warning("the API server did not say its version (GET /version)")
        return
    log.info("kubernetes api server", version=found.git_version)
    if (why := found.unsupported) is not None:
        log.error(why)
        mgr.add_readyz_check("server-version", lambda: why)


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"OKRA_{name.upper().replace('-', '_')}", default)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="okra-manager", description=__doc__.split("\n\n")[0])
    _where_flags(p)
    _leader_election_flags(p)
    _serving_flags(p)
    _period_flags(p)
    a = p.parse_args(argv)
    _check_args(p, a)
    return a


def _seconds(p: argparse.ArgumentParser, flag: str, default: float, help_: str) -> None:
    """A flag of seconds, `--FLAG` or `OKRA_FLAG`."""
    p.add_argument(
        f"--{flag}", type=float, default=float(_env(flag, str(default)) or default), help=help_
    )


def _where_flags(p: argparse.ArgumentParser) -> None:
    """The cluster, the namespaces and AWS okra works with."""
    p.add_argument(
        "--kubeconfig",
        default=_env("kubeconfig"),
        help="kubeconfig path (default: in-cluster, then $KUBECONFIG)",
    )
    p.add_argument(
        "--namespace", default=_env("namespace"), help="watch only this namespace (default: all)"
    )
    p.add_argument(
        "--okra-namespace",
        default=_env("okra-namespace", _pod_namespace()),
        help="okra's own namespace (leader-election Lease, default Secrets)",
    )
    p.add_argument(
        "--aws-region",
        default=_env(
            "aws-region",
            os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        ),
    )
    p.add_argument(
        "--aws-endpoint-url",
        default=_env("aws-endpoint-url"),
        help="send every AWS call here (LocalStack, moto)",
    )


def _leader_election_flags(p: argparse.ArgumentParser) -> None:
    """Leader election: on or off, the Lease, and its timing (controller-runtime's
    LeaseDuration, RenewDeadline, RetryPeriod)."""
    p.add_argument(
        "--leader-elect", action="store_true", default=_env("leader-elect", "false") == "true"
    )
    p.add_argument("--leader-election-id", default=_env("leader-election-id", "okra-manager"))
    _seconds(
        p,
        "leader-elect-lease-duration",
        15,
        "seconds a standby waits after the leader's last renewal before it takes the "
        "Lease (how long a crashed leader's work stops)",
    )
    _seconds(
        p,
        "leader-elect-renew-deadline",
        10,
        "seconds the leader keeps trying to renew before it gives leadership up and "
        "stops; less than the lease duration",
    )
    _seconds(
        p,
        "leader-elect-retry-period",
        2,
        "seconds between renewals and between a standby's attempts; less than the renew deadline",
    )


def _serving_flags(p: argparse.ArgumentParser) -> None:
    """Metrics, probes, logs, and which controllers run how widely."""
    p.add_argument(
        "--metrics-bind-address",
        default=_env("metrics-bind-address", ":8080"),
        help="host:port for /metrics; 0 disables",
    )
    p.add_argument(
        "--health-probe-bind-address",
        default=_env("health-probe-bind-address", ":8081"),
        help="host:port for /healthz and /readyz; 0 disables",
    )
    p.add_argument("--log-format", choices=("json", "console"), default=_env("log-format", "json"))
    p.add_argument("--log-level", default=_env("log-level", "info"))
    p.add_argument(
        "--concurrency",
        type=int,
        default=int(_env("concurrency", "4") or 4),
        help="max concurrent reconciles per controller",
    )
    p.add_argument(
        "--rollout-history",
        type=int,
        default=int(_env("rollout-history", str(ROLLOUT_HISTORY)) or ROLLOUT_HISTORY),
        help="rollouts each Cell's status.history keeps (okra history cell NAME): the one in "
        "progress and the last ones that ended; 0 keeps none",
    )
    p.add_argument(
        "--controllers",
        default=_env("controllers", ",".join(CONTROLLERS)),
        help=f"comma-separated controllers to run (known: {', '.join(CONTROLLERS)})",
    )


def _period_flags(p: argparse.ArgumentParser) -> None:
    """How often okra looks at what has no watch (EKS, workload clusters, listener
    rules), and when a silent watch is taken for dead."""
    _seconds(
        p,
        "eks-poll-interval",
        60,
        "seconds between reads of EKS clusters by ClusterSets (EKS has no watch)",
    )
    _seconds(
        p,
        "cluster-poll-interval",
        30,
        "seconds between reads of workload clusters (TargetGroupBindings, targets)",
    )
    _seconds(
        p,
        "drift-check-period",
        60,
        "seconds between looks at each listener rule: one changed outside okra is "
        "restored (and a DriftRepaired Event recorded) within this period",
    )
    p.add_argument(
        "--default-metrics-provider",
        default=_env("default-metrics-provider", ""),
        help="the metrics provider of Checks (and system-Cell checks) that name none, as an "
        'AnalysisTemplate metric\'s provider in JSON, e.g. \'{"prometheus": {"address": '
        '"http://prometheus.monitoring:9090"}}\'; its credentials as for any provider',
    )
    _seconds(
        p,
        "watch-inactivity-timeout",
        100,
        "seconds a watch may deliver nothing before it is taken for dead (stalled) and "
        "reopened; at least 2. Each watch asks the API server to close it after 50-80%% of "
        "this (at most 300-600 s), so a healthy watch on a quiet kind is never taken for dead",
    )


def default_provider(text: str) -> dict[str, Any] | None:
    """`--default-metrics-provider` read: JSON of a metric provider (a `prometheus` or
    `datadog` one without its `query`: each check gives it), or empty for none."""
    if not text.strip():
        return None
    try:
        raw = json.loads(text)
    except ValueError as e:
        raise ValueError(f"Invalid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise ValueError('a provider object, e.g. {"prometheus": {"address": "..."}}')
    probe = json.loads(json.dumps(raw))
    for kind in QUERY_PROVIDERS:
        if isinstance(probe.get(kind), dict):
            probe[kind].setdefault("query", "each check's query")
    try:
        MetricProvider.model_validate(probe)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise ValueError(f"{where + ': ' if where else ''}{first['msg']}") from None
    return dict(raw)


def _check_args(p: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    """Values no flag may take, refused at start naming the flag."""
    unknown = [c for c in a.controllers.split(",") if c and c not in CONTROLLERS]
    if unknown:
        p.error(f"unknown controllers: {', '.join(unknown)} (known: {', '.join(CONTROLLERS)})")
    if a.concurrency < 1:
        p.error("--concurrency must be at least 1")
    if not 0 <= a.rollout_history <= MAX_ROLLOUT_HISTORY:
        p.error(f"--rollout-history must be from 0 to {MAX_ROLLOUT_HISTORY}")
    if a.eks_poll_interval <= 0 or a.cluster_poll_interval <= 0:
        p.error("--eks-poll-interval and --cluster-poll-interval must be positive")
    if a.watch_inactivity_timeout < 2:
        p.error("--watch-inactivity-timeout must be at least 2 (seconds)")
    if a.drift_check_period < 1:
        p.error("--drift-check-period must be at least 1 (second)")
    try:
        a.default_metrics_provider = default_provider(a.default_metrics_provider)
    except ValueError as e:
        p.error(f"--default-metrics-provider: {e}")
    if not (
        a.leader_elect_lease_duration
        > a.leader_elect_renew_deadline
        > a.leader_elect_retry_period
        > 0
    ):
        p.error(
            "leader election needs --leader-elect-lease-duration > --leader-elect-renew-deadline "
            f"> --leader-elect-retry-period > 0 (got {a.leader_elect_lease_duration:g}, "
            f"{a.leader_elect_renew_deadline:g}, {a.leader_elect_retry_period:g})"
        )


def _pod_namespace() -> str:
    try:
        with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as f:
            return f.read().strip()
    except OSError:
        return "okra-system"


def _address(value: str) -> str | None:
    if value in ("0", ""):
        return None
    return value if not value.startswith(":") else f"0.0.0.0{value}"


async def run(a: argparse.Namespace) -> int:
    settings = Settings(
        namespace=a.namespace,
        okra_namespace=a.okra_namespace,
        # one AWS client per service, reused (aws.config: a client per call costs more
        # CPU than the call)
        aws=AwsConfig(region=a.aws_region, endpoint_url=a.aws_endpoint_url, reuse_clients=True),
        concurrency=a.concurrency,
        eks_poll_interval=a.eks_poll_interval,
        cluster_poll_interval=a.cluster_poll_interval,
        drift_check=a.drift_check_period,
        default_metrics_provider=a.default_metrics_provider,
        rollout_history=a.rollout_history,
    )
    async with await Client.from_environment(a.kubeconfig) as client:
        mgr = Manager(
            client,
            ManagerOptions(
                namespace=a.namespace,
                metrics_address=_address(a.metrics_bind_address),
                probe_address=_address(a.health_probe_bind_address),
                leader_election=a.leader_elect,
                leader_election_id=a.leader_election_id,
                leader_election_namespace=a.okra_namespace,
                lease_duration=a.leader_elect_lease_duration,
                renew_deadline=a.leader_elect_renew_deadline,
                retry_period=a.leader_elect_retry_period,
                informer=InformerOptions(inactivity_timeout=a.watch_inactivity_timeout),
                label_selectors=dict(CACHE_SELECTORS),
            ),
        )
        await _check_server_version(client, mgr)
        enabled = [c for c in a.controllers.split(",") if c and await _served(client, c)]
        settings = dataclasses.replace(
            settings,
            argocd=await _kind_served(client, APPLICATION),
            argocd_projects=await _kind_served(client, APP_PROJECT),
        )
        if "progressiverollout" in enabled and not settings.argocd_projects:
            log.warning(
                "Argo CD's AppProject kind is not served: ProgressiveRollouts do not check "
                "sync windows and destinations (install appproject-crd.yaml, then restart)"
            )
        for name in enabled:
            CONTROLLERS[name](mgr, settings)
        log.info(
            "starting okra-manager",
            controllers=enabled,
            namespace=a.namespace or "*",
            aws_region=a.aws_region,
            aws_endpoint_url=a.aws_endpoint_url,
            event_loop=type(asyncio.get_running_loop()).__module__.partition(".")[0],
        )
        try:
            await mgr.run_until_signal()
        except LeadershipLostError as e:
            log.error("leadership lost; exiting", error=str(e))
            return 1
        finally:
            await close_clients()
    return 0


def local_command(
    kubeconfig: str | os.PathLike[str],
    namespace: str,
    *,
    aws_endpoint_url: str | None = None,
    aws_region: str = "us-east-1",
    log_format: str = "json",
    controllers: str | None = None,
    poll_interval: float | None = None,
) -> list[str]:
    """The command line of an okra-manager for one namespace on a local control plane
    (tests, the demo, benchmarks): no probe or metrics ports, okra's namespace = the
    watched one."""
    cmd = [
        sys.executable,
        "-m",
        "okra_controllers.manager",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        namespace,
        "--okra-namespace",
        namespace,
        "--aws-region",
        aws_region,
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--log-format",
        log_format,
    ]
    if aws_endpoint_url:
        cmd += ["--aws-endpoint-url", aws_endpoint_url]
    if controllers:
        cmd += ["--controllers", controllers]
    if poll_interval is not None:
        cmd += ["--eks-poll-interval", str(poll_interval)]
        cmd += ["--cluster-poll-interval", str(poll_interval)]
    return cmd


EMULATOR_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
"""Credentials for an AWS emulator (moto, LocalStack), which accepts any."""


def main(argv: Sequence[str] | None = None) -> None:
    a = parse_args(argv)
    configure_logging(a.log_format, a.log_level)
    sys.exit(event_loop.run(run(a)))  # uvloop when installed (okra[uvloop])


if __name__ == "__main__":
    main()
