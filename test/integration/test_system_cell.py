"""A system Cell (seed 002) on a real control plane, with EKS and the ALB in moto (EKS
through the local-EKS proxy): the system Cell controller, the Cell controller and the ALB
config controller in one in-process Manager. The clusters' Argo CD cluster Secrets point at a
shared workload control plane (reachability is read through them).

Shown: web (two clusters, `stepWeight: 50`) and api (one cluster, blue/green) rolled out onto
their clusters; a new pair of web clusters with the second one late: nothing moves while it is
missing, the Cell says which cluster it waits for; once it is there, web walks to the pair
step by step (weights read back from moto), each step held until the Check okra made for
each new cluster (the Check controller, a real HTTP metrics endpoint) has passed since the
step began, and api stays."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.analysis.check_controller import setup as setup_checks
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.cell.system.controller import setup as setup_system_cells
from okra_controllers.settings import Settings
from okra_runtime import GVK, Client, Manager, ManagerOptions
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import cluster_secret
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import Network, Seeder
from support import ErrorRates, eventually, serve_error_rates

REPO = Path(__file__).resolve().parents[2]
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TARGET_GROUP = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
EVENT = GVK("events.k8s.io", "v1", "Event")
pytestmark = pytest.mark.timeout(300)


class System:
    def __init__(
        self, c: Client, ns: str, eks: LocalEks, plane: ControlPlane, network: Network
    ) -> None:
        self.c, self.ns, self.eks, self.plane, self.network = c, ns, eks, plane, network
        self.seed = Seeder(eks.config)
        self.tgs: dict[str, str] = {}

    async def cluster(self, name: str, role: str, eks: bool = True) -> dict[str, Any]:
        """A cluster's target group (with a registered target, made first, as Terraform
        does) and, unless `eks` is False, its EKS cluster tagged with its role and its Argo
        CD cluster Secret; the spec.clusters entry naming them."""
        arn = await self.seed.target_group(f"{self.ns[-6:]}-{name}"[:32], self.network)
        await self.seed.register_targets(arn, await self.seed.instances(1, self.network))
        self.tgs[name] = arn
        if eks:
            await self.arrives(name, role)
        return {"name": name, "eks": {}, "labels": {"role": role, "targetGroupARN": arn}}

    async def arrives(self, name: str, role: str) -> None:
        await self.eks.register(name, self.plane, self.network, tags={"role": role})
        await self.c.create(cluster_secret(name, self.plane, namespace=self.ns))

    async def weights(self, listener: str, priority: int) -> dict[str, int]:
        async with self.eks.config.client("elbv2") as elb:
            rules = (await elb.describe_rules(ListenerArn=listener))["Rules"]
        names = {arn: n for n, arn in self.tgs.items()}
        for r in rules:
            if r["Priority"] == str(priority):
                tgs = r["Actions"][0]["ForwardConfig"]["TargetGroups"]
                return {names.get(t["TargetGroupArn"], "?"): t["Weight"] for t in tgs}
        return {}

    async def debug(self) -> dict[str, Any]:
        """What to show when a wait fails: the status, the target groups, the Events."""
        tgs = await self.c.list(TARGET_GROUP, self.ns)
        events = await self.c.list(EVENT, self.ns)
        return {
            "status": await self.status(),
            "targetGroups": {t["metadata"]["name"]: t["metadata"]["labels"] for t in tgs.items},
            "events": [f"{e.get('reason')}: {e.get('note')}" for e in events.items],
        }

    async def status(self) -> dict[str, Any]:
        return (await self.c.get(CELL, "sys", self.ns)).get("status") or {}


def application(
    name: str, role: str, listener: str, priority: int, step: int, rates: str = ""
) -> dict[str, Any]:
    """An application behind its own listener rule; with `rates` (an ErrorRates URL), a
    check of each cluster's error rate gates every step."""
    checks = []
    if rates:
        url = f"{rates}/rate?cluster={{{{.Vars.eksClusterName}}}}"
        checks = [
            {
                "name": "errors",
                "analysis": {
                    "interval": "1s",
                    "provider": {"web": {"url": url, "jsonPath": "{$.rate}"}},
                    "max": 0.1,
                },
            }
        ]
    return {
        "checks": checks,
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": role}},
        "alb": {
            "listenerARN": listener,
            "forwardConfig": {
                "priority": priority,
                "targetGroup": {"arnFromLabel": "targetGroupARN"},
            },
            "updateStrategy": {"stepWeight": step, "totalWeight": 100},
        },
    }


