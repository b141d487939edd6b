"""The dashboard's view model: what a Cell's row, a Cell's page, a ProgressiveRollout and the
inventory show, from the objects as the informers hold them; and that the page's files are
package data (the wheel and the image serve them)."""

from __future__ import annotations

import datetime
import fnmatch
import tomllib
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.cli.dashboard import model

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
ARN1 = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/web-a/1"
ARN2 = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/web-b/2"
ARN3 = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/web-c/3"


def cell(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "web", "namespace": "prod", "uid": "u1", "annotations": {}},
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/x/1/2",
                    "targetGroupSelector": {"matchLabels": {"role": "web"}},
                },
            },
            "updateStrategy": {
                "type": "Canary",
                "canary": {
                    "steps": [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]
                },
            },
        },
        "status": {
            "targetGroups": [
                {"name": "web-a", "arn": ARN1, "weight": 80, "version": "v1"},
                {"name": "web-b", "arn": ARN2, "weight": 10, "version": "v2"},
                {"name": "web-c", "arn": ARN3, "weight": 10, "version": "v2"},
            ],
            **status,
        },
    }


def config(applied: dict[str, int], *, synced: bool = True, generation: int = 3) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "prod", "generation": generation},
        "spec": {"forwardTargetGroups": [{"arn": a, "weight": w} for a, w in applied.items()]},
        "status": {
            "observedGeneration": 3,
            "conditions": [{"type": "Synced", "status": "True" if synced else "False"}],
            "applied": {
                "forwardTargetGroups": [{"arn": a, "weight": w} for a, w in applied.items()]
            },
        },
    }


ROLLING = {
    "phase": "Migrating",
    "health": "Paused",
    "stableVersion": "v1",
    "canaryVersion": "v2",
    "currentStepIndex": 1,
    "rolloutId": "r1",
    "stepStartedAt": "2026-01-01T11:59:00Z",
    "analysisRuns": {"step-4": "web-v2-r1-step-4"},
}


def test_a_rolling_cells_row_shows_versions_step_and_the_weights_aws_shows_by_version() -> None:
    row = model.cell_row(cell(**ROLLING), config({ARN1: 80, ARN2: 10, ARN3: 10}), {})
    assert row["key"] == "prod/web"
    assert (row["phase"], row["health"], row["stable"], row["canary"]) == (
        "Migrating",
        "Paused",
        "v1",
        "v2",
    )
    assert (row["step"], row["steps"]) == (2, 4)
    assert row["weights"] == [
        {"version": "v1", "weight": 80, "role": "stable"},
        {"version": "v2", "weight": 20, "role": "canary"},
    ]
    assert row["synced"] is True
    assert row["paused"] is False  # held by its pause step, not by okra pause


def test_a_cell_held_by_okra_pause_is_paused() -> None:
    c = cell(**ROLLING)
    c["metadata"]["annotations"]["okra.mumo.co/pause"] = "true"
    assert model.cell_row(c, None, {})["paused"] is True


def test_the_row_shows_what_aws_applied_not_what_okra_asks_for() -> None:
    cfg = config({ARN1: 80, ARN2: 10, ARN3: 10}, synced=False)
    cfg["spec"]["forwardTargetGroups"] = [{"arn": ARN1, "weight": 50}, {"arn": ARN2, "weight": 50}]
    row = model.cell_row(cell(**ROLLING), cfg, {})
    assert [w["weight"] for w in row["weights"]] == [80, 20]
    assert row["synced"] is False


def test_a_config_of_an_older_generation_is_not_synced() -> None:
    assert model.synced(config({ARN1: 100}, generation=3))
    assert not model.synced(config({ARN1: 100}, generation=4))
    assert not model.synced(None)


def test_before_anything_is_applied_the_row_has_no_weights() -> None:
    row = model.cell_row(cell(), None, {})
    assert row["weights"] == []
    assert row["step"] is None
    assert row["phase"] == "Pending"
    assert row["analysis"] == "-"


def test_route53_records_count_by_the_target_group_they_name() -> None:
    cfg = {"status": {"applied": {"records": [{"setIdentifier": "web-a", "weight": 70}]}}}
    cfg["status"]["applied"]["records"].append({"setIdentifier": "web-b", "weight": 30})
    assert model.aws_weights(cell(**ROLLING), cfg) == {"v1": 70, "v2": 30}


def test_a_target_group_of_unknown_version_counts_under_its_name() -> None:
    arn = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/stray/9"
    assert model.aws_weights(cell(), config({arn: 100})) == {"stray": 100}


