"""A run's field references are read from its Cell once, when the run is created (as Argo
Rollouts reads them from its Rollout): a completed rollout clears `status.canaryVersion`,
and a background run still measuring then must not read the cleared field (it ended
`Error: Unable to resolve metric arguments` beside a Healthy Cell on a busy machine)."""

from __future__ import annotations

from typing import Any

from okra_controllers.analysis.args import pinned_field_refs
from okra_controllers.api.v1alpha1.analysis import Argument, FieldRef, SecretKeyRef, ValueFrom
from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.cell.act import as_planned
from okra_controllers.cell.plan import Plan


def field(name: str, path: str) -> Argument:
    return Argument(name=name, value_from=ValueFrom(field_ref=FieldRef(field_path=path)))


CELL: dict[str, Any] = {
    "metadata": {"name": "web", "labels": {"app": "shop"}},
    "spec": {"version": "v2"},
    "status": {"canaryVersion": "v2", "stableVersion": "v1"},
}


def test_each_field_reference_becomes_its_value_now() -> None:
    args = [
        field("version", "status.canaryVersion"),
        field("app", "metadata.labels['app']"),
        Argument(name="plain", value="x"),
    ]
    assert pinned_field_refs(args, CELL) == [
        Argument(name="version", value="v2"),
        Argument(name="app", value="shop"),
        Argument(name="plain", value="x"),
    ]


def test_a_reference_the_cell_lacks_and_a_secret_are_left_to_the_run() -> None:
    missing = field("zone", "status.nope")
    secret = Argument(
        name="token", value_from=ValueFrom(secret_key_ref=SecretKeyRef(name="s", key="k"))
    )
    assert pinned_field_refs([missing, secret], CELL) == [missing, secret]


def test_the_cell_as_planned_has_the_plans_rollout_fields_and_not_those_it_clears() -> None:
    raw = {**CELL, "status": {**CELL["status"], "health": "Healthy"}}
    planned = Plan(None, RolloutCellStatus(canary_version="v3", stable_version="v2"))
    view = as_planned(raw, planned)
    assert view["status"]["canaryVersion"] == "v3"
    assert view["status"]["stableVersion"] == "v2"
    cleared = as_planned(raw, Plan(None, RolloutCellStatus(stable_version="v2")))
    assert "canaryVersion" not in cleared["status"]
    assert pinned_field_refs([field("v", "status.canaryVersion")], cleared) == [
        field("v", "status.canaryVersion")
    ]
    assert raw["status"]["canaryVersion"] == "v2"  # the Cell read is not changed
