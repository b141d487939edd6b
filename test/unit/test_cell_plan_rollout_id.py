"""The rollout ID (`status.rolloutId`): it names a rollout's AnalysisRuns, Pauses and check
Jobs, its Events and notifications, and what `okra promote`/`okra abort` target. Two Cells
whose rollouts start in the same second with the same steps (the same Cell name in two
namespaces, say) get different IDs; the same Cell planned again from the same observation
(a manager restarted before its status write) gets the same one."""

from __future__ import annotations

import dataclasses

from okra_controllers.api.v1alpha1.cell import Cell
from okra_controllers.cell.observe import observe
from okra_controllers.cell.plan import Observed, plan
from unit.test_cell_plan import DEMO_STEPS, World, spec
from unit.test_cell_plan_argocd import ArgoWorld, background_jobs
from unit.test_cell_plan_checks import with_checks

ANALYSIS_FIRST = {"analysis": {"templates": [{"templateName": "success-rate"}]}}
CHECK = {"name": "smoke", "job": {"template": {"spec": {"image": "busybox"}}}}
FROM_THE_CELL = {"cell_uid"}
"""What `observe` reads of the Cell object itself beyond the world's fields."""


def as_cell(o: Observed, uid: str, namespace: str) -> Observed:
    """`o` as `observe` makes it of a Cell with this uid in this namespace."""
    cell = Cell.model_validate(
        {
            "metadata": {
                "name": o.cell_name,
                "namespace": namespace,
                "uid": uid,
                "generation": o.generation,
            },
            "spec": o.spec.model_dump(by_alias=True, exclude_none=True, mode="json"),
        }
    )
    seen = observe(cell, [], None, None, [], [], o.now)
    kept = {
        f.name: getattr(o, f.name) for f in dataclasses.fields(o) if f.name not in FROM_THE_CELL
    }
    return dataclasses.replace(seen, **kept)


def started(o: Observed, uid: str, namespace: str) -> tuple[str, list[str]]:
    """The rollout ID the plan starts from `o` for that Cell, and the names it creates."""
    p = plan(as_cell(o, uid, namespace))
    assert p.status.rollout_id is not None
    assert p.status.rollout_id != o.status.rollout_id, "no rollout started"
    names = [r.name for r in p.create_runs] + [j.name for j in p.create_jobs]
    return p.status.rollout_id, names


def assert_unique_per_cell(o: Observed) -> None:
    a, names_a = started(o, "3f1c0a9e-0000-4000-8000-000000000001", "team-a")
    b, names_b = started(o, "3f1c0a9e-0000-4000-8000-000000000002", "team-b")
    assert a != b, "two Cells' rollouts started in the same second share a rollout ID"
    assert not set(names_a) & set(names_b)
    again, _ = started(o, "3f1c0a9e-0000-4000-8000-000000000001", "team-a")
    assert again == a, "the same observation of the same Cell must give the same ID"


def test_a_canary_rollout_id_is_unique_per_cell() -> None:
    w = World(spec([ANALYSIS_FIRST, *DEMO_STEPS]))
    w.add_tg("a-v1", "v1")
    w.run(5)
    assert (w.status.stable_version, w.status.health) == ("v1", "Healthy")
    w.add_tg("a-v2", "v2")
    assert_unique_per_cell(w.observed())


def test_a_first_rollout_with_checks_has_a_rollout_id_unique_per_cell() -> None:
    w = World(with_checks([], ["run-test"], []))
    w.add_tg("a-v1", "v1")
    assert_unique_per_cell(w.observed())


def test_a_cell_without_a_load_balancer_has_a_rollout_id_unique_per_cell() -> None:
    w = ArgoWorld(background_jobs(postchecks=[CHECK]))
    w.add_cluster("c1-v1", "v1")
    assert_unique_per_cell(w.observed())
