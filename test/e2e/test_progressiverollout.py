"""ProgressiveRollout end to end: the real okra-manager process drives the real Argo CD
(application-controller, applicationset-controller, repo-server, a `file://` git repository)
rolling an ApplicationSet out over three workload control planes labelled by area and region,
as in the original controller's example. What each workload cluster runs is read from the
workload cluster itself (a ConfigMap carrying the commit's marker). The world itself (`App`,
`start`, the workload planes) is in e2e/progressive_world.py, its fixtures in e2e/conftest.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from e2e.conftest import OkraManager
from e2e.progressive_world import APPLICATION_SET, CLUSTERS, SLOW, App, start
from okra_controllers.api.kinds import PROGRESSIVE_ROLLOUT
from okra_runtime import GVK, Client
from okra_runtime.errors import InvalidError, NotFoundError
from okra_testkit.envtest.argocd import ArgoCD
from support import eventually

if TYPE_CHECKING:
    from e2e.conftest import Metrics

SECRET = GVK("", "v1", "Secret")
TEMPLATE = GVK("okra.mumo.co", "v1alpha1", "AnalysisTemplate")


@pytest.fixture
def okra(rollout_okra: OkraManager) -> OkraManager:
    """okra-manager with the ProgressiveRollout and AnalysisRun controllers (e2e/conftest.py)."""
    return rollout_okra


class Sampler:
    """Samples, while running, how many clusters of each stage are in flight, the order the
    stages start in, and — the moment okra first reports a cluster Completed at a revision
    it synced — what that workload cluster actually runs."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.max_in_flight: dict[str, int] = {}
        self.stage_order: list[str] = []
        self.completed: dict[tuple[str, str], str | None] = {}  # (cluster, rev) -> marker
        self.running = True

    async def run(self) -> None:
        while self.running:
            await self.sample()
            await asyncio.sleep(0.2)

    async def sample(self) -> None:
        st = await self.app.status()
        for s in st.get("stages") or []:
            for c in s.get("clusters") or []:
                key = (c["name"], c.get("revision") or "")
                if c.get("phase") == "Completed" and c.get("syncId") and key not in self.completed:
                    self.completed[key] = await self.app.marker(c["name"])
            flying = [
                c
                for c in s.get("clusters") or []
                if c.get("phase") in ("Syncing", "Baking", "Verifying")
            ]
            self.max_in_flight[s["name"]] = max(self.max_in_flight.get(s["name"], 0), len(flying))
            if s.get("phase") != "Pending" and s["name"] not in self.stage_order:
                self.stage_order.append(s["name"])


@contextlib.asynccontextmanager
async def sampling(app: App) -> AsyncIterator[Sampler]:
    s = Sampler(app)
    task = asyncio.create_task(s.run())
    try:
        yield s
    finally:
        s.running = False
        await asyncio.wait_for(task, 10)
        await s.sample()  # the last transitions, after the condition the test awaited


async def test_the_seed_example_rolls_out_stage_by_stage_within_max_unavailable(
    app: App, okra: OkraManager
) -> None:
    async with sampling(app) as sampler:
        await start(app, okra)
        assert await app.markers() == {name: "v1" for name in CLUSTERS}
        second = app.commit("v2")
        assert await eventually(lambda: app.revision_is(second, "Completed"), SLOW, 0.5), (
            okra.tail()
        )
    assert await app.markers() == {name: "v2" for name in CLUSTERS}
    st = await app.status()
    canaries = sorted(c["name"] for c in st["stages"][0]["clusters"])
    assert sorted(CLUSTERS[c]["region"] for c in canaries) == ["eu-central-1", "eu-west-1"]
    assert sampler.stage_order == ["canary in EMEA", "eu-west-1", "eu-central-1"]
    assert sampler.max_in_flight["canary in EMEA"] <= 2
    assert sampler.max_in_flight["eu-west-1"] <= 1  # 25% of 2, at least 1
    assert sampler.max_in_flight["eu-central-1"] <= 1
    # Each Application was synced once per revision, never twice.
    for name, revisions in (await app.okra_syncs()).items():
        assert revisions.count(second) == 1, (name, revisions)
    # Never counted done from stale status: when okra first said Completed, the cluster ran it.
    assert {c for c, r in sampler.completed if r == second} == set(CLUSTERS)
    for (cluster, revision), marker in sampler.completed.items():
        assert marker == app.commits[revision], (cluster, revision, marker)


