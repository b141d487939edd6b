"""Prechecks and postchecks in the Cell plan (seed 002's lifecycle), through
test_cell_plan's simulated world, where a check Job ends a tick after it is created:
Init → Migrating → Completing → Completed, or Error; one Job per rollout and check; a
success recorded for the same forward config is not run again."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.api.v1alpha1.cell import CellSpec
from unit.test_cell_plan import ANALYSIS, World, spec


def check(name: str) -> dict[str, Any]:
    return {"name": name, "job": {"template": {"spec": {"image": "busybox", "command": ["true"]}}}}


def with_checks(steps: list[Any], pre: list[str], post: list[str], **kw: Any) -> CellSpec:
    return spec(steps, prechecks=[check(n) for n in pre], postchecks=[check(n) for n in post], **kw)


def rolled_out(cell: CellSpec) -> World:
    """v1 rolled out (its own checks run too), then v2 found; what v1's rollout did is
    forgotten (history, Jobs) so tests look at v2's alone."""
    w = World(cell)
    w.add_tg("a-v1", "v1")
    w.run(8)
    assert (w.status.stable_version, w.status.health) == ("v1", "Healthy")
    w.history.clear()
    w.jobs.clear()
    w.add_tg("a-v2", "v2")
    return w


def lifecycles(w: World) -> list[str]:
    """The phases the rollout of v2 went through."""
    seen: list[str] = []
    for p in w.history:
        phase = p.status.phase
        if phase and (not seen or seen[-1] != phase):
            seen.append(phase)
    return seen


def test_the_lifecycle_in_order_with_one_job_per_check() -> None:
    w = rolled_out(with_checks([{"setWeight": 50}, ANALYSIS], ["run-test"], ["smoke"]))
    w.run(30)
    assert lifecycles(w) == ["Init", "Migrating", "Completing", "Completed"]
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    rid = next(p.status.rollout_id for p in w.history if p.status.rollout_id)
    assert sorted(w.jobs) == [f"web-{rid}-post-smoke", f"web-{rid}-prec-run-test"]
    assert len(w.jobs) == 2
    assert {(r.stage, r.name, r.phase) for r in w.status.checks or []} == {
        ("precheck", "run-test", "Succeeded"),
        ("postcheck", "smoke", "Succeeded"),
    }
    # No traffic moved while the precheck ran.
    init = [p for p in w.history if p.status.phase == "Init"]
    assert init
    assert all({f.version for f in p.forward or ()} == {"v1"} for p in init)
    assert "Init: precheck run-test running" in (init[0].status.message or "")
    # The postcheck ran with v2 at 100%.
    completing = [p for p in w.history if p.status.phase == "Completing"]
    assert completing
    assert all({f.version for f in p.forward or ()} == {"v2"} for p in completing)


def test_a_failed_precheck_waits_the_rollback_delay_then_blocks_the_version() -> None:
    """Seed 002's one failure flow: a failed precheck waits as a failed postcheck does,
    then blocks the version before any traffic reaches it."""
    cell = with_checks([{"setWeight": 50}], ["run-test"], [], rollbackDelaySeconds=3)
    w = rolled_out(cell)
    w.job_outcome = lambda name: ("Failed", "BackoffLimitExceeded: exit code 3")
    w.run(20)
    waiting = [
        p
        for p in w.history
        if "Waiting 3 seconds before starting a rollback" in (p.status.message or "")
    ]
    assert len(waiting) == 3  # 1-second ticks
    assert all(p.block is None for p in waiting)
    assert [e.reason for p in waiting for e in p.events] == ["PrecheckFailed"]
    assert all({f.version for f in p.forward or ()} <= {"v1"} for p in w.history)
    assert "v2" in w.blocked
    assert (w.status.health, w.status.phase) == ("Degraded", "Error")
    assert "precheck run-test failed (Job " in (w.status.message or "")
    assert "exit code 3" in (w.status.message or "")
    assert "v2 is blocked" in (w.status.message or "")
    assert len(w.jobs) == 1


