"""okra's standard scenario end to end, every link real (see okra_testkit.scenario):
EKS clusters in moto → ClusterSet → Argo CD cluster Secrets → ApplicationSet → Applications
synced by Argo CD onto the clusters (ConfigMap, Service, TargetGroupBinding) → AWSTargetGroupSet
→ AWSTargetGroups by version → a Cell canaries the ALB from v1 to v2, weights read back from
moto at each step → v1 clusters deleted in moto → Secrets, Applications and target groups go."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.scenario import CANARY_TOTALS, StandardScenario

REPO = Path(__file__).resolve().parents[2]
V1 = ("web-1-v1", "web-2-v1")
V2 = ("web-1-v2", "web-2-v2")


@pytest.fixture
async def scenario(
    control_plane: ControlPlane, moto: MotoServer
) -> AsyncIterator[StandardScenario]:
    s = StandardScenario(
        control_plane,
        moto,
        tgb_crd=REPO / "test" / "fixtures" / "targetgroupbinding-crd.yaml",
        namespace=f"argocd-{uuid.uuid4().hex[:6]}",
    )
    await s.start()
    try:
        yield s
    finally:
        await s.stop()


async def until(
    s: StandardScenario, check: Callable[[], Awaitable[bool]], what: str, within: float = 180
) -> None:
    """Wait for `check`; on timeout fail with what each component last said."""
    import asyncio

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.25)
    pytest.fail(
        f"timed out waiting for {what}\n"
        f"secrets: {sorted(await s.cluster_secrets())}\n"
        f"applications: {await s.applications()}\n"
        f"target groups: {await s.target_groups()}\n"
        f"cell: {await s.cell()}\nrule: {await s.rule()}\n"
        f"okra-manager:\n{s.manager_tail()}\n"
        f"application-controller:\n{s.argocd.process('argocd-application-controller').tail()}\n"
        f"applicationset-controller:\n"
        f"{s.argocd.process('argocd-applicationset-controller').tail()}"
    )


@pytest.mark.timeout(900)  # four clusters, Argo CD and a canary: minutes, not seconds
async def test_standard_scenario(scenario: StandardScenario) -> None:
    s = scenario

    # v1: two clusters appear in EKS; everything downstream follows by itself.
    for name in V1:
        await s.add_cluster(name, "v1")

    async def v1_deployed() -> bool:
        apps = await s.applications()
        return all(
            (apps.get(f"web-{n}", {}).get("sync") or {}).get("status") == "Synced" for n in V1
        )

    await until(s, v1_deployed, "Argo CD to sync the web app onto the v1 clusters")
    secrets = await s.cluster_secrets()
    assert {n: secrets[n]["version"] for n in V1} == {"web-1-v1": "v1", "web-2-v1": "v1"}
    for name in V1:
        assert await s.workload_objects(name) == [
            "ConfigMap/web",
            "Service/web",
            "TargetGroupBinding/web",
        ]

    async def v1_serving() -> bool:
        return await s.serving() == {"web-1-v1": 50, "web-2-v1": 50}

    await until(s, v1_serving, "the Cell to send all traffic to v1")
    assert await s.target_groups() == {"web-1-v1": "v1", "web-2-v1": "v1"}

    # v2: two new clusters; the Cell canaries through its steps, each shown by AWS.
    for name in V2:
        await s.add_cluster(name, "v2")
    seen: list[dict[str, int]] = []

    async def v2_at_100() -> bool:
        rule = await s.serving()
        if rule and (not seen or seen[-1] != rule):
            seen.append(rule)
        return rule == {"web-1-v2": 50, "web-2-v2": 50}

    await until(s, v2_at_100, "the canary to reach v2 at 100%", within=300)
    assert all(sum(w.values()) == 100 for w in seen), seen
    v2_totals = [sum(v for n, v in w.items() if n in V2) for w in seen]
    # Every canary step appears in AWS, in order, and v2 only ever on both clusters at once.
    assert [t for t in v2_totals if t in CANARY_TOTALS] == list(CANARY_TOTALS), seen
    assert all(t in (0, *CANARY_TOTALS) for t in v2_totals), seen
    assert all(w.get("web-1-v2") == w.get("web-2-v2") for w in seen), seen

    async def v2_stable() -> bool:
        return (await s.cell()).get("stableVersion") == "v2"

    await until(s, v2_stable, "the Cell to record v2 as its stable version", within=60)
    assert (await s.target_groups()) == {
        "web-1-v1": "v1",
        "web-2-v1": "v1",
        "web-1-v2": "v2",
        "web-2-v2": "v2",
    }

    # v1 retired: deleted in EKS → Secrets → Applications → target groups → out of the rule.
    for name in V1:
        await s.delete_cluster(name)

    async def v1_gone() -> bool:
        secrets, apps = await s.cluster_secrets(), await s.applications()
        return (
            sorted(secrets) == sorted(V2)
            and sorted(apps) == sorted(f"web-{n}" for n in V2)
            and sorted(await s.target_groups()) == sorted(V2)
            and await s.rule() == {"web-1-v2": 50, "web-2-v2": 50}
        )

    await until(s, v1_gone, "the v1 clusters to leave Argo CD and the Cell's rule")
