"""The Cell controller reads its caches without copies (`Store.*(copy=False)`): what it
reads them with — `observe`, the plan, and the simulation of the rollout ahead — must
leave every cached object exactly as the API server sent it."""

from __future__ import annotations

import copy
import dataclasses
import datetime
from typing import Any

from okra_controllers.api.v1alpha1.cell import Cell
from okra_controllers.cell.observe import observe
from okra_controllers.cell.plan import plan
from okra_controllers.cell.simulate import simulate
from okra_runtime.cache import OWNER_INDEX, Store
from okra_runtime.labels import selector_from_dict

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/web/1/2"
UID = "u"
OWNER = [{"apiVersion": "okra.mumo.co/v1alpha1", "kind": "Cell", "name": "web", "uid": UID}]


def cell(annotations: dict[str, str] | None = None, **spec: Any) -> Cell:
    steps = [{"setWeight": 20}, {"pause": {"duration": "30s"}}, {"stepWeight": 30}]
    return Cell.model_validate(
        {
            "metadata": {
                "name": "web",
                "namespace": "ns",
                "uid": UID,
                "generation": 1,
                "annotations": annotations or {},
            },
            "spec": {
                "ingress": {
                    "awsApplicationLoadBalancer": {
                        "listenerARN": LISTENER,
                        "targetGroupSelector": {"matchLabels": {"app": "web"}},
                    }
                },
                "updateStrategy": {"canary": {"steps": steps}},
                **spec,
            },
        }
    )


def tg(name: str, version: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"app": "web", "okra.mumo.co/version": version},
        },
        "spec": {"arn": f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{name}/1"},
    }


def owned(kind: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": OWNER, "labels": {}},
        "status": status,
    }


def stores() -> dict[str, Store]:
    out = {k: Store() for k in ("tgs", "configs", "runs", "pauses", "jobs")}
    for name, version in (("a-v1", "v1"), ("b-v1", "v1"), ("a-v2", "v2"), ("b-v2", "2.0.0")):
        out["tgs"].upsert(tg(name, version))
    out["tgs"].upsert(
        {"metadata": {"name": "bad", "namespace": "ns", "labels": {"app": "web"}}, "spec": {}}
    )
    arn = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{}/1"
    out["configs"].upsert(
        {
            "metadata": {"name": "web", "namespace": "ns", "generation": 3},
            "spec": {
                "listenerARN": LISTENER,
                "forwardTargetGroups": [
                    {"name": "a-v1", "arn": arn.format("a-v1"), "weight": 50},
                    {"name": "b-v1", "arn": arn.format("b-v1"), "weight": 50},
                ],
            },
            "status": {
                "observedGeneration": 3,
                "conditions": [{"type": "Synced", "status": "True"}],
            },
        }
    )
    out["runs"].upsert(owned("AnalysisRun", "web-step-2", {"phase": "Running"}))
    out["pauses"].upsert(owned("Pause", "web-step-1", {"phase": "Paused"}))
    out["jobs"].upsert(
        owned("Job", "web-check", {"conditions": [{"type": "Failed", "status": "True"}]})
    )
    return out


def snapshot(s: dict[str, Store]) -> dict[str, list[dict[str, Any]]]:
    return {k: copy.deepcopy(store.list()) for k, store in s.items()}


def test_observe_plan_and_simulate_leave_the_cached_objects_unchanged() -> None:
    s = stores()
    before = snapshot(s)
    for c in (cell(), cell({"okra.mumo.co/promote": "true"}), cell(version="v1")):
        tgs = s["tgs"].list("ns", selector_from_dict({"matchLabels": {"app": "web"}}), copy=False)
        assert tgs[0] is s["tgs"].peek(f"ns/{tgs[0]['metadata']['name']}")  # no copy
        o = observe(
            c,
            tgs,
            s["configs"].get("web", "ns", copy=False),
            None,
            s["runs"].by_index(OWNER_INDEX, UID, copy=False),
            s["pauses"].by_index(OWNER_INDEX, UID, copy=False),
            T0,
            s["jobs"].by_index(OWNER_INDEX, UID, copy=False),
        )
        o = dataclasses.replace(o, health={t["spec"]["arn"]: True for t in tgs if t["spec"]})
        p = plan(o)
        simulate(dataclasses.replace(o, status=p.status))
    assert snapshot(s) == before