def test_a_failed_postcheck_waits_the_rollback_delay_then_rolls_back() -> None:
    w = rolled_out(with_checks([{"setWeight": 50}], [], ["smoke"], rollbackDelaySeconds=8))
    w.job_outcome = lambda name: ("Failed", "exit code 1")
    w.run(20)
    waiting = [
        p
        for p in w.history
        if "smoke failed (Job " in (p.status.message or "")
        and "exit code 1). Waiting 8 seconds before starting a rollback" in (p.status.message or "")
    ]
    assert len(waiting) == 8  # 1-second ticks: at 8 seconds the rollback starts
    assert all({f.version for f in p.forward or ()} == {"v2"} for p in waiting)
    assert all(p.status.phase == "Error" and p.block is None for p in waiting)
    assert [e.reason for p in waiting for e in p.events] == ["PostcheckFailed"]
    assert all(p.requeue_after is not None and p.requeue_after <= 8 for p in waiting)
    started = {p.status.rollback_at for p in waiting}
    assert len(started) == 1  # the time is in the status: a restart waits for the same one
    assert any({f.version for f in p.forward or ()} == {"v2"} for p in w.history)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert "postcheck smoke failed" in (w.status.message or "")
    assert "Rolling back" in (w.status.message or "")
    assert w.status.phase == "Error"


def test_a_success_for_the_same_forward_config_is_not_run_again() -> None:
    w = rolled_out(with_checks([{"setWeight": 50}, {"pause": {}}], ["run-test"], []))
    w.run(10)
    assert w.status.health == "Paused"
    assert len(w.jobs) == 1
    # The steps change: a new rollout of the same version to the same forward config.
    w.spec = with_checks([{"setWeight": 30}, {"pause": {}}], ["run-test"], [])
    w.run(10)
    assert w.status.health == "Paused"
    assert len(w.jobs) == 1  # the precheck's success stands
    assert w.weights() == {"a-v1": 70, "a-v2": 30}


def test_checks_run_in_order_and_a_step_less_update_still_runs_them() -> None:
    w = rolled_out(with_checks([], ["first", "second"], ["after"]))
    order: list[str] = []
    w.job_outcome = lambda name: order.append(name) or ("Succeeded", "")  # type: ignore[func-returns-value]
    w.run(20)
    assert [n.rsplit("-", 1)[1] for n in order] == ["first", "second", "after"]
    assert w.weights() == {"a-v2": 100}
    assert w.status.phase == "Completed"


def test_a_cell_without_checks_has_the_lifecycle_without_init_and_completing() -> None:
    w = rolled_out(spec([{"setWeight": 50}]))
    w.run(10)
    assert lifecycles(w) == ["Migrating", "Completed"]
    assert not w.jobs


@settings(max_examples=50, deadline=None)
@given(
    pre=st.lists(st.sampled_from(["a", "b", "c"]), unique=True, max_size=3),
    post=st.lists(st.sampled_from(["x", "y"]), unique=True, max_size=2),
    failing=st.one_of(st.none(), st.sampled_from(["a", "b", "c", "x", "y"])),
)
def test_any_checks_end_completed_or_error(
    pre: list[str], post: list[str], failing: str | None
) -> None:
    w = rolled_out(with_checks([{"setWeight": 40}], pre, post, rollbackDelaySeconds=10))
    w.job_outcome = lambda name: (
        ("Failed", "exit 1") if failing and name.endswith(f"-{failing}") else ("Succeeded", "")
    )
    w.run(50)
    fails = failing is not None and failing in pre + post
    if fails:
        assert w.status.phase == "Error"
        assert w.weights() == {"a-v1": 100}
        assert "v2" in w.blocked
        if failing in pre:  # the new version never got traffic
            assert all({f.version for f in p.forward or ()} <= {"v1"} for p in w.history)
    else:
        assert (w.status.phase, w.status.health) == ("Completed", "Healthy")
        assert w.weights() == {"a-v2": 100}
    assert len(w.jobs) <= len(pre) + len(post)


def analysis_check(name: str) -> dict[str, Any]:
    return {"name": name, "analysis": {"templates": [{"templateName": "smoke"}]}}


def test_an_analysis_precheck_runs_before_traffic_and_a_failure_blocks() -> None:
    cell = spec([{"setWeight": 50}], prechecks=[analysis_check("smoke")], rollbackDelaySeconds=2)
    w = rolled_out(cell)
    w.outcome = lambda name: "Failed"
    w.run(15)
    assert all({f.version for f in p.forward or ()} <= {"v1"} for p in w.history)
    assert "v2" in w.blocked
    assert "precheck smoke failed (analysis " in (w.status.message or "")
    assert [n for n in w.runs if n.endswith("-prec-smoke")], w.runs
    assert not w.jobs