async def test_a_drained_cluster_is_requeued_and_done_after_its_label_is_removed(
    app: App, okra: OkraManager, argocd: ArgoCD, rt_client: Client
) -> None:
    first = await start(app, okra)
    secret = "cluster-pr-euw1-b"
    await rt_client.patch(
        SECRET, secret, {"metadata": {"labels": {"drained": "true"}}}, namespace=argocd.namespace
    )
    try:
        obj = await rt_client.get(PROGRESSIVE_ROLLOUT, app.name, argocd.namespace)
        for s in obj["spec"]["stages"][:2]:
            s["requeue"]["interval"] = "3s"
            s["requeue"]["attempts"] = 1000
        await rt_client.update(obj)
        second = app.commit("v2")

        async def requeued() -> bool:
            st = await app.status()
            cs = [c for s in st.get("stages") or [] for c in s.get("clusters") or []]
            return any(
                c["name"] == "pr-euw1-b" and c["phase"] == "Requeued" and c.get("attempts", 0) >= 2
                for c in cs
            )

        assert await eventually(requeued, SLOW, 0.5), okra.tail()
        assert (await app.markers())["pr-euw1-b"] == "v1"
    finally:
        await rt_client.patch(
            SECRET, secret, {"metadata": {"labels": {"drained": None}}}, namespace=argocd.namespace
        )
    assert await eventually(lambda: app.revision_is(second, "Completed"), SLOW, 0.5), okra.tail()
    assert await app.markers() == {name: "v2" for name in CLUSTERS}
    assert first != second


async def test_exhausted_requeue_attempts_fail_the_stage_naming_the_cluster(
    app: App, okra: OkraManager, argocd: ArgoCD, rt_client: Client
) -> None:
    await start(app, okra)
    secret = "cluster-pr-euw1-b"
    obj = await rt_client.get(PROGRESSIVE_ROLLOUT, app.name, argocd.namespace)
    for s in obj["spec"]["stages"][:2]:
        s["requeue"]["interval"] = "2s"
        s["requeue"]["attempts"] = 2
    await rt_client.update(obj)
    await rt_client.patch(
        SECRET, secret, {"metadata": {"labels": {"drained": "true"}}}, namespace=argocd.namespace
    )
    try:
        app.commit("v2")
        assert await eventually(lambda: app.phase_is("Failed"), SLOW, 0.5), okra.tail()
    finally:
        await rt_client.patch(
            SECRET, secret, {"metadata": {"labels": {"drained": None}}}, namespace=argocd.namespace
        )
    st = await app.status()
    assert "pr-euw1-b" in st["message"]
    assert "after 2 attempts" in st["message"]


async def analysed_rollout(
    app: App, okra: OkraManager, metrics: Metrics, policy: str
) -> tuple[str, str]:
    await app.client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AnalysisTemplate",
            "metadata": {"name": f"error-rate-{app.suffix}", "namespace": app.argocd.namespace},
            "spec": {
                "metrics": [
                    {
                        "name": "error-rate",
                        "successCondition": "result < 0.1",
                        "provider": {
                            "web": {
                                "url": f"{metrics.url}/error-rate?version={app.name}",
                                "jsonPath": "{$.errorRate}",
                            }
                        },
                    }
                ]
            },
        }
    )
    first = app.commit("v1")
    await app.client.create(app.appset())
    assert await eventually(lambda: app.resolved(first), SLOW, 0.5), okra.tail()
    pr = app.rollout(failurePolicy=policy)
    pr["spec"]["stages"][1]["analysis"] = {
        "templates": [{"templateName": f"error-rate-{app.suffix}"}]
    }
    await app.client.create(pr)
    assert await eventually(lambda: app.revision_is(first, "Completed"), SLOW, 0.5), okra.tail()
    metrics.rates[app.name] = 0.5  # v2 is bad
    second = app.commit("v2")
    return first, second


async def test_a_failing_analysis_in_stage_2_pauses_the_rollout(
    app: App, okra: OkraManager, metrics: Metrics
) -> None:
    _, second = await analysed_rollout(app, okra, metrics, "Pause")
    assert await eventually(lambda: app.phase_is("Failed"), SLOW, 0.5), okra.tail()
    st = await app.status()
    assert st["revision"] == second
    assert st["stages"][1]["phase"] == "Failed"
    assert st["stages"][2]["phase"] == "Pending"
    # Stages 1-2 updated the two eu-west-1 clusters and the eu-central-1 canary: all at v2.
    # (Stage 3 has no cluster of its own left, so the stop shows in its phase.)
    assert await app.markers() == {name: "v2" for name in CLUSTERS}


async def test_a_failing_analysis_in_stage_2_rolls_stages_1_and_2_back(
    app: App, okra: OkraManager, metrics: Metrics
) -> None:
    _, second = await analysed_rollout(app, okra, metrics, "Rollback")
    assert await eventually(lambda: app.phase_is("RolledBack"), SLOW, 0.5), okra.tail()
    st = await app.status()
    assert st["failedRevision"] == second
    assert await app.markers() == {name: "v1" for name in CLUSTERS}


