"""The Cells page's card of a system Cell: which Cells are a system's applications, the
system's clusters (ready, or waiting since when), each application's versions with the
weight AWS shows per cluster, its Cell's row, and its Checks."""

from __future__ import annotations

from typing import Any

import pytest

from okra_controllers.cli.dashboard import model, systems

pytestmark = pytest.mark.unit

ARN = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{}/1"
SYS = "okra.mumo.co/system"
APP = "okra.mumo.co/application"


def system(**annotations: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "shop", "namespace": "prod", "annotations": annotations},
        "spec": {
            "clusters": [{"name": n} for n in ("a", "b", "c", "api-1")],
            "applications": [{"name": "web"}, {"name": "api"}],
        },
        "status": {
            "phase": "Pending",
            "message": "waiting for c: not found in EKS",
            "clusters": [
                {"name": "a", "eksClusterName": "a", "ready": True},
                {"name": "b", "eksClusterName": "eks-b", "ready": True},
                {
                    "name": "c",
                    "ready": False,
                    "message": "not found in EKS",
                    "waitingSince": "2026-01-01T11:58:00Z",
                },
            ],
            "applications": [
                {
                    "name": "web",
                    "phase": "Syncing",
                    "cell": "shop-web",
                    "version": "v2",
                    "clusters": ["b", "c"],
                    "servingVersion": "v1",
                    "serving": ["a"],
                    "weight": 50,
                    "checkTries": [{"name": "shop-web-errors-c", "failed": 2}],
                }
            ],
        },
    }


def child(app: str, system_name: str = "shop", **status: Any) -> dict[str, Any]:
    tgs = [
        {"name": f"shop-{app}-{c}", "arn": ARN.format(c), "version": v}
        for c, v in (("a", "v1"), ("b", "v2"), ("c", "v2"))
    ]
    return {
        "metadata": {
            "name": f"shop-{app}",
            "namespace": "prod",
            "labels": {SYS: system_name, APP: app},
            "annotations": {"okra.mumo.co/pause": "true"},
        },
        "spec": {},
        "status": {"targetGroups": tgs, "stableVersion": "v1", "canaryVersion": "v2", **status},
    }


def applied(**weights: int) -> dict[str, Any]:
    fwd = [{"arn": ARN.format(c), "weight": w} for c, w in weights.items()]
    return {"status": {"applied": {"forwardTargetGroups": fwd}}}


def check(name: str, check_name: str, app: str = "web", **status: Any) -> dict[str, Any]:
    labels = {SYS: "shop", APP: app, "okra.mumo.co/check": check_name}
    return {
        "metadata": {"name": name, "namespace": "prod", "labels": labels},
        "status": status,
    }


def test_a_systems_application_cells_belong_to_it_and_other_cells_do_not() -> None:
    found = {"prod/shop": system()}
    assert systems.system_of(child("web"), found) == "prod/shop"
    assert systems.system_of(child("web", "gone"), found) is None  # its system not read
    assert systems.system_of({"metadata": {"name": "web", "namespace": "prod"}}, found) is None
    other_ns = child("web")
    other_ns["metadata"]["namespace"] = "dev"
    assert systems.system_of(other_ns, found) is None
    not_a_system = {"prod/shop": {"metadata": {"name": "shop"}, "spec": {"ingress": {}}}}
    assert systems.system_of(child("web"), not_a_system) is None


def test_the_card_shows_the_clusters_ready_or_waiting_since_when() -> None:
    card = systems.system_row(system(), {}, [])
    assert (card["key"], card["system"], card["phase"]) == ("prod/shop", True, "Pending")
    assert card["message"] == "waiting for c: not found in EKS"
    assert card["clusters"] == [
        {"name": "a", "eks": "a", "ready": True, "message": "", "since": None},
        {"name": "b", "eks": "eks-b", "ready": True, "message": "", "since": None},
        {
            "name": "c",
            "eks": "",
            "ready": False,
            "message": "not found in EKS",
            "since": "2026-01-01T11:58:00+00:00",
        },
    ]
    assert card["paused"] is False
    assert systems.system_row(system(**{"okra.mumo.co/pause": "true"}), {}, [])["paused"]


