"""`simulate`: the rollout ahead, from the controller's own plan (what `okra plan` prints)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from okra_controllers.api.v1alpha1.cell import Cell
from okra_controllers.cell.observe import observe
from okra_controllers.cell.plan import plan
from okra_controllers.cell.simulate import simulate

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/web/1/2"
STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "30s"}},
    {"analysis": {"templates": [{"templateName": "rate"}]}},
    {"stepWeight": 30},
    {"pause": {}},
]


def cell(annotations: dict[str, str] | None = None, **spec: Any) -> Cell:
    return Cell.model_validate(
        {
            "metadata": {
                "name": "web",
                "namespace": "ns",
                "uid": "u",
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
                "updateStrategy": {"canary": {"steps": STEPS}},
                **spec,
            },
        }
    )


def tg(name: str, version: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "web", "okra.mumo.co/version": version}},
        "spec": {"arn": f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{name}/1"},
    }


def serving_v1(c: Cell, *tgs: dict[str, Any]) -> Any:
    """The Cell rolled out to v1 (a-v1, b-v1 at 50 each), then `tgs` appear."""
    v1 = [tg("a-v1", "v1"), tg("b-v1", "v1")]
    o = observe(c, v1, None, None, [], [], T0)
    o = dataclasses.replace(o, health={t["spec"]["arn"]: True for t in [*v1, *tgs]})
    p = plan(o)
    assert p.forward is not None
    o = dataclasses.replace(o, status=p.status, forward=p.forward, synced=True)
    p = plan(o)
    assert p.status.health == "Healthy"
    grouped = observe(c, [*v1, *tgs], None, None, [], [], T0).grouped
    return dataclasses.replace(o, status=p.status, grouped=grouped)


def weights(stage_forward: Any) -> dict[str, int]:
    return {f.name: f.weight for f in stage_forward}


def test_every_step_with_its_exact_weights_then_completion() -> None:
    o = serving_v1(cell(), tg("a-v2", "v2"), tg("b-v2", "v2"), tg("c-v2", "v2"))
    sim = simulate(o)
    assert sim.finished
    assert sim.blocked_by is None
    writes = [weights(s.forward) for s in sim.stages if s.forward is not None]
    assert writes == [
        {"a-v1": 40, "b-v1": 40, "a-v2": 6, "b-v2": 6, "c-v2": 8},
        {"a-v1": 25, "b-v1": 25, "a-v2": 16, "b-v2": 16, "c-v2": 18},
        {"a-v2": 33, "b-v2": 33, "c-v2": 34},
    ]
    pauses = [(s.step, s.pause_seconds) for s in sim.stages if s.pause]
    assert pauses == [(1, 30.0), (4, None)]
    runs = [(s.step, r) for s in sim.stages for r in s.runs]
    assert len(runs) == 1
    assert runs[0][0] == 2
    assert runs[0][1].endswith("-step-2")
    reasons = [e.reason for s in sim.stages for e in s.events]
    assert reasons[0] == "RolloutStarted"
    assert reasons[-1] == "RolloutCompleted"
    # The first stage is what the controller does now, from the same plan.
    assert sim.stages[0].forward == plan(o).forward


def test_a_held_rollout_names_its_blocker() -> None:
    paused = serving_v1(cell({"okra.mumo.co/pause": "true"}), tg("a-v2", "v2"))
    sim = simulate(paused)
    assert not sim.finished
    assert sim.blocked_by is not None
    assert "paused by okra pause before step 1" in sim.blocked_by

    unhealthy = serving_v1(cell(), tg("a-v2", "v2"))
    arn = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/a-v2/1"
    sim = simulate(dataclasses.replace(unhealthy, health={**unhealthy.health, arn: False}))
    assert not sim.finished
    assert sim.blocked_by is not None
    assert "healthy target" in sim.blocked_by
    assert [s.forward for s in sim.stages if s.forward is not None] == []

    blocked = dataclasses.replace(serving_v1(cell(), tg("a-v2", "v2")), blocked={"v2": "failed"})
    sim = simulate(blocked)
    assert sim.finished  # v1 stays; nothing to roll out
    assert [s.forward for s in sim.stages if s.forward is not None] == []


def test_waiting_for_replicas_plans_nothing() -> None:
    o = serving_v1(cell(replicas=2), tg("a-v2", "v2"))
    sim = simulate(o)
    assert sim.finished
    assert sim.stages == [] or all(s.forward is None for s in sim.stages)
    assert "waiting for v2: 1 of 2" in (sim.now.status.message or "")