@contextlib.asynccontextmanager
async def manager(rt_client: Client, namespace: str, aws: Any) -> AsyncIterator[None]:
    settings = Settings(
        namespace=namespace,
        okra_namespace=namespace,
        aws=aws,
        concurrency=2,
        cluster_poll_interval=1.0,
    )
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    for setup in (setup_system_cells, setup_cells, setup_albconfigs, setup_checks):
        setup(mgr, settings)
    task = asyncio.create_task(mgr.start())
    try:
        yield
    finally:
        mgr.stop()
        await asyncio.wait_for(task, 30)


@pytest.fixture
async def rates() -> AsyncIterator[ErrorRates]:
    async with serve_error_rates() as r:
        yield r


async def test_the_system_waits_for_its_late_cluster_then_walks_web_and_keeps_api(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    moto: MotoServer,
    rates: ErrorRates,
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    async with LocalEks(moto) as eks:
        network = await Seeder(eks.config).network()
        alb = await Seeder(eks.config).alb(f"sys-{namespace[-8:]}", network)
        s = System(rt_client, namespace, eks, workload_plane, network)
        v1 = [
            await s.cluster("web-1-v1", "web"),
            await s.cluster("web-2-v1", "web"),
            await s.cluster("api-v1", "api"),
        ]
        apps = [
            application("web", "web", alb.listener_arn, 10, 50, rates.url),
            application("api", "api", alb.listener_arn, 11, 100),
        ]
        cell = {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": v1, "applications": apps},
        }
        await rt_client.create(cell)
        async with manager(rt_client, namespace, eks.config):

            async def completed() -> bool:
                return (await s.status()).get("phase") == "Completed"

            assert await eventually(completed, within=90), await s.debug()
            assert await s.weights(alb.listener_arn, 10) == {"web-1-v1": 50, "web-2-v1": 50}
            assert await s.weights(alb.listener_arn, 11) == {"api-v1": 100}

            # A new web pair; the second cluster is not in EKS yet.
            web_1_v2 = await s.cluster("web-1-v2", "web")
            late = await s.cluster("web-2-v2", "web", eks=False)
            fresh = await rt_client.get(CELL, "sys", namespace)
            fresh["spec"]["clusters"] = [web_1_v2, late, v1[2]]
            await rt_client.update(fresh)

            async def pending() -> bool:
                st = await s.status()
                return st.get("phase") == "Pending" and "web-2-v2" in (st.get("message") or "")

            assert await eventually(pending, within=30), await s.debug()
            st = await s.status()
            assert "web-2-v2: not found in EKS" in st["message"]
            assert [c["name"] for c in st["clusters"] if not c["ready"]] == ["web-2-v2"]
            await asyncio.sleep(2)  # two more looks at EKS: still nothing moves
            assert await s.weights(alb.listener_arn, 10) == {"web-1-v1": 50, "web-2-v1": 50}

            # It arrives: web walks to the new pair in steps of 50, api stays.
            await s.arrives("web-2-v2", "web")
            seen: list[int] = []

            async def walked() -> bool:
                w = await s.weights(alb.listener_arn, 10)
                share = sum(v for k, v in w.items() if k.endswith("-v2"))
                if not seen or seen[-1] != share:
                    seen.append(share)
                return share == 100 and (await s.status()).get("phase") == "Completed"

            assert await eventually(walked, within=120, interval=0.05), (seen, await s.debug())
            assert seen == [0, 50, 100]
            # each step waited for a run of the check on both new clusters
            assert {"web-1-v2", "web-2-v2"} <= set(rates.queries)
            assert await s.weights(alb.listener_arn, 11) == {"api-v1": 100}
            st = await s.status()
            apps_st = {a["name"]: a for a in st["applications"]}
            assert (apps_st["web"]["phase"], apps_st["web"]["version"]) == ("Synced", "v2")
            assert apps_st["web"]["serving"] == ["web-1-v2", "web-2-v2"]
            assert (apps_st["api"]["phase"], apps_st["api"]["version"]) == ("Synced", "v1")