def test_each_application_shows_its_versions_with_the_weights_aws_shows_per_cluster() -> None:
    web = child("web", currentStepIndex=0, rolloutId="r1", phase="Migrating")
    cfg = applied(a=50, b=25, c=25)
    row = model.cell_row(web, cfg, {})
    card = systems.system_row(system(), {"web": (web, row, cfg)}, [])
    first, second = card["applications"]
    assert (first["name"], first["phase"], first["cell"]) == ("web", "Syncing", "shop-web")
    assert (first["servingVersion"], first["version"], first["weight"]) == ("v1", "v2", 50)
    assert first["clusterWeights"] == [
        {"cluster": "a", "version": "v1", "weight": 50},
        {"cluster": "b", "version": "v2", "weight": 25},
        {"cluster": "c", "version": "v2", "weight": 25},
    ]
    # its Cell's row, as the Cells list computes one: the weights by version, held by the
    # system's pause
    assert first["child"] is row
    assert [(w["version"], w["weight"]) for w in row["weights"]] == [("v1", 50), ("v2", 50)]
    assert row["paused"] is True
    # an application the status does not list yet, with no Cell yet
    assert second == {
        "name": "api",
        "phase": "Pending",
        "message": "",
        "cell": "",
        "version": "",
        "clusters": [],
        "servingVersion": "",
        "serving": [],
        "weight": None,
        "rollbackAt": None,
        "child": None,
        "clusterWeights": [],
        "checks": [],
        "actions": dict.fromkeys(systems.VERBS, "application api has no Cell yet"),
    }


def test_a_cluster_aws_does_not_show_yet_has_no_weight() -> None:
    web = child("web")
    cfg = applied(a=100)
    card = systems.system_row(system(), {"web": (web, model.cell_row(web, cfg, {}), cfg)}, [])
    weights = {w["cluster"]: w["weight"] for w in card["applications"][0]["clusterWeights"]}
    assert weights == {"a": 100, "b": None, "c": None}


def test_each_application_shows_its_checks_last_run_and_failed_tries() -> None:
    checks = [
        check(
            "shop-web-errors-c",
            "errors",
            lastPassed=False,
            lastRunTime="2026-01-01T11:59:30Z",
            analysis={"results": [{"phase": "Failed", "value": "0.5", "time": "x"}]},
        ),
        check("shop-web-errors-b", "errors", lastPassed=True),
        check("shop-web-latency", "latency"),  # one Check for every cluster
        check("shop-api-errors", "errors", app="api"),  # another application's
    ]
    other = check("other-web-errors", "errors")
    other["metadata"]["labels"][SYS] = "other"  # another system's
    card = systems.system_row(system(), {}, [*checks, other])
    web, api = card["applications"]
    assert [(c["check"], c["cluster"], c["passed"], c["failed"]) for c in web["checks"]] == [
        ("errors", "b", True, 0),
        ("errors", "c", False, 2),
        ("latency", "", None, 0),
    ]
    failed = web["checks"][1]
    assert (failed["value"], failed["lastRun"]) == ("0.5", "2026-01-01T11:59:30+00:00")
    assert [c["name"] for c in api["checks"]] == ["shop-api-errors"]


def test_an_application_behind_route53_shows_its_records_weights_per_cluster() -> None:
    """A Route 53 application's config shows records, each named by its target group."""
    web = child("web")
    web["spec"] = {"ingress": {"type": "AWSRoute53"}}
    records = [{"setIdentifier": f"shop-web-{c}", "weight": w} for c, w in (("a", 50), ("b", 50))]
    cfg = {"status": {"applied": {"recordName": "web.example.com", "records": records}}}
    card = systems.system_row(system(), {"web": (web, model.cell_row(web, cfg, {}), cfg)}, [])
    weights = {w["cluster"]: w["weight"] for w in card["applications"][0]["clusterWeights"]}
    assert weights == {"a": 50, "b": 50, "c": None}
