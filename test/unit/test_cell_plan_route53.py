"""The Cell plan for Cells behind Route 53 weighted records (`ingress.type: AWSRoute53`),
through the simulated world of test_cell_plan: the same engine walks the same steps (the
backend is what differs), Route 53's limits replace the ALB's, and the config's records are
read back as the forward the plan compares with."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from okra_controllers.api.v1alpha1.cell import Cell, CellSpec
from okra_controllers.cell.observe import config_kind, observe
from okra_controllers.cell.plan import plan
from unit.test_cell_plan import World, canary_weights

TG = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{}/1"


def r53_spec(steps: list[Any] | None = None, **kw: Any) -> CellSpec:
    return CellSpec.model_validate(
        {
            "ingress": {
                "type": "AWSRoute53",
                "awsRoute53": {
                    "hostedZoneID": "Z1",
                    "recordName": "web.example.com",
                    "targetGroupSelector": {"matchLabels": {"role": "web"}},
                },
            },
            "updateStrategy": {"type": "Canary", "canary": {"steps": steps or []}},
            **kw,
        }
    )


def test_a_canary_walks_the_same_steps_as_behind_an_alb() -> None:
    w = World(r53_spec([{"setWeight": 20}, {"setWeight": 50}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    w.add_tg("a-v2", "v2")
    w.run(20)
    assert canary_weights(w) == [20, 50, 100]
    assert w.weights() == {"a-v2": 100}
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")


def test_more_than_five_target_groups_is_no_problem_for_route53() -> None:
    """An ALB forward holds 5 target groups; Route 53 holds 100 weighted records."""
    w = World(r53_spec())
    for i in range(7):
        w.add_tg(f"t{i}-v1", "v1")
    w.run(3)
    assert sum(w.weights().values()) == 100
    assert len(w.weights()) == 7
    assert w.status.health == "Healthy"


def cell(spec: CellSpec) -> Cell:
    return Cell.model_validate(
        {
            "metadata": {"name": "web", "namespace": "ns", "generation": 1},
            "spec": spec.model_dump(by_alias=True, exclude_none=True),
        }
    )


def test_the_configs_records_are_the_forward_read_back() -> None:
    tgs = [
        {
            "metadata": {"name": n, "labels": {"role": "web", "okra.mumo.co/version": v}},
            "spec": {"arn": TG.format(n)},
        }
        for n, v in (("a-v1", "v1"), ("a-v2", "v2"))
    ]
    config: dict[str, Any] = {
        "metadata": {"name": "web", "generation": 3},
        "spec": {
            "hostedZoneID": "Z1",
            "recordName": "web.example.com",
            "records": [
                {"setIdentifier": "a-v1", "weight": 80, "targetGroupARN": TG.format("a-v1")},
                {"setIdentifier": "a-v2", "weight": 20, "targetGroupARN": TG.format("a-v2")},
            ],
        },
        "status": {
            "observedGeneration": 3,
            "conditions": [{"type": "Synced", "status": "True", "reason": "Synced"}],
        },
    }
    c = cell(r53_spec())
    assert config_kind(c) == "AWSRoute53RecordSetConfig"
    assert config_kind({"spec": {"ingress": {"type": "AWSRoute53"}}}) == (
        "AWSRoute53RecordSetConfig"
    )
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    o = observe(c, tgs, config, None, [], [], now)
    assert o.synced
    assert [(f.name, f.weight, f.version) for f in o.forward or ()] == [
        ("a-v1", 80, "v1"),
        ("a-v2", 20, "v2"),
    ]
    # Propagating (INSYNC, TTL not yet past): the step is not done.
    config["status"]["conditions"] = [
        {"type": "Synced", "status": "False", "reason": "Propagating", "observedGeneration": 3}
    ]
    config["status"]["conditions"][0]["message"] = "Route 53 is INSYNC; in effect at T"
    o = observe(c, tgs, config, None, [], [], now)
    assert not o.synced
    assert o.config_problem == ""  # waiting, not a problem to fix
    assert o.config_waiting == "Route 53 is INSYNC; in effect at T"
    # A target group attached to no load balancer is a problem the Cell reports.
    config["status"]["conditions"] = [
        {
            "type": "Synced",
            "status": "False",
            "reason": "NoLoadBalancer",
            "message": "spec.records[1].targetGroupARN: ...",
            "observedGeneration": 3,
        }
    ]
    o = observe(c, tgs, config, None, [], [], now)
    assert o.config_problem.startswith("NoLoadBalancer: spec.records[1]")


def test_the_cell_says_when_written_weights_take_effect() -> None:
    """A step's weights written but not yet in effect (the config Propagating): the step
    is not done, and the Cell's message says when they will be."""
    w = World(r53_spec([{"setWeight": 20}, {"pause": {}}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(1)  # the 20 is written, not yet shown
    assert not w.synced
    waiting = "in effect at 2026-01-01T00:01:00Z"
    p = plan(dataclasses.replace(w.observed(), config_waiting=waiting))
    assert p.status.current_step_index == 0
    assert f"weights written, not yet in effect: {waiting}" in (p.status.message or "")
    assert "not yet in effect" not in (plan(w.observed()).status.message or "")


def test_after_a_rollback_the_message_drops_the_note_once_in_effect_and_wakes_for_it() -> None:
    """A failed canary sends everything back to v1; while Route 53 propagates, the Cell says
    when that is in effect and is planned again at that time; after, it says no more of it."""
    w = World(r53_spec([{"setWeight": 20}, {"analysis": {"templates": [{"templateName": "t"}]}}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.outcome = lambda name: "Failed"
    w.add_tg("a-v2", "v2")
    for _ in range(20):
        w.tick()
        if w.status.health == "Degraded":
            break
    assert w.weights() == {"a-v1": 100}
    assert not w.synced  # written, AWS not showing it yet
    effective = w.now + datetime.timedelta(seconds=30)
    waiting = f"Route 53 is INSYNC; in effect at {effective:%H:%M:%SZ}"
    o = dataclasses.replace(w.observed(), config_waiting=waiting, config_effective_at=effective)
    p = plan(o)
    assert f"not yet in effect: {waiting}" in (p.status.message or "")
    assert p.wake_after == 30
    w.status = p.status  # the note as the API server holds it; then the records take effect
    w.run(3)
    assert w.status.health == "Degraded"
    assert "version v2 failed" in (w.status.message or "")
    assert "not yet in effect" not in (w.status.message or ""), w.status.message
