"""`okra get cell` (and the dashboard's steps) for a Cell that a freeze holds between steps:
the step marked current has not begun, and the weights AWS showed are those of the step
before it, said as such."""

from __future__ import annotations

from typing import Any

from okra_controllers.cli.dashboard.model import step_timeline
from okra_controllers.cli.render import render_cell
from okra_controllers.cli.view import select_view
from unit.test_cli_render import NOW, RID, cell, cond, config, lines_with, tg

STEPS: list[dict[str, Any]] = [
    {"setWeight": 10},
    {"setWeight": 20},
    {"setWeight": 40},
    {"pause": {"duration": "5m"}},
    {"analysis": {"templates": [{"templateName": "success-rate"}]}},
]
FREEZE = "freeze holiday (year-end change freeze, by alice) until 2025-03-01T14:00:00Z"


def held(index: int, weight: int, **status: Any) -> dict[str, Any]:
    """The Cell as okra reports it while a freeze holds it before step `index` + 1, the
    canary at `weight` (what the steps before set)."""
    obj = cell(
        {
            "phase": "Migrating",
            "health": "Paused",
            "message": f"canary v2 at {weight}%: step {index + 1} of canary v2 waits: {FREEZE}",
            "stableVersion": "v1",
            "canaryVersion": "v2",
            "canaryWeight": weight,
            "currentStepIndex": index,
            "rolloutId": RID,
            "stepStartedAt": "2025-03-01T11:59:00Z",
            "pausedReason": "Frozen",
            "conditions": [
                cond("Progressing", "True", "Paused"),
                cond("Paused", "True", "Frozen"),
                cond("Frozen", "True", "Held", FREEZE),
            ],
            **status,
        }
    )
    obj["spec"]["updateStrategy"]["canary"] = {"steps": STEPS}
    return obj


def render(obj: dict[str, Any], weights: dict[str, int], read: float = 37) -> str:
    tgs = [tg("web-1-v1", "v1"), tg("web-1-v2", "v2")]
    v = select_view(obj, tgs, [config(weights, applied=weights, read=read)], [], [])
    return render_cell(v.cell, v.target_groups, v.config, v.runs, v.blocklist, NOW)


def test_a_weight_step_held_by_a_freeze_is_not_said_to_be_in_aws() -> None:
    out = render(held(2, 20), {"web-1-v1": 80, "web-1-v2": 20})
    assert f"Canary:   v2  20%  (rollout {RID}, step reached 60s ago)" in out
    current = lines_with(out, "▶")[0]
    assert "3.  setWeight 40 → canary 40%" in current
    assert "AWS showed the weights" not in current  # AWS shows step 2's, not these
    assert current.endswith(
        f"not started, held by {FREEZE}; AWS showed step 2's weights (canary 20%) 37s ago"
    )
    assert [line.split()[:2] for line in lines_with(out, "→ canary")][:3] == [
        ["✓", "1."],
        ["✓", "2."],
        ["▶", "3."],
    ]


def test_a_pause_or_analysis_held_by_a_freeze_has_not_begun() -> None:
    out = render(held(3, 40), {"web-1-v1": 60, "web-1-v2": 40})
    current = lines_with(out, "▶")[0]
    assert "4.  pause 5m" in current
    assert "left" not in current  # its Pause does not exist: nothing counts down
    assert current.endswith(
        f"not started, held by {FREEZE}; AWS showed step 3's weights (canary 40%) 37s ago"
    )
    out = render(held(4, 40), {"web-1-v1": 60, "web-1-v2": 40})
    current = lines_with(out, "▶")[0]
    assert "starting analysis" not in current  # no run is started under a freeze
    assert f"not started, held by {FREEZE}" in current


def test_the_final_100_percent_held_by_a_freeze_is_not_said_to_be_shifting() -> None:
    out = render(held(5, 40), {"web-1-v1": 60, "web-1-v2": 40})
    assert "shifting all traffic" not in out
    assert f"Steps:    5/5 done; the final 100% to v2 waits: held by {FREEZE}" in out


def test_a_weight_step_whose_weights_are_written_still_says_aws_showed_them() -> None:
    """A step under way when the freeze began completes: its weights are the ones written."""
    out = render(
        held(2, 40, pausedReason=None, health="Progressing", message="canary v2 at 40%"),
        {"web-1-v1": 60, "web-1-v2": 40},
    )
    assert lines_with(out, "▶")[0].endswith("AWS showed the weights 37s ago")


def test_a_weight_step_okra_pause_holds_before_is_not_said_to_be_in_aws() -> None:
    paused = held(
        2,
        20,
        pausedReason="PausedByUser",
        message="canary v2 at 20%: paused by okra pause before step 3 (okra promote resumes)",
        conditions=[cond("Paused", "True", "PausedByUser")],
    )
    current = lines_with(render(paused, {"web-1-v1": 80, "web-1-v2": 20}), "▶")[0]
    assert "AWS showed the weights" not in current
    assert current.endswith(
        "not started, held by okra pause (okra promote web resumes); "
        "AWS showed step 2's weights (canary 20%) 37s ago"
    )


def test_the_dashboard_counts_down_no_pause_a_freeze_keeps_from_starting() -> None:
    obj = held(3, 40)
    current = step_timeline(obj, NOW)[3]
    assert current["state"] == "current"
    assert current["note"] == f"not started, held by {FREEZE}"
    assert "until" not in current  # no countdown: its Pause does not exist