def test_an_analysis_postcheck_passes_and_the_rollout_completes() -> None:
    cell = spec([{"setWeight": 50}], postchecks=[analysis_check("smoke")])
    w = rolled_out(cell)
    w.run(20)
    assert lifecycles(w) == ["Migrating", "Completing", "Completed"]
    assert w.weights() == {"a-v2": 100}
    assert [r.phase for r in w.status.checks or []] == ["Succeeded"]


def first_lifecycles(w: World) -> list[str]:
    seen: list[str] = []
    for p in w.history:
        if p.status.phase and (not seen or seen[-1] != p.status.phase):
            seen.append(p.status.phase)
    return seen


def test_the_first_rollout_runs_prechecks_before_any_config_and_postchecks_after() -> None:
    w = World(with_checks([{"setWeight": 50}], ["run-test"], ["smoke"]))
    w.add_tg("a-v1", "v1")
    w.run(10)
    assert first_lifecycles(w) == ["Init", "Migrating", "Completing", "Completed"]
    assert (w.status.stable_version, w.status.health) == ("v1", "Healthy")
    init = [p for p in w.history if p.status.phase == "Init"]
    assert all(p.forward is None for p in init)  # no load balancer config before the precheck
    assert "Init: precheck run-test running" in (init[0].status.message or "")
    assert sorted(n.rsplit("-", 1)[1] for n in w.jobs) == ["smoke", "test"]
    assert w.weights() == {"a-v1": 100}


def test_a_first_rollout_whose_precheck_fails_writes_nothing_and_stays_failed() -> None:
    w = World(with_checks([], ["run-test"], [], rollbackDelaySeconds=2))
    w.job_outcome = lambda name: ("Failed", "exit code 2")
    w.add_tg("a-v1", "v1")
    w.run(10)
    assert all(p.forward is None for p in w.history)
    assert "v1" in w.blocked
    assert (w.status.phase, w.status.health) == ("Error", "Degraded")
    assert "precheck run-test failed" in (w.status.message or "")
    assert "nothing serves yet" in (w.status.message or "")


def test_a_first_rollout_whose_postcheck_fails_waits_then_is_blocked_but_keeps_serving() -> None:
    w = World(with_checks([], [], ["smoke"], rollbackDelaySeconds=3))
    w.job_outcome = lambda name: ("Failed", "exit code 1")
    w.add_tg("a-v1", "v1")
    w.run(12)
    messages = [p.status.message or "" for p in w.history]
    assert any("Waiting 3 seconds before starting a rollback" in m for m in messages)
    assert "v1" in w.blocked
    assert "no earlier version to roll back to" in (w.status.message or "")
    assert (w.status.phase, w.weights()) == ("Error", {"a-v1": 100})
    # v2 arrives: a normal rollout (v1, blocked, still serves; v2 replaces it).


def test_failure_policy_rollback_waits_its_delay_after_a_failed_precheck() -> None:
    policy = {"type": "Rollback", "delaySeconds": 5}
    w = rolled_out(with_checks([{"setWeight": 50}], ["run-test"], [], failurePolicy=policy))
    w.job_outcome = lambda name: ("Failed", "exit code 1")
    w.run(20)
    waiting = [
        p
        for p in w.history
        if "Waiting 5 seconds before starting a rollback" in (p.status.message or "")
    ]
    assert len(waiting) == 5
    assert all(p.block is None and p.status.phase == "Error" for p in waiting)
    assert [e.reason for p in waiting for e in p.events] == ["PrecheckFailed"]
    assert all({f.version for f in p.forward or ()} <= {"v1"} for p in w.history)
    assert "v2" in w.blocked
    assert w.weights() == {"a-v1": 100}


def test_failure_policy_stop_leaves_traffic_where_it_is_and_blocks_nothing() -> None:
    policy = {"type": "Stop"}
    w = rolled_out(with_checks([{"setWeight": 50}], [], ["smoke"], failurePolicy=policy))
    w.job_outcome = lambda name: ("Failed", "exit code 1")
    w.run(30)
    assert w.weights() == {"a-v2": 100}
    assert not w.blocked
    assert (w.status.phase, w.status.health) == ("Error", "Degraded")
    assert "failurePolicy Stop" in (w.status.message or "")
    said = [e.reason for p in w.history for e in p.events if e.reason == "PostcheckFailed"]
    assert said == ["PostcheckFailed"]  # said once, not at every look
