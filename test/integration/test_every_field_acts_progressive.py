"""Every field of a ProgressiveRollout acts, is refused, or warns (issue 41 §1), judged by
the walk of test_every_field_acts.py (its `walk`: each optional field set on its own, dry
run on the real kube-apiserver, Warnings compared, then the plan).

The judge is the pure plan (progressiverollout/plan) over the simulated Argo CD of
test_progressiverollout_plan.py (`Sim`: the seed's clusters, EMEA in two regions and one
in the US, and four more in EMEA), in a few worlds: a new revision that goes right; one
whose syncs, analyses and webhooks fail; one whose clusters never get Healthy (the
progress deadline passes); one with a cluster drained (`drained: "true"`) the whole time
(requeued until its attempts run out). Time moves as the controller is woken: by what
each plan asks (`requeue_after`), Argo CD moving one step between plans.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from integration.test_every_field_acts import CRDS, WALKED_APART, assert_every_field_acts, walk
from okra_controllers.api.v1alpha1.progressiverollout import ProgressiveRolloutSpec
from okra_controllers.progressiverollout.plan.model import RESYNC
from okra_testkit.envtest import ControlPlane
from unit.test_progressiverollout_plan import NEW, Sim, SimApp, seed_spec

ROUNDS = 200
MORE_CLUSTERS = {
    f"{short}-{n}": {"area": "emea", "region": region}
    for short, region in (("euw1", "eu-west-1"), ("euc1", "eu-central-1"))
    for n in ("d", "e")
}
"""Beside the seed's six clusters, so that EMEA (nine) has more than the walker's number of
clusters (7); two of them (euc1-a and euw1-b) carry the walker's label (`walked`), so a
selector, requeue selector or topology key the walker writes picks something."""

PROGRESSIVE_SHAPES: dict[str, dict[str, Any]] = {
    "seed": seed_spec().model_dump(by_alias=True, exclude_unset=True, mode="json"),
    "gated": {
        "sourceRef": {"name": "web"},
        "stages": [
            {
                "name": "canary",
                "maxUnavailable": 3,
                "clusters": {"selector": {"matchLabels": {"area": "emea"}}},
                "bakeTime": "1m",
                "analysis": {
                    "templates": [{"templateName": "rate"}],
                    "args": [{"name": "revision", "value": "{{revision}}"}],
                },
                "webhooks": [
                    {"name": "before", "type": "PreStage", "url": "https://hooks.example/pre"},
                    {"name": "each", "type": "PerCluster", "url": "https://hooks.example/c"},
                ],
            },
            {
                "name": "everywhere",
                "maxUnavailable": "50%",
                "webhooks": [{"name": "after", "url": "https://hooks.example/post"}],
            },
        ],
        "failurePolicy": "Rollback",
        "progressDeadlineSeconds": 120,
    },
}
"""The seed's rollout (three stages over EMEA: a topology-spread canary, then each region,
requeueing drained clusters), and a gated one (a baked canary with an analysis and
webhooks before, per cluster and after, rolled back on failure)."""

ALLOWED: dict[str, str] = {
    "spec.sourceRef.apiGroup": "two spellings of the one group okra reads ApplicationSets "
    "from: `argoproj.io/v1alpha1` is how argocd-progressive-rollout-controller's example "
    "writes it, so that manifest applies unchanged; the pattern admits nothing else",
    "spec.sourceRef.kind": "its one value (ApplicationSet) is its default: there is no other "
    "value to set it to",
    "seed: spec.stages[].maxUnavailable": "the seed's canary stage updates two clusters "
    "(maxClusters: 2) and already lets both be unavailable (maxUnavailable: 2): a larger "
    "number allows the same. It acts in the gated shape",
}
"""ProgressiveRollout fields the walk lets pass although they neither act on the plan nor
are refused nor warn, each with why (`SHAPE: path` for one shape, `path` for all)."""


def _drive(sim: Sim) -> list[str]:
    out: list[str] = []
    for _ in range(ROUNDS):
        p = sim.reconcile()
        out.append(repr(p))
        if sim.status.phase in ("Completed", "Failed", "RolledBack"):
            break
        sim.argo()
        sim.finish_runs()
        sim.now += datetime.timedelta(seconds=p.requeue_after or RESYNC)
    return out


def progressive_outputs(raw: dict[str, Any]) -> list[Any]:
    """The plans of a rollout from the seed's clusters at one revision to the next, in
    each world (see the module's docstring)."""
    spec = ProgressiveRolloutSpec.model_validate(raw["spec"])
    out: list[Any] = []
    for world in ("right", "failing", "stuck", "drained"):
        sim = dataclasses.replace(Sim.seed(), spec=spec)
        for cluster, labels in MORE_CLUSTERS.items():
            sim.apps[f"web-{cluster}"] = SimApp(f"web-{cluster}", cluster, dict(labels))
        for name in ("web-euc1-a", "web-euw1-b"):
            sim.apps[name].labels["walked"] = "walked"
        if world == "failing":
            sim.run_outcome, sim.webhook_ok = "Failed", False
            for app in sim.apps.values():
                app.fail_next = True
        if world == "stuck":
            for app in sim.apps.values():
                app.degrade_after_sync = True
        if world == "drained":
            sim.apps["web-euw1-a"].labels["drained"] = "true"
        sim.commit(NEW)
        out += [world, *_drive(sim)]
    return out


def test_progressiverollout_is_walked_here() -> None:
    assert WALKED_APART["ProgressiveRollout"] == __name__.rsplit(".", 1)[-1] + ".py"


@pytest.mark.parametrize("shape", list(PROGRESSIVE_SHAPES))
async def test_every_progressiverollout_field_acts_is_refused_or_warns(
    control_plane: ControlPlane, kube: client.ApiClient, namespace: str, shape: str
) -> None:
    control_plane.install_crds([CRDS])
    kind = "ProgressiveRollout"
    verdict, broken = await walk(
        kube, namespace, kind, PROGRESSIVE_SHAPES[shape], progressive_outputs
    )
    assert_every_field_acts(
        f"{kind} {shape}",
        verdict,
        broken,
        lambda path: path in ALLOWED or f"{shape}: {path}" in ALLOWED,
    )
    assert verdict.refused  # the kind has rules: one was tried
