"""A system Cell (seed 002) whose application has a precheck and a postcheck, run as Jobs by
the Job controller and the kubelet on the node (busybox): the system Cell controller, the Cell
controller, the ALB config controller and the Check controller in one in-process Manager that
is killed at every change of phase and started again (integration/test_system_cell.py's
world: EKS and the ALB in moto through the local-EKS proxy, the clusters' Argo CD cluster
Secrets pointing at a shared workload control plane)."""

from __future__ import annotations

from typing import Any

import pytest

from integration.test_system_cell import (  # noqa: F401 -- rates, world: fixtures
    CELL,
    System,
    application,
    rates,
    running,
    world,
)
from okra_runtime import GVK, Client
from okra_testkit.seed import LoadBalancer
from support import ErrorRates, eventually

from .test_install import check

JOB = GVK("batch", "v1", "Job")
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("okra_crds")]


async def test_a_manager_killed_at_every_change_of_phase_resumes_and_runs_each_check_once(
    world: tuple[System, LoadBalancer],  # noqa: F811 -- the fixture imported above
    rt_client: Client,
    namespace: str,
    rates: ErrorRates,  # noqa: F811 -- the fixture imported above
) -> None:
    """okra-manager killed (no shutdown) each time the system's, web's or web's Cell's phase
    or step changes: the migration still ends, each precheck and postcheck Job is created
    once per rollout (never again for the same forward config), weights never go back."""
    s, alb = world
    v1 = [await s.cluster(n, "web") for n in ("k-1", "k-2")]
    web = application("web", "web", alb.listener_arn, 10, 50, rates.url)
    web["prechecks"] = [check("pre", "echo ok")]
    web["postchecks"] = [check("post", "echo ok")]
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": v1, "applications": [web]},
        }
    )
    async with running(rt_client, namespace, s.eks.config) as okra:

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=90), await s.debug()
        await s.set_clusters([await s.cluster("k-3", "web"), await s.cluster("k-4", "web")])
        seen: list[tuple[Any, ...]] = []
        shares: list[int] = []

        async def done() -> bool:
            st = await s.status()
            app: dict[str, Any] = next(iter(st.get("applications") or []), {})
            child = (await rt_client.get(CELL, "sys-web", namespace)).get("status") or {}
            now = (
                st.get("phase"),
                app.get("phase"),
                child.get("phase"),
                child.get("currentStepIndex"),
            )
            w = await s.weights(alb.listener_arn, 10)
            share = sum(v for k, v in w.items() if k in ("k-3", "k-4"))
            if not shares or shares[-1] != share:
                shares.append(share)
            if not seen or seen[-1] != now:
                seen.append(now)
                if len(seen) > 1:
                    await okra.restart()
            return st.get("phase") == "Completed" and share == 100

        assert await eventually(done, within=180, interval=0.05), (seen, await s.debug())
        assert len(seen) >= 4, seen  # restarted in Init, Migrating and Completing at least
        assert shares == sorted(shares), shares  # never backwards
        started = [e for e in (await s.debug())["events"] if e.startswith("MigrationStarted")]
        assert len(started) == 2, started  # v1, then v2: each once
        jobs = (await rt_client.list(JOB, namespace)).items
        # pre and post, for v1 and for v2, each run once on the node
        assert len(jobs) == 4, [j["metadata"]["name"] for j in jobs]
        assert all((j.get("status") or {}).get("succeeded") == 1 for j in jobs), jobs
