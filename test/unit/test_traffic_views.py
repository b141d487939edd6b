"""Where a Cell's last traffic reading (`status.traffic`) shows: `okra get cell`, the
dashboard's Cell row, and the `okra_cell_traffic_share` / `okra_cell_traffic_confirmed`
metrics (series gone with the Cell)."""

from __future__ import annotations

from typing import Any

import pytest

from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.cell import traffic
from okra_controllers.cli.actions import plan_promote
from okra_controllers.cli.dashboard.model import cell_row
from okra_controllers.cli.kube import CliError
from okra_controllers.cli.render import render_cell
from okra_runtime.metrics import REGISTRY
from unit.test_cli_render import NOW, RID, cell, tg, ts

DIVERGED: dict[str, Any] = {
    "step": "3f9a2c1d/0",
    "since": ts(150),
    "verdict": "Diverged",
    "message": "AWS shows v2 20 %, traffic shows v2 3 % over 2m (1,204 requests): "
    "off by more than 5 points",
    "windowStart": ts(150),
    "windowEnd": ts(30),
    "requests": 1204,
    "versions": [
        {"version": "v1", "planned": 80, "observed": 97.0, "requests": 1168},
        {"version": "v2", "planned": 20, "observed": 3.0, "requests": 36},
    ],
}
STATUS = {"phase": "Migrating", "stableVersion": "v1", "canaryVersion": "v2", "traffic": DIVERGED}


def test_get_cell_shows_both_splits_and_the_verdict() -> None:
    out = render_cell(
        cell(STATUS), [tg("web-1-v1", "v1"), tg("web-1-v2", "v2")], None, [], None, NOW
    )
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Traffic:"))
    assert lines[head] == "Traffic:  Diverged  (step 1; AWS has shown its weights for 2m30s)"
    assert lines[head + 1].strip() == DIVERGED["message"]
    assert "v1" in lines[head + 2]
    assert "80 %" in lines[head + 2]
    assert "97 %" in lines[head + 2]
    assert "v2" in lines[head + 3]
    assert "20 %" in lines[head + 3]
    assert " 3 %" in lines[head + 3]
    assert "(36 requests)" in lines[head + 3]
    assert lines[head + 4].strip() == "read over 120s, ending 30s ago"


def test_get_cell_without_a_reading_has_no_traffic_section() -> None:
    out = render_cell(cell({"phase": "Completed"}), [], None, [], None, NOW)
    assert "Traffic:" not in out


def test_the_dashboard_row_carries_the_observed_split() -> None:
    row = cell_row(cell(STATUS), None, {})
    assert row["traffic"]["verdict"] == "Diverged"
    assert [(v["version"], v["planned"], v["observed"]) for v in row["traffic"]["versions"]] == [
        ("v1", 80, 97.0),
        ("v2", 20, 3.0),
    ]
    assert cell_row(cell({"phase": "Completed"}), None, {})["traffic"] is None


def sample(name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(name, labels)


def test_the_metrics_follow_the_reading_and_go_with_the_cell() -> None:
    status = CellStatus.model_validate(STATUS)
    traffic.report("shop", "web", status)
    labels = {"namespace": "shop", "cell": "web"}
    assert sample("okra_cell_traffic_share", **labels, version="v2") == 3.0
    assert sample("okra_cell_traffic_share", **labels, version="v1") == 97.0
    assert sample("okra_cell_traffic_confirmed", **labels) == 0
    confirmed = CellStatus.model_validate(
        {
            **STATUS,
            "traffic": {
                **DIVERGED,
                "verdict": "Confirmed",
                "versions": [{"version": "v2", "planned": 100, "observed": 100.0}],
            },
        }
    )
    traffic.report("shop", "web", confirmed)
    assert sample("okra_cell_traffic_confirmed", **labels) == 1
    assert sample("okra_cell_traffic_share", **labels, version="v1") is None  # v1 left
    traffic.report("shop", "web", None)
    assert sample("okra_cell_traffic_share", **labels, version="v2") is None
    assert sample("okra_cell_traffic_confirmed", **labels) is None


def test_okra_promote_at_a_step_the_traffic_holds_accepts_it() -> None:
    held = {**STATUS, "rolloutId": RID, "currentStepIndex": 0}
    p = plan_promote(cell(held))
    assert p.annotation == f"{RID}/0"
    assert p.pause is None
    assert "accepting the traffic at step 1" in p.summary
    assert "traffic shows v2 3 %" in p.summary
    confirmed = {**held, "traffic": {**DIVERGED, "verdict": "Confirmed"}}
    with pytest.raises(CliError, match="nothing to promote"):
        plan_promote(cell(confirmed))
