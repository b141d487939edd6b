"""The ProgressiveRollout controller on a real kube-apiserver with Argo CD's CRDs: it writes
sync operations stage by stage, never more in flight than allowed, reports every stage and
cluster in status, refuses bad input with a message, resumes from status after a restart, and
leaves no pending sync behind when deleted."""

from __future__ import annotations

import asyncio
from typing import Any

from integration.progressiverollout.harness import CLUSTERS, NEW, OLD, argo, manager
from okra_controllers.api.kinds import APPLICATION, PROGRESSIVE_ROLLOUT
from okra_controllers.progressiverollout.controller import FINALIZER, SYNC_ID_INFO
from okra_runtime import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.metrics import REGISTRY
from okra_runtime.priority import PriorityGate
from support import eventually

EVENT = GVK("events.k8s.io", "v1", "Event")


def rollout(ns: str, name: str = "web", appset: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "ProgressiveRollout",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "sourceRef": {
                "apiGroup": "argoproj.io/v1alpha1",
                "kind": "ApplicationSet",
                "name": appset,
            },
            "stages": [
                {
                    "name": "canary in EMEA",
                    "maxUnavailable": 2,
                    "maxClusters": 2,
                    "clusters": {"selector": {"matchLabels": {"area": "emea"}}},
                    "topologyKey": "region",
                },
                {
                    "name": "eu-west-1",
                    "maxUnavailable": "25%",
                    "maxClusters": "100%",
                    "clusters": {"selector": {"matchLabels": {"region": "eu-west-1"}}},
                },
                {
                    "name": "eu-central-1",
                    "maxUnavailable": "25%",
                    "maxClusters": "100%",
                    "clusters": {"selector": {"matchLabels": {"region": "eu-central-1"}}},
                },
            ],
            **spec,
        },
    }


async def status_of(c: Client, ns: str, name: str = "web") -> dict[str, Any]:
    try:
        return (await c.get(PROGRESSIVE_ROLLOUT, name, ns)).get("status") or {}
    except NotFoundError:
        return {}


async def phase_is(c: Client, ns: str, phase: str, name: str = "web") -> bool:
    return (await status_of(c, ns, name)).get("phase") == phase


async def test_the_seed_rollout_goes_stage_by_stage_to_every_cluster(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        assert argocd.synced == []  # first sight: everything already at OLD
        await argocd.commit(NEW)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 90)
        st = await status_of(rt_client, namespace)
        assert st["revision"] == NEW
        assert [s["phase"] for s in st["stages"]] == ["Completed"] * 3
        canaries = [c["name"] for c in st["stages"][0]["clusters"]]
        assert sorted(CLUSTERS[c]["region"] for c in canaries) == ["eu-central-1", "eu-west-1"]
        # Each Application synced once, to NEW, the canaries first.
        names = [a for a, _ in argocd.synced]
        assert sorted(names) == sorted(f"{c}-web" for c in CLUSTERS)
        assert {r for _, r in argocd.synced} == {NEW}
        assert set(names[:2]) == {f"{c}-web" for c in canaries}
        # maxUnavailable 25% of 2 clusters = 1 in the region stages; 2 in stage 1.
        assert argocd.max_in_flight <= 2
        for app in (await rt_client.list(APPLICATION, namespace)).items:
            ops = app["status"]["operationState"]
            assert ops["operation"]["initiatedBy"]["username"] == "okra"
            assert any(i["name"] == SYNC_ID_INFO for i in ops["operation"]["info"])
            assert app["status"]["history"][-1]["revision"] == NEW
        # Status per cluster: phase, revision, previous revision, times.
        c0 = st["stages"][0]["clusters"][0]
        assert c0["phase"] == "Completed"
        assert c0["revision"] == NEW
        assert c0["previousRevision"] == OLD
        assert c0["started"] <= c0["finished"]
        conds = {c["type"]: c for c in st["conditions"]}
        assert conds["Ready"]["status"] == "True"
        assert conds["AutomatedSyncDisabled"]["status"] == "True"
        labels = {"namespace": namespace, "progressiverollout": "web"}
        assert (
            REGISTRY.get_sample_value(
                "okra_progressiverollout_phase", {**labels, "phase": "Completed"}
            )
            == 1
        )
        assert REGISTRY.get_sample_value(
            "okra_progressiverollout_clusters", {**labels, "phase": "Completed"}
        ) == len(CLUSTERS)
        assert REGISTRY.get_sample_value(
            "okra_progressiverollout_syncs_total", {**labels, "reason": "rollout"}
        ) == len(CLUSTERS)
        reasons = [e.get("reason") for e in (await rt_client.list(EVENT, namespace)).items]
        assert "StageCompleted" in reasons
        assert "RolloutCompleted" in reasons


class Told(PriorityGate):
    """The manager's gate, recording what reconciles tell it: True for a reconcile that
    left its object mid-change, False for one that ended an object's change."""

    def __init__(self) -> None:
        super().__init__()
        self.told: list[bool] = []

    def touched(self, still: bool, next_hop: float | None = None) -> None:
        self.told.append(still)
        super().touched(still, next_hop)