@pytest.mark.parametrize(
    ("phases", "shown"),
    [
        ([], "-"),
        (["Successful"], "Successful"),
        (["Successful", "Running"], "Running"),
        (["Running", "Inconclusive"], "Inconclusive"),
        (["Inconclusive", "Failed"], "Failed"),
    ],
)
def test_the_analysis_state_is_the_worst_run_of_the_rollout(phases: list[str], shown: str) -> None:
    names = {f"step-{i}": f"run-{i}" for i in range(len(phases))}
    runs = {f"run-{i}": {"status": {"phase": p}} for i, p in enumerate(phases)}
    assert model.analysis_state(cell(**{**ROLLING, "analysisRuns": names}), runs) == shown


def test_a_run_not_in_the_cache_yet_is_pending() -> None:
    c = cell(**{**ROLLING, "analysisRuns": {"step-1": "new"}})
    assert model.analysis_state(c, {}) == "Pending"


def test_the_timeline_marks_done_current_and_todo_and_the_current_pause() -> None:
    timeline = model.step_timeline(cell(**ROLLING), NOW)
    assert [s["state"] for s in timeline] == ["done", "current", "todo", "todo"]
    assert timeline[0]["text"] == "setWeight 20 → canary 20%"
    assert timeline[1]["note"] == "paused until promoted"


def test_a_timed_pause_says_how_long_is_left_and_until_when() -> None:
    c = cell(**ROLLING)
    c["spec"]["updateStrategy"]["canary"]["steps"][1] = {"pause": {"duration": "5m"}}
    current = model.step_timeline(c, NOW)[1]
    assert current["note"] == "240s left"
    assert current["until"] == "2026-01-01T12:04:00+00:00"


def test_without_a_rollout_every_step_is_to_do() -> None:
    assert {s["state"] for s in model.step_timeline(cell(phase="Completed"), NOW)} == {"todo"}


def test_history_adds_a_point_only_when_the_weights_change_and_keeps_a_bounded_series() -> None:
    h = model.History(limit=3)
    assert h.record("prod/web", {"v1": 100}, NOW)
    assert not h.record("prod/web", {"v1": 100}, NOW)
    assert not h.record("prod/web", None, NOW)
    for w in (90, 80, 70):
        assert h.record("prod/web", {"v1": w, "v2": 100 - w}, NOW)
    assert [p["weights"]["v1"] for p in h.of("prod/web")] == [90, 80, 70]
    h.forget("prod/web")
    assert h.of("prod/web") == []


def test_the_cell_page_has_its_runs_with_measurements_blocklist_conditions_and_events() -> None:
    c = cell(
        **ROLLING,
        conditions=[{"type": "Healthy", "status": "False", "reason": "Paused", "message": "m"}],
    )
    run = {
        "metadata": {
            "name": "web-v2-r1-step-4",
            "namespace": "prod",
            "ownerReferences": [{"uid": "u1"}],
            "creationTimestamp": "2026-01-01T11:58:00Z",
        },
        "spec": {"metrics": [{"name": "error-rate", "successCondition": "result < 0.05"}]},
        "status": {
            "phase": "Running",
            "metricResults": [
                {
                    "name": "error-rate",
                    "phase": "Running",
                    "measurements": [
                        {"phase": "Successful", "value": "0.01", "finishedAt": "2026-01-01T11:59Z"}
                    ],
                }
            ],
        },
    }
    other = {"metadata": {"name": "x", "namespace": "prod", "ownerReferences": [{"uid": "u2"}]}}
    blocklist = {"spec": {"items": [{"version": "v0", "cause": "error-rate failed"}]}}
    event = {
        "regarding": {"kind": "Cell", "namespace": "prod", "name": "web"},
        "type": "Normal",
        "reason": "WeightChanged",
        "note": "v2 at 20%",
        "eventTime": "2026-01-01T11:59:00.000000Z",
    }
    d = model.cell_detail(
        c, config({ARN1: 80, ARN2: 20}), [run, other], blocklist, [event], [], NOW
    )
    assert [r["name"] for r in d["runs"]] == ["web-v2-r1-step-4"]
    assert d["runs"][0]["role"] == "step-4"
    metric = d["runs"][0]["metrics"][0]
    assert metric["successCondition"] == "result < 0.05"
    assert metric["measurements"][0]["value"] == "0.01"
    assert d["blocklist"][0]["version"] == "v0"
    assert d["conditions"][0]["reason"] == "Paused"
    assert d["events"][0]["reason"] == "WeightChanged"
    assert d["desired"] == [
        {"version": "v1", "weight": 80, "role": "stable"},
        {"version": "v2", "weight": 20, "role": "canary"},
    ]
    assert model.regarding(event) == ("Cell", "prod", "web")


