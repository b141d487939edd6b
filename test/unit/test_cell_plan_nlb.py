"""The Cell plan for Cells behind an NLB and for the BlueGreen strategy, driven through
the simulated world of test_cell_plan (AWS applies weights a tick later, analyses finish
as scripted): analysis while the new version has no traffic, promote switches at once,
failures keep or return to the old version and block the new one, the health gate before
analysis, weighted canary on an NLB, the seed's key spelling."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.api.v1alpha1.cell import CellSpec
from okra_controllers.cell.plan import Observed, plan, steps_of
from okra_controllers.cell.versions import group_target_groups
from unit.test_cell_plan import ANALYSIS, LABEL, LISTENER, World, canary_weights

NLB_LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/net/tcp/1/2"
PROMOTE: dict[str, Any] = {"promote": {}}


def nlb_spec(
    steps: list[Any] | None = None,
    *,
    strategy: str = "BlueGreen",
    key: str = "awsNetworkLoadBalancer",
    **kw: Any,
) -> CellSpec:
    lb = {"listenerARN": NLB_LISTENER, "targetGroupSelector": {"matchLabels": {"role": "web"}}}
    update: dict[str, Any] = {"type": strategy}
    update["blueGreen" if strategy == "BlueGreen" else "canary"] = {"steps": steps or []}
    return CellSpec.model_validate(
        {
            "ingress": {"type": "AWSNetworkLoadBalancer", key: lb},
            "updateStrategy": update,
            **kw,
        }
    )


def rolled_out(spec: CellSpec, new: tuple[str, ...] = ("a-v2",)) -> World:
    """v1 serving, then the new version's target groups appear."""
    w = World(spec)
    w.add_tg("a-v1", "v1")
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    for name in new:
        w.add_tg(name, "v2")
    return w


def test_blue_green_analyses_without_traffic_then_switches_at_once() -> None:
    w = rolled_out(nlb_spec([ANALYSIS, PROMOTE]), ("a-v2", "b-v2"))
    w.run(30)
    assert canary_weights(w) == [0, 100]  # never in between
    assert w.weights() == {"a-v2": 50, "b-v2": 50}
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    # The analysis ran, and it ran while every byte still went to v1.
    started = next(i for i, p in enumerate(w.history) if p.create_runs)
    assert {f.name for f in w.history[started].forward or ()} == {"a-v1"}
    switched = next(
        i for i, p in enumerate(w.history) if "a-v2" in {f.name for f in p.forward or ()}
    )
    assert switched > started
    reasons = [e.reason for p in w.history for e in p.events]
    assert reasons.count("RolloutCompleted") == 1


def test_blue_green_without_promote_switches_after_its_last_step() -> None:
    w = rolled_out(nlb_spec([ANALYSIS]))
    w.run(20)
    assert canary_weights(w) == [0, 100]
    assert w.weights() == {"a-v2": 100}


def test_failed_analysis_keeps_the_old_version_and_blocks_the_new() -> None:
    w = rolled_out(nlb_spec([ANALYSIS, PROMOTE]))
    w.outcome = lambda name: "Failed"
    w.run(20)
    assert all({f.name for f in p.forward or ()} <= {"a-v1"} for p in w.history)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert w.status.health == "Degraded"
    assert "version v2 failed" in (w.status.message or "")


def test_failure_after_promote_returns_to_the_old_version() -> None:
    steps = [ANALYSIS, PROMOTE, ANALYSIS]
    w = rolled_out(nlb_spec(steps))
    w.outcome = lambda name: "Failed" if name.endswith("step-2") else "Successful"
    w.run(30)
    assert any("a-v2" in {f.name for f in p.forward or ()} for p in w.history)  # promoted
    assert w.weights() == {"a-v1": 100}  # and back
    assert "v2" in w.blocked
    assert w.status.stable_version == "v1"


