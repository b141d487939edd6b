"""Gates between clusters and stages, through the controller on a real kube-apiserver: a
drained cluster (its Argo CD cluster Secret labelled) is requeued and later done, or fails the
stage naming it; a stage analysis (okra AnalysisRun measured by okra's analysis controller)
that fails stops the rollout before the next stage; webhooks are called with the stage's
clusters and a failing one fails the stage."""

from __future__ import annotations

from typing import Any

from integration.progressiverollout.harness import NEW, argo, hooks, manager
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from okra_controllers.api.kinds import ANALYSIS_RUN
from okra_runtime import GVK, Client
from support import eventually

SECRET = GVK("", "v1", "Secret")
TEMPLATE = GVK("okra.mumo.co", "v1alpha1", "AnalysisTemplate")
REQUEUE = {"selector": {"matchLabels": {"drained": "true"}}, "attempts": 3, "interval": "2s"}


async def label(c: Client, ns: str, cluster: str, value: str | None) -> None:
    await c.patch(
        SECRET, f"cluster-{cluster}", {"metadata": {"labels": {"drained": value}}}, namespace=ns
    )


async def test_a_drained_cluster_is_requeued_then_done_once_undrained(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    await label(rt_client, namespace, "euw1-b", "true")
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        pr = rollout(namespace)
        pr["spec"]["stages"][1]["requeue"] = {**REQUEUE, "attempts": 1000}
        await rt_client.create(pr)
        await argocd.commit(NEW)

        async def requeued() -> bool:
            st = await status_of(rt_client, namespace)
            cs = {c["name"]: c for s in st.get("stages") or [] for c in s.get("clusters") or []}
            c = cs.get("euw1-b", {})
            return bool(c.get("phase") == "Requeued" and int(c["attempts"]) >= 2)

        assert await eventually(requeued, 60)
        assert "euw1-b-web" not in [a for a, _ in argocd.synced]
        await label(rt_client, namespace, "euw1-b", None)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 90)
        assert ("euw1-b-web", NEW) in argocd.synced


async def test_exhausted_requeue_attempts_fail_the_stage_naming_the_cluster(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    await label(rt_client, namespace, "euw1-b", "true")
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        pr = rollout(namespace)
        pr["spec"]["stages"][1]["requeue"] = REQUEUE
        await rt_client.create(pr)
        await argocd.commit(NEW)
        assert await eventually(lambda: phase_is(rt_client, namespace, "Failed"), 90)
        st = await status_of(rt_client, namespace)
        assert "euw1-b" in st["message"]
        assert "after 3 attempts" in st["message"]
        assert st["stages"][2]["phase"] == "Pending"


async def test_a_failing_analysis_in_stage_2_stops_before_stage_3(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with hooks() as h:
        h.rate = 0.5  # the error rate the analysis reads: too high
        await rt_client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AnalysisTemplate",
                "metadata": {"name": "error-rate", "namespace": namespace},
                "spec": {
                    "args": [{"name": "clusters"}],
                    "metrics": [
                        {
                            "name": "error-rate",
                            "successCondition": "result < 0.1",
                            "provider": {
                                "web": {
                                    "url": f"{h.url}/rate?c={{{{args.clusters}}}}",
                                    "jsonPath": "{$.rate}",
                                }
                            },
                        }
                    ],
                },
            }
        )
        async with (
            manager(rt_client, namespace, analysis=True),
            argo(rt_client, namespace) as argocd,
        ):
            pr = rollout(namespace)
            pr["spec"]["stages"][1]["analysis"] = {
                "templates": [{"templateName": "error-rate"}],
                "args": [{"name": "clusters", "value": "{{clusters}}"}],
            }
            await rt_client.create(pr)
            await argocd.commit(NEW)
            assert await eventually(lambda: phase_is(rt_client, namespace, "Failed"), 90)
        st = await status_of(rt_client, namespace)
        assert st["stages"][1]["phase"] == "Failed"
        assert st["stages"][1]["analysisPhase"] == "Failed"
        assert st["stages"][2]["phase"] == "Pending"
        runs = (await rt_client.list(ANALYSIS_RUN, namespace)).items
        assert [r["metadata"]["name"] for r in runs] == [st["stages"][1]["analysisRun"]]
        assert any("euw1-a" in p for p, _ in h.calls) or any(
            "euw1" in str(r["spec"].get("args")) for r in runs
        )
        synced = {a for a, _ in argocd.synced}
        assert "euc1-b-web" not in synced  # stage 3's own cluster never synced


async def test_webhooks_are_called_and_a_failing_one_fails_the_stage(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    async with hooks() as h:
        async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
            pr = rollout(namespace)
            pr["spec"]["stages"][0]["webhooks"] = [
                {"name": "smoke", "type": "PerCluster", "url": f"{h.url}/smoke"},
                {"name": "announce", "type": "PostStage", "url": f"{h.url}/announce"},
            ]
            pr["spec"]["stages"][1]["webhooks"] = [
                {"name": "gate", "type": "PreStage", "url": f"{h.url}/gate", "expectedStatus": 204}
            ]
            await rt_client.create(pr)
            await argocd.commit(NEW)
            assert await eventually(lambda: phase_is(rt_client, namespace, "Failed"), 90)
        st = await status_of(rt_client, namespace)
        paths = [p for p, _ in h.calls]
        assert paths.count("/smoke") == 2
        assert paths == ["/smoke", "/smoke", "/announce", "/gate"]
        announce = next(b for p, b in h.calls if p == "/announce")
        assert announce["stage"] == "canary in EMEA"
        assert announce["revision"] == NEW
        assert len(announce["clusters"]) == 2
        assert "gate" in st["message"]
        assert "expected 204" in st["message"]
        assert all(a not in {"euw1-b-web"} for a, _ in argocd.synced)  # stage 2 never synced