def test_a_progressive_rollout_shows_each_stage_with_its_clusters() -> None:
    pr = {
        "metadata": {"name": "apps", "namespace": "argocd"},
        "spec": {
            "sourceRef": {"name": "apps"},
            "stages": [{"name": "canary"}, {"name": "rest", "bakeTime": "5m"}],
        },
        "status": {
            "phase": "Progressing",
            "currentStage": 0,
            "stages": [
                {
                    "name": "canary",
                    "phase": "Syncing",
                    "clusters": [{"name": "c1", "phase": "Syncing"}],
                }
            ],
        },
    }
    row = model.rollout_row(pr)
    assert row["key"] == "argocd/apps"
    assert [(s["name"], s["phase"]) for s in row["stages"]] == [
        ("canary", "Syncing"),
        ("rest", "Pending"),
    ]
    assert row["stages"][0]["clusters"] == [
        {
            "name": "c1",
            "phase": "Syncing",
            "message": "",
            "nextAttempt": None,
            "bakeUntil": None,
        }
    ]
    assert row["stages"][0]["done"] == 0
    assert row["stages"][1]["bakeTime"] == "5m"
    assert row["stages"][1]["clusters"] == []


def test_a_stage_shows_its_gates_analysis_and_webhooks_and_when_a_cluster_moves_on() -> None:
    stage = {
        "name": "canary in EMEA",
        "maxUnavailable": 2,
        "maxClusters": 2,
        "clusters": {
            "selector": {
                "matchLabels": {"area": "emea"},
                "matchExpressions": [
                    {"key": "region", "operator": "In", "values": ["eu-west-1", "eu-central-1"]},
                    {"key": "drained", "operator": "DoesNotExist"},
                ],
            }
        },
        "topologyKey": "region",
        "requeue": {"selector": {"matchLabels": {"drained": "true"}}, "attempts": 5},
        "bakeTime": "1m",
        "analysis": {"templates": [{"templateName": "error-rate"}]},
        "webhooks": [
            {"name": "notify", "type": "PreStage", "url": "https://hooks.example/t0ken"},
            {"name": "smoke", "url": "https://hooks.example/t0ken"},
        ],
    }
    healthy = "2026-01-01T11:59:30Z"
    pr = {
        "metadata": {"name": "apps", "namespace": "argocd"},
        "spec": {"sourceRef": {"name": "apps"}, "stages": [stage], "failurePolicy": "Rollback"},
        "status": {
            "phase": "Progressing",
            "revision": "2" * 40,
            "currentStage": 0,
            "unmanagedClusters": ["lonely"],
            "conditions": [{"type": "Stalled", "status": "True", "message": "no progress"}],
            "stages": [
                {
                    "name": "canary in EMEA",
                    "phase": "Progressing",
                    "analysisRun": "apps-canary-1",
                    "analysisPhase": "Running",
                    "webhooks": [{"name": "notify", "succeeded": True, "statusCode": 200}],
                    "clusters": [
                        {
                            "name": "a",
                            "phase": "Baking",
                            "healthySince": healthy,
                            "message": "baking, 30s left",
                        },
                        {"name": "b", "phase": "Completed", "revision": "2" * 40},
                        {
                            "name": "c",
                            "phase": "Requeued",
                            "attempts": 2,
                            "nextAttempt": "2026-01-01T12:30:00Z",
                        },
                        {
                            "name": "d",
                            "phase": "Baking",
                            "healthySince": healthy,
                            "message": "Degraded/Synced while baking",
                        },
                    ],
                }
            ],
        },
    }
    row = model.rollout_row(pr)
    s = row["stages"][0]
    assert s["gates"] == [
        "clusters area=emea,region in (eu-west-1,eu-central-1),!drained",
        "at most 2 unavailable at once",
        "2 of them",
        "one per region at a time",
        "requeue drained=true: 5 tries, every 30m",
        "bake 1m once healthy",
    ]
    assert (s["analysisTemplates"], s["analysisRun"], s["analysis"]) == (
        ["error-rate"],
        "apps-canary-1",
        "Running",
    )
    assert s["webhooks"] == [
        {
            "name": "notify",
            "type": "PreStage",
            "called": True,
            "succeeded": True,
            "statusCode": 200,
            "message": "",
        },
        {
            "name": "smoke",
            "type": "PostStage",
            "called": False,
            "succeeded": False,
            "statusCode": None,
            "message": "",
        },
    ]
    assert "t0ken" not in str(row)  # a webhook's URL may carry a token: never shown
    a, b, c, d = s["clusters"]
    assert a["bakeUntil"] == "2026-01-01T12:00:30+00:00"
    # okra's countdown in the message goes (the page counts down), any other message stays
    assert (a["message"], d["message"]) == ("", "Degraded/Synced while baking")
    assert b["bakeUntil"] is None
    assert c["nextAttempt"] == "2026-01-01T12:30:00+00:00"
    assert a["nextAttempt"] is None
    assert s["done"] == 1
    assert (row["stalled"], row["unmanaged"], row["failurePolicy"]) == (
        "no progress",
        ["lonely"],
        "Rollback",
    )
    assert model.rollout_row({"spec": {"stages": [{"name": "all"}]}})["stages"][0]["gates"] == [
        "clusters *",
        "at most 1 unavailable at once",
        "100% of them",
    ]