async def test_a_rollout_between_stages_goes_before_first_reports(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    gate = Told()
    async with manager(rt_client, namespace, gate=gate), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        assert gate.told == []  # its first status is a first report, not a move
        await argocd.commit(NEW)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 90)

        async def said_done() -> bool:
            return bool(gate.told) and gate.told[-1] is False

        assert await eventually(said_done, 10)
    # moving stage by stage, it said so after each hop (a reconcile that found nothing new
    # to write, waiting on a sync, says it is not moving); done, it said so last
    assert gate.told.count(True) >= 3, gate.told


async def test_a_restarted_manager_resumes_without_resyncing_finished_clusters(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with argo(rt_client, namespace) as argocd:
        async with manager(rt_client, namespace):
            await rt_client.create(rollout(namespace))
            assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
            await argocd.commit(NEW)

            async def first_stage_done() -> bool:
                st = await status_of(rt_client, namespace)
                return bool(st.get("stages")) and st["stages"][0]["phase"] == "Completed"

            assert await eventually(first_stage_done, 60)
        # The manager is gone mid-rollout; a new one picks up from the status.
        done_before = list(argocd.synced)
        async with manager(rt_client, namespace):
            assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 90)
        names = [a for a, _ in argocd.synced]
        assert sorted(names) == sorted(set(names)), f"an Application was synced twice: {names}"
        assert argocd.synced[: len(done_before)] == done_before


async def test_a_failed_sync_stops_the_rollout_with_the_cluster_named(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        argocd.fail = {f"{c}-web" for c in CLUSTERS}
        await argocd.commit(NEW)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Failed"), 60)
        st = await status_of(rt_client, namespace)
        assert "one or more objects failed" in st["message"]
        assert st["stages"][1]["phase"] == "Pending"
        assert "resume" in st["message"]


async def test_rollback_policy_syncs_updated_clusters_back(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace, failurePolicy="Rollback"))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        argocd.fail = {"euc1-b-web", "euw1-b-web"}  # every stage-2/3 cluster not in stage 1
        await argocd.commit(NEW)
        assert await eventually(lambda: phase_is(rt_client, namespace, "RolledBack"), 90)
        forward = [a for a, r in argocd.synced if r == NEW]
        back = [a for a, r in argocd.synced if r == OLD]
        assert forward
        assert back == list(reversed(forward))
        for app in (await rt_client.list(APPLICATION, namespace)).items:
            assert app["status"]["history"][-1]["revision"] == OLD
        st = await status_of(rt_client, namespace)
        assert st["failedRevision"] == NEW


async def test_bad_input_gets_a_status_message_saying_what_to_fix(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace):
        await rt_client.create(rollout(namespace, name="missing", appset="nope"))
        await rt_client.create(rollout(namespace, name="first"))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed", "first"), 30)
        await rt_client.create(rollout(namespace, name="second"))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Error", "missing"), 30)
        st = await status_of(rt_client, namespace, "missing")
        assert "ApplicationSet 'nope' not found" in st["message"]
        assert "spec.sourceRef.name" in st["message"]
        assert await eventually(lambda: phase_is(rt_client, namespace, "Error", "second"), 30)
        st = await status_of(rt_client, namespace, "second")
        assert "already rolled out by ProgressiveRollout 'first'" in st["message"]
        # The owner is untouched by the rival.
        assert (await status_of(rt_client, namespace, "first"))["phase"] == "Completed"


async def test_automated_sync_is_reported_and_nothing_is_synced(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    app = await rt_client.get(APPLICATION, "euw1-a-web", namespace)
    app["spec"]["syncPolicy"] = {"automated": {"prune": True}}
    await rt_client.update(app)
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace))
        await argocd.commit(NEW)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Error"), 30)
        st = await status_of(rt_client, namespace)
        assert "euw1-a-web" in st["message"]
        assert "syncPolicy.automated" in st["message"]
        await asyncio.sleep(0)  # nothing else to wait for: okra never wrote an operation
        assert argocd.synced == []


async def test_deleting_the_rollout_removes_its_pending_syncs(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(rollout(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        argocd.paused = True  # Argo CD stops picking up operations
        await argocd.commit(NEW)

        async def pending() -> bool:
            apps = (await rt_client.list(APPLICATION, namespace)).items
            return sum(1 for a in apps if a.get("operation")) == 2

        assert await eventually(pending, 30)
        obj = await rt_client.get(PROGRESSIVE_ROLLOUT, "web", namespace)
        assert FINALIZER in obj["metadata"]["finalizers"]
        await rt_client.delete(PROGRESSIVE_ROLLOUT, "web", namespace)

        async def gone() -> bool:
            try:
                await rt_client.get(PROGRESSIVE_ROLLOUT, "web", namespace)
            except NotFoundError:
                return True
            return False

        assert await eventually(gone, 30)
        apps = (await rt_client.list(APPLICATION, namespace)).items
        assert [a["metadata"]["name"] for a in apps if a.get("operation")] == []
