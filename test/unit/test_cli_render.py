"""The CLI's pure parts: `render_cell` for a steady Cell, a canary paused at a
step with analysis runs, and a failed version that is blocked; the tables of
`get cells` / `get targetgroups`; and what `promote`, `abort`, `retry` and
`set version` write (annotation values, the Pause to cancel, blocklist items)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from okra_controllers.cell.plan import run_name
from okra_controllers.cli.actions import (
    annotation_patch,
    parse_arguments,
    plan_abort,
    plan_promote,
    plan_retry,
    version_patch,
)
from okra_controllers.cli.fanout import Target, refusal, targets
from okra_controllers.cli.kube import CliError
from okra_controllers.cli.render import (
    age,
    describe_step,
    render_cell,
    render_cells,
    render_target_groups,
    step_label,
)
from okra_controllers.cli.view import select_view

NS = "shop"
NOW = datetime.datetime(2025, 3, 1, 12, 0, 0, tzinfo=datetime.UTC)
RID = "3f9a2c1d"
UID = "c0ffee00-0000-0000-0000-000000000001"
ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012"
STEPS: list[dict[str, Any]] = [
    {"stepWeight": 20},
    {"pause": {"duration": "5m"}},
    {"analysis": {"templates": [{"templateName": "success-rate"}]}},
    {"pause": {}},
    {"setWeight": 100},
]


def ts(seconds_ago: float) -> str:
    return (NOW - datetime.timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


def cond(
    type_: str, status: str, reason: str, message: str = "", ago: float = 60
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": ts(ago),
    }


def cell(status: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {
            "name": "web",
            "namespace": NS,
            "uid": UID,
            "generation": 1,
            "resourceVersion": "10",
            "creationTimestamp": ts(3 * 86400),
            **meta,
        },
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": f"{ARN}:listener/app/web/1/2",
                    "targetGroupSelector": {"matchLabels": {"app": "web"}},
                },
            },
            "updateStrategy": {
                "type": "Canary",
                "canary": {
                    "steps": STEPS,
                    "analysis": {
                        "templates": [{"templateName": "error-rate"}],
                        "startingStep": 2,
                    },
                },
            },
        },
    }
    if status is not None:
        obj["status"] = {"observedGeneration": 1, **status}
    return obj


def tg(name: str, version: str, app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSTargetGroup",
        "metadata": {
            "name": name,
            "namespace": NS,
            "resourceVersion": "1",
            "labels": {"app": app, "okra.mumo.co/version": version},
        },
        "spec": {"arn": f"{ARN}:targetgroup/{name}/abc"},
    }


def config(
    weights: dict[str, int],
    synced: bool = True,
    applied: dict[str, int] | None = None,
    read: float | None = 42,
) -> dict[str, Any]:
    forward = [
        {"name": n, "arn": f"{ARN}:targetgroup/{n}/abc", "weight": w} for n, w in weights.items()
    ]
    status: dict[str, Any] = {
        "observedGeneration": 2 if synced else 1,
        "lastAppliedTime": ts(12),
        "conditions": [
            cond("Synced", "True", "Synced", "rule forwards as specified")
            if synced
            else cond("Synced", "False", "ThrottledByAWS", "Rate exceeded")
        ],
    }
    if read is not None:
        status["lastReadTime"] = ts(read)
    if applied is not None:
        status["applied"] = {
            "listenerARN": f"{ARN}:listener/app/web/1/2",
            "forwardTargetGroups": [
                {"name": n, "arn": f"{ARN}:targetgroup/{n}/abc", "weight": w}
                for n, w in applied.items()
            ],
        }
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSApplicationLoadBalancerConfig",
        "metadata": {"name": "web", "namespace": NS, "generation": 2, "resourceVersion": "5"},
        "spec": {"listenerARN": f"{ARN}:listener/app/web/1/2", "forwardTargetGroups": forward},
        "status": status,
    }


def run(
    name: str, phase: str, metrics: list[dict[str, Any]], ago: float = 30, background: bool = False
) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {
            "name": name,
            "namespace": NS,
            "resourceVersion": "7",
            "creationTimestamp": ts(ago),
            "labels": {"okra.mumo.co/background": str(background).lower()},
            "ownerReferences": [
                {"apiVersion": "okra.mumo.co/v1alpha1", "kind": "Cell", "name": "web", "uid": UID}
            ],
        },
        "spec": {
            "metrics": [
                {"name": m["name"], "provider": {"web": {"url": "http://x"}}} for m in metrics
            ]
        },
        "status": {"phase": phase, "metricResults": metrics},
    }


def measurement(value: str, phase: str, ago: float) -> dict[str, Any]:
    return {"phase": phase, "value": value, "startedAt": ts(ago + 1), "finishedAt": ts(ago)}


def blocklist(*items: tuple[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "VersionBlocklist",
        "metadata": {"name": "web", "namespace": NS, "resourceVersion": "9"},
        "spec": {"items": [{"version": v, "cause": c, "time": ts(300)} for v, c in items]},
    }


def lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


# -- render_cell -------------------------------------------------------------


STEADY = cell(
    {
        "phase": "Completed",
        "health": "Healthy",
        "message": "v1 serves 100%",
        "stableVersion": "v1",
        "conditions": [
            cond("Progressing", "False", "Healthy", "v1 serves 100%"),
            cond("Healthy", "True", "Healthy", "v1 serves 100%"),
        ],
    }
)


def test_steady_cell_shows_stable_at_100_in_sync_and_no_rollout() -> None:
    tgs = [tg("web-1-v1", "v1"), tg("web-2-v1", "v1"), tg("other", "v9", app="api")]
    view = select_view(STEADY, tgs, [config({"web-1-v1": 50, "web-2-v1": 50})], [], [])
    out = render_cell(view.cell, view.target_groups, view.config, view.runs, view.blocklist, NOW)

    assert "Cell:     web   (namespace shop, age 3d)" in out
    assert "Phase:    Completed (Healthy)  v1 serves 100%" in out
    assert "Stable:   v1  100%" in out
    assert "Canary:   none" in out
    assert (
        "AWSApplicationLoadBalancerConfig web: Synced (AWS showed these weights when read from "
        "AWS 42s ago, applied 12s ago)" in out
    )
    assert lines_with(out, "VERSION")[0].split()[:5] == ["VERSION", "NAME", "WEIGHT", "AWS", "(42s"]
    row = lines_with(out, "web-1-v1")[0].split()
    assert row[:5] == ["v1", "(stable)", "web-1-v1", "50", "✓"]
    assert lines_with(out, "web-2-v1")[0].split()[:3] == ["web-2-v1", "50", "✓"]
    assert "other" not in out  # not selected by the Cell
    assert "Steps:    no rollout in progress (5 steps per rollout)" in out
    assert "✓" not in "".join(lines_with(out, "stepWeight"))
    assert "Analysis runs: none" in out
    assert "Blocked versions: none" in out
    assert lines_with(out, "Healthy  ")[-1].split()[:4] == ["Healthy", "True", "Healthy", "60s"]
    assert "\x1b[" not in out  # no colour unless asked


def test_colour_only_when_asked() -> None:
    view = select_view(STEADY, [tg("web-1-v1", "v1")], [config({"web-1-v1": 100})], [], [])
    out = render_cell(
        view.cell, view.target_groups, view.config, view.runs, view.blocklist, NOW, color=True
    )
    assert "\x1b[32mHealthy\x1b[0m" in out


MID_CANARY = cell(
    {
        "phase": "Migrating",
        "health": "Paused",
        "message": "canary v2 at 20%: paused at step 3",
        "stableVersion": "v1",
        "canaryVersion": "v2",
        "canaryWeight": 20,
        "currentStepIndex": 3,
        "rolloutId": RID,
        "stepStartedAt": ts(40),
        "pausedReason": "Pause",
        "analysisRuns": {
            "step-2": f"web-v2-{RID}-step-2",
            "background": f"web-v2-{RID}-bg",
        },
        "conditions": [cond("Progressing", "True", "Paused"), cond("Paused", "True", "Pause")],
    }
)


def mid_canary_view(synced: bool = True) -> Any:
    tgs = [tg("web-1-v1", "v1"), tg("web-2-v1", "v1"), tg("web-1-v2", "v2")]
    weights = {"web-1-v1": 40, "web-2-v1": 40, "web-1-v2": 20}
    applied = weights if synced else {"web-1-v1": 50, "web-2-v1": 50}
    runs = [
        run(
            f"web-v2-{RID}-step-2",
            "Successful",
            [
                {
                    "name": "success-rate",
                    "phase": "Successful",
                    "count": 4,
                    "measurements": [
                        measurement("0.91", "Successful", 90),
                        measurement("0.97", "Successful", 80),
                        measurement("0.98", "Successful", 70),
                        measurement("0.99", "Successful", 60),
                    ],
                }
            ],
            ago=100,
        ),
        run(
            f"web-v2-{RID}-bg",
            "Running",
            [
                {
                    "name": "error-rate",
                    "phase": "Running",
                    "count": 1,
                    "measurements": [measurement("0.002", "Successful", 5)],
                },
                {"name": "latency", "phase": "Pending"},
            ],
            ago=95,
            background=True,
        ),
    ]
    return select_view(MID_CANARY, tgs, [config(weights, synced=synced, applied=applied)], runs, [])


def test_mid_canary_shows_weights_steps_current_pause_and_runs() -> None:
    v = mid_canary_view()
    out = render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)

    assert "Phase:    Migrating (Paused)  canary v2 at 20%: paused at step 3" in out
    assert "Stable:   v1  80%" in out
    assert f"Canary:   v2  20%  (rollout {RID}, step started 40s ago)" in out
    assert lines_with(out, "web-1-v2")[0].split()[:5] == ["v2", "(canary)", "web-1-v2", "20", "✓"]
    assert "Steps:    4/5" in out
    steps = [line.split(None, 2) for line in out.splitlines() if line[2:3] in ("✓", "▶", "·")]
    assert [(s[0], s[1]) for s in steps] == [
        ("✓", "1."),
        ("✓", "2."),
        ("✓", "3."),
        ("▶", "4."),
        ("·", "5."),
    ]
    assert "stepWeight 20 → canary 20%" in out
    assert "pause 5m" in out
    assert "analysis success-rate" in out
    current = lines_with(out, "▶")[0]
    assert "4.  pause (until promoted)" in current
    assert current.endswith("  paused until promoted (okra promote web)")
    assert "setWeight 100 → canary 100%" in out
    assert f"background analysis error-rate, from step 3: web-v2-{RID}-bg Running" in out
    # Runs, newest first, with what they are for and their latest measurements.
    run_rows = lines_with(out, f"web-v2-{RID}-")
    bg_row = next(r for r in run_rows if r.split()[0] == f"web-v2-{RID}-bg")
    step_row = next(r for r in run_rows if r.split()[0] == f"web-v2-{RID}-step-2")
    assert bg_row.split()[1:3] == ["background", "Running"]
    assert step_row.split()[1:4] == ["step", "3", "Successful"]
    assert out.index(bg_row) < out.index(step_row)
    rate = lines_with(out, "success-rate  ")[0]
    assert "… 0.97 (Successful), 0.98 (Successful), 0.99 (Successful)" in rate
    assert "0.91" not in rate  # only the latest three
    assert "error-rate  Running  0.002 (Successful)" in out
    assert "latency     Pending  no measurement yet" in out


def test_mid_canary_not_yet_applied_shows_what_aws_has() -> None:
    v = mid_canary_view(synced=False)
    out = render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)
    assert "AWSApplicationLoadBalancerConfig web: not synced (ThrottledByAWS: Rate exceeded)" in out
    assert lines_with(out, "web-1-v2")[0].split()[2:5] == ["web-1-v2", "20", "0"]
    assert lines_with(out, "web-1-v1")[0].split()[2:5] == ["web-1-v1", "40", "50"]


def test_timed_pause_counts_down_and_weight_step_waits_for_aws() -> None:
    at_pause = cell({**MID_CANARY["status"], "currentStepIndex": 1, "stepStartedAt": ts(60)})
    v = select_view(at_pause, [tg("web-1-v2", "v2")], [], [], [])
    out = render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)
    assert "Steps:    2/5" in out
    assert lines_with(out, "▶")[0].split()[1:] == ["2.", "pause", "5m", "paused,", "4m", "left"]

    at_weight = cell({**MID_CANARY["status"], "currentStepIndex": 0})
    v = select_view(at_weight, [tg("web-1-v2", "v2")], [config({"web-1-v2": 20}, False)], [], [])
    out = render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)
    assert "waiting for AWS to apply the weights" in lines_with(out, "▶")[0]


def test_inconclusive_and_aborted_say_what_to_do() -> None:
    inconclusive = cell(
        {**MID_CANARY["status"], "currentStepIndex": 2, "pausedReason": "Inconclusive"}
    )
    out = render_cell(inconclusive, [], None, [], None, NOW)
    assert "inconclusive: okra promote web continues, okra abort web rolls back" in out

    aborted = cell(
        {
            **MID_CANARY["status"],
            "aborted": True,
            "canaryWeight": 0,
            "phase": "Error",
            "health": "Degraded",
        }
    )
    out = render_cell(aborted, [], None, [], None, NOW)
    assert "ABORTED: all traffic on v1; okra retry web resumes" in out
    assert "aborted" in lines_with(out, "▶")[0]


FAILED = cell(
    {
        "phase": "Error",
        "health": "Degraded",
        "message": f"version v3 failed: analysis web-v3-{RID}-step-2 Failed; "
        "all traffic back to v2",
        "stableVersion": "v2",
        "conditions": [cond("Degraded", "True", "Degraded", "version v3 failed")],
    }
)


def test_failed_version_is_shown_blocked_with_its_failed_run() -> None:
    tgs = [tg("web-1-v2", "v2"), tg("web-1-v3", "v3"), tg("web-bad", "banana")]
    failed_run = run(
        f"web-v3-{RID}-step-2",
        "Failed",
        [
            {
                "name": "error-rate",
                "phase": "Failed",
                "count": 2,
                "failed": 1,
                "measurements": [
                    measurement("0.01", "Successful", 200),
                    measurement("0.25", "Failed", 190),
                ],
            }
        ],
        ago=300,
    )
    failed_run["status"]["message"] = 'Metric "error-rate" assessed Failed'
    v = select_view(
        FAILED,
        tgs,
        [config({"web-1-v2": 100})],
        [failed_run],
        [blocklist(("v3", f"analysis web-v3-{RID}-step-2 Failed"))],
    )
    out = render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)

    assert "Phase:    Error (Degraded)  version v3 failed" in out
    assert "Stable:   v2  100%" in out
    assert lines_with(out, "web-1-v3")[0].split()[:3] == ["v3", "web-1-v3", "-"]  # not in rule
    assert lines_with(out, "web-bad")[0].split()[:4] == ["banana", "(not", "a", "version)"]
    assert "Steps:    no rollout in progress" in out
    failed_row = lines_with(out, f"web-v3-{RID}-step-2  ")[0].split()
    assert failed_row[1:4] == ["step", "3", "Failed"]
    assert "error-rate  Failed  0.01 (Successful), 0.25 (Failed)" in out
    assert "Blocked versions  (VersionBlocklist web)" in out
    assert lines_with(out, " ago ")[0].split() == [
        "v3",
        "5m",
        "ago",
        "analysis",
        f"web-v3-{RID}-step-2",
        "Failed",
    ]


def test_unreconciled_cell_and_stale_status() -> None:
    fresh = cell(None)
    out = render_cell(fresh, [], None, [], None, NOW)
    assert "Phase:    Pending  not reconciled yet" in out
    assert "none match the selector app=web" in out
    stale = cell({"phase": "Completed", "health": "Healthy", "stableVersion": "v1"}, generation=3)
    out = render_cell(stale, [], None, [], None, NOW)
    assert "status is for generation 1; the spec is at 3" in out


def test_select_view_keeps_only_the_cells_objects() -> None:
    mine = run("mine", "Running", [])
    theirs = run("theirs", "Running", [])
    theirs["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    other_cfg = {**config({"x": 1}), "metadata": {"name": "api", "namespace": NS}}
    v = select_view(
        STEADY, [tg("a", "v1"), tg("b", "v1", app="api")], [other_cfg], [mine, theirs], []
    )
    assert [t["metadata"]["name"] for t in v.target_groups] == ["a"]
    assert [r["metadata"]["name"] for r in v.runs] == ["mine"]
    assert v.config is None
    assert v.document()["cell"]["metadata"]["name"] == "web"


# -- small pieces ------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (5, "5s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 5, "3h"),
        (9 * 3600, "9h"),
        (3 * 86400 + 3600, "3d1h"),
        (30 * 86400, "30d"),
        (800 * 86400, "2y"),
    ],
)
def test_age_reads_like_kubectl(seconds: int, text: str) -> None:
    assert age(NOW - datetime.timedelta(seconds=seconds), NOW) == text


def test_step_descriptions_and_labels() -> None:
    from okra_controllers.api.v1alpha1.strategy import CanaryStep

    assert describe_step(CanaryStep.model_validate({"stepWeight": 20})) == "stepWeight 20"
    assert describe_step(CanaryStep.model_validate({"setWeight": 5})) == "setWeight 5"
    assert describe_step(CanaryStep.model_validate({"pause": {"duration": "5s"}})) == "pause 5s"
    assert describe_step(CanaryStep.model_validate({"pause": {"duration": 30}})) == "pause 30s"
    assert describe_step(CanaryStep.model_validate({"pause": {}})) == "pause (until promoted)"
    analysis = {
        "analysis": {
            "templates": [{"templateName": "a"}, {"templateName": "b", "clusterScope": True}]
        }
    }
    assert describe_step(CanaryStep.model_validate(analysis)) == "analysis a, b (cluster)"
    assert step_label(0, 4) == "1/4"
    assert step_label(4, 4) == "done"
    assert step_label(None, 4) == "-"


def test_cells_table() -> None:
    out = render_cells([FAILED, MID_CANARY], NOW)
    header, failed, mid = out.splitlines()
    head = ["NAME", "PHASE", "HEALTH", "STABLE", "CANARY", "WEIGHT", "STEP", "AGE"]
    assert header.split() == head
    assert failed.split() == ["web", "Error", "Degraded", "v2", "-", "-", "-", "3d"]
    assert mid.split() == ["web", "Migrating", "Paused", "v1", "v2", "20", "4/5", "3d"]
    assert render_cells([], NOW) == "No cells found.\n"


def test_target_groups_table_reads_weights_from_the_cells_config() -> None:
    tgs = [tg("web-1-v1", "v1"), tg("web-1-v2", "v2"), tg("lonely", "v1", app="none")]
    out = render_target_groups(tgs, [STEADY], [config({"web-1-v1": 100})])
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "VERSION", "CELL", "WEIGHT", "ARN"]
    assert rows[1] == ["lonely", "v1", "-", "-", f"{ARN}:targetgroup/lonely/abc"]
    assert rows[2] == ["web-1-v1", "v1", "web", "100", f"{ARN}:targetgroup/web-1-v1/abc"]
    assert rows[3] == ["web-1-v2", "v2", "web", "-", f"{ARN}:targetgroup/web-1-v2/abc"]
    narrow = render_target_groups(tgs[:2], [STEADY], [], show_cell=False)
    assert narrow.splitlines()[0].split() == ["NAME", "VERSION", "WEIGHT", "ARN"]


# -- what the commands write -------------------------------------------------


def test_promote_at_a_pause_cancels_that_pause_and_names_rollout_and_step() -> None:
    p = plan_promote(MID_CANARY)
    assert p.annotation == f"{RID}/3"
    assert p.pause == run_name("web", "v2", RID, "pause-3") == f"web-v2-{RID}-pause-3"
    assert annotation_patch("okra.mumo.co/promote", p.annotation) == {
        "metadata": {"annotations": {"okra.mumo.co/promote": f"{RID}/3"}}
    }


def test_promote_full_skips_everything() -> None:
    p = plan_promote(MID_CANARY, full=True)
    assert p.annotation == f"{RID}/full"
    assert p.pause == f"web-v2-{RID}-pause-3"
    at_analysis = cell({**MID_CANARY["status"], "currentStepIndex": 2, "pausedReason": None})
    p = plan_promote(at_analysis, full=True)
    assert (p.annotation, p.pause) == (f"{RID}/full", None)  # no pause to cancel there


def test_promote_accepts_an_inconclusive_analysis() -> None:
    inconclusive = cell(
        {**MID_CANARY["status"], "currentStepIndex": 2, "pausedReason": "Inconclusive"}
    )
    p = plan_promote(inconclusive)
    assert (p.annotation, p.pause) == (f"{RID}/2", None)


def test_promote_refuses_when_there_is_nothing_to_promote() -> None:
    with pytest.raises(
        CliError, match="cell web has no rollout in progress \\(phase Completed, Healthy"
    ):
        plan_promote(STEADY)
    running = cell({**MID_CANARY["status"], "currentStepIndex": 2, "pausedReason": None})
    with pytest.raises(CliError, match=r"step 3/5 \(analysis success-rate\).*--full"):
        plan_promote(running)
    aborted = cell({**MID_CANARY["status"], "aborted": True})
    with pytest.raises(CliError, match="aborted; okra retry web"):
        plan_promote(aborted)
    annotated = cell(MID_CANARY["status"], annotations={"okra.mumo.co/abort": RID})
    with pytest.raises(CliError, match="aborted"):
        plan_promote(annotated)


def test_abort_names_the_rollout() -> None:
    assert plan_abort(MID_CANARY) == RID
    with pytest.raises(CliError, match="no rollout in progress"):
        plan_abort(FAILED)


def test_retry_unblocks_versions_newer_than_stable_and_removes_abort() -> None:
    bl = blocklist(("v1", "old"), ("v3", "bad"), ("4.0.0", "worse"))
    r = plan_retry(FAILED, bl)  # stable v2
    assert [i["version"] for i in r.unblock] == ["v3", "4.0.0"]
    assert [i["version"] for i in r.keep] == ["v1"]
    assert r.abort is None

    aborted = cell(MID_CANARY["status"], annotations={"okra.mumo.co/abort": RID})
    r = plan_retry(aborted, None)
    assert r.abort == RID
    assert r.unblock == []
    assert annotation_patch("okra.mumo.co/abort", None) == {
        "metadata": {"annotations": {"okra.mumo.co/abort": None}}
    }


def test_retry_of_one_version_matches_spellings() -> None:
    bl = blocklist(("v3", "bad"), ("v4", "worse"))
    r = plan_retry(FAILED, bl, "3.0.0")
    assert [i["version"] for i in r.unblock] == ["v3"]
    assert [i["version"] for i in r.keep] == ["v4"]
    with pytest.raises(CliError, match=r"version v9 is not blocked.*blocked: v3, v4"):
        plan_retry(FAILED, bl, "v9")
    assert plan_retry(STEADY, None).nothing


def test_set_version_patch_and_arguments() -> None:
    assert version_patch("v1.2.3") == {"spec": {"version": "v1.2.3"}}
    assert version_patch(None) == {"spec": {"version": None}}
    with pytest.raises(CliError, match="'latest' is not a version"):
        version_patch("latest")
    args = parse_arguments(["service=web", "q=a=b", "service=api"])
    assert [(a.name, a.value) for a in args] == [("service", "api"), ("q", "a=b")]
    with pytest.raises(CliError, match="expected NAME=VALUE"):
        parse_arguments(["novalue"])


def test_namespace_comes_from_the_kubeconfig_context(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from okra_controllers.cli.kube import default_namespace

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    path = tmp_path / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: x}}]\n"
        "contexts:\n"
        "- {name: prod, context: {cluster: c, user: u, namespace: shop}}\n"
        "- {name: bare, context: {cluster: c, user: u}}\n"
        "current-context: prod\n"
    )
    assert default_namespace(str(path), None) == "shop"
    assert default_namespace(str(path), "bare") == "default"
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert default_namespace(None, None) == "shop"
    assert default_namespace(str(tmp_path / "missing"), None) == "default"


def test_a_version_waiting_for_replicas_is_shown_waiting() -> None:
    waiting = cond("ReplicasReady", "False", "WaitingForReplicas", "waiting for v2: 1 of 2")
    obj = cell(
        {
            "phase": "Completed",
            "health": "Healthy",
            "message": "v1 serves 100%; waiting for v2: 1 of 2 target groups",
            "stableVersion": "v1",
            "conditions": [waiting],
        }
    )
    obj["spec"]["replicas"] = 2
    tgs = [tg("web-1-v1", "v1"), tg("web-2-v1", "v1"), tg("web-1-v2", "v2")]
    view = select_view(obj, tgs, [config({"web-1-v1": 50, "web-2-v1": 50})], [], [])
    out = render_cell(view.cell, view.target_groups, view.config, view.runs, view.blocklist, NOW)
    assert (
        "Phase:    Completed (Healthy)  v1 serves 100%; waiting for v2: 1 of 2 target groups" in out
    )
    assert lines_with(out, "web-1-v2")[0].split()[:7] == [
        "v2",
        "(waiting:",
        "1",
        "of",
        "2",
        "target",
        "groups)",
    ]
    assert lines_with(out, "ReplicasReady")[0].split()[:3] == [
        "ReplicasReady",
        "False",
        "WaitingForReplicas",
    ]


def test_the_marks_say_how_old_the_reading_of_aws_is() -> None:
    """A hand edit in AWS shows in status only at okra's next look: until then the marks
    are a reading of the past, and say how old it is, never that AWS shows it now."""
    tgs = [tg("web-1-v1", "v1"), tg("web-2-v1", "v1")]
    old_reading = config({"web-1-v1": 50, "web-2-v1": 50}, read=53)
    view = select_view(STEADY, tgs, [old_reading], [], [])
    out = render_cell(view.cell, view.target_groups, view.config, view.runs, view.blocklist, NOW)
    assert "AWS shows" not in out
    assert "read from AWS 53s ago" in out
    assert lines_with(out, "VERSION")[0].split()[3:5] == ["AWS", "(53s"]
    assert lines_with(out, "web-1-v1")[0].split()[4] == "✓"

    at_weight = cell({**MID_CANARY["status"], "currentStepIndex": 0})
    v = select_view(at_weight, [tg("web-1-v2", "v2")], [config({"web-1-v2": 20}, read=5)], [], [])
    out = render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)
    assert "AWS showed the weights 5s ago" in lines_with(out, "▶")[0]


def test_a_status_without_its_reading_time_claims_no_age() -> None:
    view = select_view(
        STEADY, [tg("web-1-v1", "v1")], [config({"web-1-v1": 100}, read=None)], [], []
    )
    out = render_cell(view.cell, view.target_groups, view.config, view.runs, view.blocklist, NOW)
    assert "AWS shows" not in out
    assert "read from AWS at a time not recorded" in out
    assert lines_with(out, "VERSION")[0].split()[3:5] == ["AWS", "ARN"]


def test_promote_on_a_system_cell_names_its_applications_cells() -> None:
    system = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "sys", "namespace": "ns"},
        "spec": {
            "clusters": [{"name": "a"}],
            "applications": [{"name": "web", "argocd": {"clusterSecret": {"labels": {"x": "y"}}}}],
        },
        "status": {"applications": [{"name": "web", "cell": "sys-web"}]},
    }
    with pytest.raises(CliError, match=r"cell sys is a system: .*\(sys-web\); name one of them"):
        plan_promote(system)


def _application_cell(system: str, app: str) -> dict[str, Any]:
    labels = {"okra.mumo.co/system": system, "okra.mumo.co/application": app}
    return {"metadata": {"name": f"{system}-{app}", "labels": labels}}


def test_a_system_command_acts_on_its_application_cells_in_spec_order() -> None:
    shop = {
        "metadata": {"name": "shop"},
        "spec": {"clusters": [], "applications": [{"name": "web"}, {"name": "api"}]},
    }
    children = [
        _application_cell("shop", "api"),
        _application_cell("shop", "web"),
        _application_cell("other", "web"),  # another system's: never touched
    ]
    assert targets(shop, children, None) == [Target("web", "shop-web"), Target("api", "shop-api")]
    assert targets(shop, children, "api") == [Target("api", "shop-api")]
    assert targets(shop, children[:1], None) == [Target("api", "shop-api")]
    with pytest.raises(
        CliError,
        match=r"--application db: system shop has no such "
        r"application \(it has: web, api\)",
    ):
        targets(shop, children, "db")
    with pytest.raises(CliError, match="system shop has no Cell for application web yet"):
        targets(shop, children[:1], "web")
    with pytest.raises(CliError, match="system shop has no Cell for any application yet"):
        targets(shop, [], None)


def test_a_system_refuses_what_its_next_apply_would_undo() -> None:
    shop = {
        "metadata": {"name": "shop"},
        "status": {"applications": [{"name": "web", "phase": "Reverted"}, {"name": "api"}]},
    }
    web, api = Target("web", "shop-web"), Target("api", "shop-api")
    said = refusal(shop, "retry", web, held=False)
    assert said is not None
    assert said.startswith("system shop rolls application web back after a failed check")
    assert refusal(shop, "retry", api, held=False) is None
    assert refusal(shop, "abort", web, held=True) is None
    for verb in ("resume", "promote"):
        assert refusal(shop, verb, api, held=True) == (
            "system shop is paused and holds every application: okra resume shop"
        )
        assert refusal(shop, verb, api, held=False) is None
