"""Seed 000's Check, as the seed writes it (`spec.analysis.{interval, query, max}`, the
`analysis-hash` annotation, no provider), measured through okra-manager's default metrics
provider against a real Prometheus; and, with no default, the run's error says what to add."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from okra_controllers.analysis.check_controller import NO_PROVIDER, CheckReconciler
from okra_controllers.api.kinds import CHECK
from okra_controllers.aws.config import AwsConfig
from okra_runtime import Client, GenerationChanged, Manager, ManagerOptions
from okra_runtime.predicates import AnnotationsChanged, Any_
from okra_testkit.envtest import ControlPlane
from support import eventually, stop_manager

from .promharness import PrometheusServer

REPO = Path(__file__).resolve().parents[3]


@asynccontextmanager
async def checks(c: Client, namespace: str, default: dict[str, Any] | None) -> AsyncIterator[None]:
    mgr = Manager(c, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None))
    rec = CheckReconciler(
        c,
        mgr.informer_for(CHECK),
        mgr.event_recorder("check"),
        AwsConfig(),
        namespace,
        default_provider=default,
    )
    mgr.builder("check").for_(
        CHECK, predicates=(Any_(GenerationChanged(), AnnotationsChanged()),)
    ).complete(rec)
    task = asyncio.create_task(mgr.start())
    try:
        yield
    finally:
        await stop_manager(mgr, task)


def seed_check(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Check",
        "metadata": {
            "name": "mysystem-dd-mycluster-web-1-v2",
            "namespace": namespace,
            "annotations": {"analysis-hash": "somehash"},
        },
        "spec": {
            "analysis": {
                "interval": "1s",
                "query": 'errors{cluster="mycluster-web-1-v2"}\n',
                "max": 0.1,
            }
        },
    }


async def _status(c: Client, ns: str) -> dict[str, Any]:
    obj = await c.get(CHECK, "mysystem-dd-mycluster-web-1-v2", ns)
    return obj.get("status") or {}


def _until(c: Client, ns: str, want: Callable[[dict[str, Any]], bool]) -> Any:
    async def check() -> bool:
        return want(await _status(c, ns))

    return check


async def test_the_seeds_check_measures_through_the_default_provider(
    control_plane: ControlPlane, prometheus: PrometheusServer, rt_client: Client, namespace: str
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    prometheus.set("errors", 0.01, {"cluster": "mycluster-web-1-v2"})
    await prometheus.wait_for('errors{cluster="mycluster-web-1-v2"}', lambda v: v == 0.01)
    default = {"prometheus": {"address": prometheus.address}}
    async with checks(rt_client, namespace, default):
        await rt_client.create(seed_check(namespace))
        passed = _until(
            rt_client,
            namespace,
            lambda s: s.get("lastPassed") is True and s["analysis"]["observedHash"] == "somehash",
        )
        assert await eventually(passed, within=30)
        prometheus.set("errors", 0.5, {"cluster": "mycluster-web-1-v2"})
        failed = _until(rt_client, namespace, lambda s: s.get("lastPassed") is False)
        assert await eventually(failed, within=30)
        last = (await _status(rt_client, namespace))["analysis"]["results"][-1]
        assert (last["phase"], last["message"]) == ("Failed", "0.5 > max 0.1")


async def test_without_a_default_the_checks_run_says_what_to_add(
    control_plane: ControlPlane, rt_client: Client, namespace: str
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    async with checks(rt_client, namespace, None):
        await rt_client.create(seed_check(namespace))
        said = _until(
            rt_client,
            namespace,
            lambda s: (
                bool(s.get("analysis", {}).get("results"))
                and s["analysis"]["results"][-1].get("message") == NO_PROVIDER
            ),
        )
        assert await eventually(said, within=30)
        assert (await _status(rt_client, namespace)).get("lastPassed") is False