async def test_a_new_commit_mid_rollout_restarts_from_the_first_stage(
    app: App, okra: OkraManager
) -> None:
    await start(app, okra)
    obj = await app.client.get(PROGRESSIVE_ROLLOUT, app.name, app.argocd.namespace)
    obj["spec"]["stages"][0]["bakeTime"] = "20s"
    await app.client.update(obj)
    second = app.commit("v2")

    async def baking() -> bool:
        st = await app.status()
        return st.get("revision") == second and any(
            c.get("phase") == "Baking" for c in (st.get("stages") or [{}])[0].get("clusters") or []
        )

    assert await eventually(baking, SLOW, 0.5), okra.tail()
    third = app.commit("v3")

    async def restarted() -> bool:
        st = await app.status()
        return st.get("revision") == third and [s["phase"] for s in st["stages"]][1:] == [
            "Pending",
            "Pending",
        ]

    assert await eventually(restarted, SLOW, 0.5), okra.tail()
    assert await eventually(lambda: app.revision_is(third, "Completed"), SLOW * 2, 0.5), okra.tail()
    assert await app.markers() == {name: "v3" for name in CLUSTERS}


async def test_kill_9_mid_stage_resumes_without_resyncing_finished_clusters(
    app: App, okra: OkraManager
) -> None:
    await start(app, okra)
    obj = await app.client.get(PROGRESSIVE_ROLLOUT, app.name, app.argocd.namespace)
    obj["spec"]["stages"][1]["bakeTime"] = "15s"
    await app.client.update(obj)
    second = app.commit("v2")

    async def stage_2_baking() -> bool:
        st = await app.status()
        stages = st.get("stages") or []
        return (
            st.get("revision") == second
            and len(stages) == 3
            and stages[0]["phase"] == "Completed"
            and any(c.get("phase") == "Baking" for c in stages[1].get("clusters") or [])
        )

    assert await eventually(stage_2_baking, SLOW, 0.5), okra.tail()
    okra.kill()
    before = await app.okra_syncs()
    okra.start()
    assert await eventually(lambda: app.revision_is(second, "Completed"), SLOW, 0.5), okra.tail()
    after = await app.okra_syncs()
    for name, revisions in after.items():
        assert revisions.count(second) == 1, (name, revisions)
        if second in before.get(name, []):
            assert revisions == before[name], f"{name} was synced again after the restart"


async def test_bad_input_gets_a_status_message_saying_what_to_fix(
    app: App, okra: OkraManager
) -> None:
    await start(app, okra)
    missing = app.rollout(name=f"missing-{app.suffix}")
    missing["spec"]["sourceRef"]["name"] = "no-such-appset"
    await app.client.create(missing)
    await app.client.create(app.rollout(name=f"second-{app.suffix}"))
    # A percent over 100% is refused by the API server, naming the field.
    over = app.rollout(name=f"over-{app.suffix}")
    over["spec"]["stages"][1]["maxUnavailable"] = "150%"
    with pytest.raises(InvalidError, match="maxUnavailable"):
        await app.client.create(over)
    # A stage whose selector matches no cluster holds, saying which selector to fix.
    other = App(app.argocd, app.client, planes=app.planes)
    other.commit("v1")
    await app.client.create(other.appset())
    typo = other.rollout()
    typo["spec"]["stages"][1]["clusters"]["selector"]["matchLabels"]["region"] = "eu-wst-1"
    await app.client.create(typo)
    try:
        assert await eventually(lambda: nothing_matches(other), SLOW, 0.5), okra.tail()
        st = await other.status()
        assert st["stages"][2]["phase"] == "Pending"
        assert "eu-wst-1" in st["message"]
        assert await eventually(lambda: app.phase_is("Error", f"missing-{app.suffix}"), 60, 0.5)
        st = await app.status(f"missing-{app.suffix}")
        assert "ApplicationSet 'no-such-appset' not found" in st["message"]
        assert await eventually(lambda: app.phase_is("Error", f"second-{app.suffix}"), 60, 0.5)
        st = await app.status(f"second-{app.suffix}")
        assert f"already rolled out by ProgressiveRollout '{app.name}'" in st["message"]
    finally:
        for n in (f"missing-{app.suffix}", f"second-{app.suffix}", other.name):
            with contextlib.suppress(NotFoundError):
                await app.client.delete(PROGRESSIVE_ROLLOUT, n, app.argocd.namespace)
        with contextlib.suppress(NotFoundError):
            await app.client.delete(APPLICATION_SET, other.name, app.argocd.namespace)


async def nothing_matches(app: App) -> bool:
    st = await app.status()
    return "no cluster of the ApplicationSet matches" in (st.get("message") or "")