def test_inventory_rows_give_target_groups_by_version_and_cluster_sets_clusters() -> None:
    tg = {
        "metadata": {
            "name": "web-a",
            "namespace": "prod",
            "labels": {"okra.mumo.co/version": "v1", "role": "web"},
        },
        "spec": {"arn": ARN1},
    }
    assert model.target_group_row(tg) == {
        "key": "prod/web-a",
        "namespace": "prod",
        "name": "web-a",
        "version": "v1",
        "arn": ARN1,
        "labels": {"role": "web"},
    }
    cs = {"metadata": {"name": "eks", "namespace": "argocd"}, "status": {"clusters": ["a", "b"]}}
    assert model.cluster_set_row(cs)["clusters"] == ["a", "b"]


def test_diff_sets_what_changed_and_deletes_what_went() -> None:
    old = {"a": {"x": 1}, "b": {"x": 2}}
    new = {"a": {"x": 1}, "b": {"x": 3}, "c": {"x": 4}}
    assert model.diff(old, new) == ({"b": {"x": 3}, "c": {"x": 4}}, [])
    assert model.diff(new, {"a": {"x": 1}}) == ({}, ["b", "c"])


def test_the_pages_files_are_package_data() -> None:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["okra_controllers"]
    root = REPO / "src" / "okra_controllers"
    static = sorted((root / "cli" / "dashboard" / "static").iterdir())
    assert {p.name for p in static} >= {"index.html", "app.js", "style.css"}
    for path in static:
        rel = path.relative_to(root).as_posix()
        assert any(fnmatch.fnmatch(rel, g) for g in globs), f"{rel} is not package data"


def test_the_past_rollouts_are_the_cells_record_with_how_long_each_took() -> None:
    done = {"rolloutId": "a", "to": "v2", "startedAt": "2026-12-04T02:51:00Z"}
    done["endedAt"] = "2026-12-04T02:55:03Z"
    running = {"rolloutId": "b", "to": "v3", "startedAt": "2026-12-04T09:10:00Z"}
    cell = {"status": {"history": [running, done, "not a record"]}}
    assert model.rollout_records(cell) == [{**running, "took": None}, {**done, "took": 243.0}]
    assert model.rollout_records({"status": {}}) == []
    assert model.rollout_records({}) == []


def test_a_progressiverollouts_card_lists_its_past_revisions() -> None:
    record = {
        "revision": "abc",
        "startedAt": "2026-12-04T02:00:00Z",
        "endedAt": "2026-12-04T02:05:00Z",
        "outcome": "RolledBack",
        "message": "rolled back",
        "stages": [{"name": "canary", "phase": "Completed"}, {"name": "eu", "phase": "Failed"}],
    }
    row = model.rollout_row({"metadata": {"name": "web"}, "status": {"history": [record]}})
    assert row["history"] == [
        {
            "revision": "abc",
            "startedAt": "2026-12-04T02:00:00+00:00",
            "endedAt": "2026-12-04T02:05:00+00:00",
            "outcome": "RolledBack",
            "message": "rolled back",
            "done": 1,
            "stages": 2,
        }
    ]
    assert model.rollout_row({"metadata": {"name": "web"}})["history"] == []