def test_no_analysis_before_the_new_version_has_a_healthy_target() -> None:
    w = rolled_out(nlb_spec([ANALYSIS, PROMOTE]))
    w.unhealthy = {"a-v2"}
    w.run(10)
    assert not w.runs
    assert w.weights() == {"a-v1": 100}
    assert "waiting for a healthy target in a-v2 before analysing v2" in (w.status.message or "")
    healthy = {c.type: c.status for c in w.status.conditions or []}
    assert healthy["TargetGroupsHealthy"] == "False"
    assert [e.reason for p in w.history for e in p.events].count("TargetGroupUnhealthy") == 1
    w.unhealthy = set()
    w.run(20)
    assert w.weights() == {"a-v2": 100}
    assert {c.type: c.status for c in w.status.conditions or []}["TargetGroupsHealthy"] == "True"


def test_unknown_health_asks_for_a_look_before_analysis() -> None:
    w = rolled_out(nlb_spec([ANALYSIS, PROMOTE]))
    p = plan(
        Observed(
            cell_name="web",
            generation=1,
            spec=w.spec,
            status=w.status,
            grouped=group_target_groups(w.tgs, [LABEL]),
            forward=w.forward,
            synced=True,
            blocked={},
            runs={},
            pauses={},
            promote=None,
            abort=None,
            now=w.now,
        )
    )
    assert p.needs_health == ("arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/a-v2/1",)
    assert not p.create_runs
    assert p.forward is None


def test_weighted_canary_on_an_nlb() -> None:
    w = rolled_out(nlb_spec([{"setWeight": 20}, ANALYSIS, {"setWeight": 50}], strategy="Canary"))
    w.run(30)
    assert canary_weights(w) == [20, 50, 100]
    assert w.weights() == {"a-v2": 100}


def test_an_nlb_forward_has_the_same_limits() -> None:
    w = World(nlb_spec([]))
    for i in range(6):
        w.add_tg(f"t{i}-v1", "v1")
    w.run(2)
    assert w.forward is None
    assert w.status.health == "Degraded"
    assert "an NLB forward action holds at most 5" in (w.status.message or "")


def test_the_seed_spelling_is_read_and_warned_about_once_per_generation() -> None:
    w = rolled_out(nlb_spec([ANALYSIS, PROMOTE], key="awsApplicationLoadBalancer"))
    w.run(20)
    assert w.weights() == {"a-v2": 100}
    warnings = [e for p in w.history for e in p.events if e.reason == "MisplacedListener"]
    assert len(warnings) == 1
    assert "spec.ingress.awsNetworkLoadBalancer" in warnings[0].message
    assert warnings[0].type == "Warning"
    assert any(e.reason == "MisplacedListener" for e in w.history[0].events)  # at once


def test_an_alb_cell_is_never_warned_about_the_key() -> None:
    w = rolled_out(nlb_spec([ANALYSIS], key="awsApplicationLoadBalancer"))
    assert w.spec.ingress is not None
    w.spec = w.spec.model_copy(
        update={"ingress": w.spec.ingress.model_copy(update={"type": "AWSApplicationLoadBalancer"})}
    )
    w.run(5)
    assert not [e for p in w.history[3:] for e in p.events if e.reason == "MisplacedListener"]
    assert LISTENER != NLB_LISTENER


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.sampled_from(["analysis", "promote"]), max_size=5),
    fail_at=st.one_of(st.none(), st.integers(0, 4)),
)
def test_blue_green_only_ever_serves_one_version(steps: list[str], fail_at: int | None) -> None:
    """Whatever the steps and wherever an analysis fails: every forward is 100% one
    version, the rollout ends on v2 (all passed) or on v1 with v2 blocked."""
    spec_steps = [ANALYSIS if s == "analysis" else PROMOTE for s in steps]
    w = rolled_out(nlb_spec(spec_steps))
    w.outcome = lambda name: (
        "Failed" if fail_at is not None and name.endswith(f"step-{fail_at}") else "Successful"
    )
    w.run(40)
    for p in w.history:
        versions = {f.version for f in p.forward or ()}
        assert len(versions) <= 1, p.forward
    failing = fail_at is not None and fail_at < len(steps) and steps[fail_at] == "analysis"
    if failing:
        assert w.weights() == {"a-v1": 100}
        assert "v2" in w.blocked
    else:
        assert w.weights() == {"a-v2": 100}
        assert w.status.health == "Healthy"
    assert [s.set_weight for s in steps_of(w.spec)] == [
        None if s == "analysis" else 100 for s in steps
    ]
