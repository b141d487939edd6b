"""Freezes in the Cell plan (cell/plan/freeze.py), driven through test_cell_plan's simulated
world: a freeze holds the rollout at its next step boundary (never inside a step), no rollout
begins while one applies, a running analysis finishes and its failure rolls back, abort and
rollbacks proceed, and the rollout resumes where it stopped when the freeze ends."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.cell.plan import Observed, Plan
from okra_controllers.freeze import Applying, Hold
from unit.test_cell_plan import ANALYSIS, DEMO_STEPS, T0, World, spec

UNTIL = T0 + datetime.timedelta(hours=2)
HOLIDAY = Hold((Applying("holiday", "year-end change freeze", "alice", UNTIL),), UNTIL)
SAID = "freeze holiday (year-end change freeze, by alice) until 2026-01-01T02:00:00Z"


@dataclass
class Frozen(World):
    """The world with a freeze that applies while `freeze` is set."""

    freeze: Hold | None = None

    def observed(self) -> Observed:
        return dataclasses.replace(super().observed(), freeze=self.freeze)


def rolled_out(steps: list[Any] | None = None, **kw: Any) -> Frozen:
    w = Frozen(spec(DEMO_STEPS if steps is None else steps, **kw))
    w.add_tg("a-v1", "v1")
    w.run(3)
    assert w.status.stable_version == "v1"
    return w


def events(w: World, reason: str) -> list[str]:
    return [e.message for p in w.history for e in p.events if e.reason == reason]


def frozen_condition(w: World) -> Any:
    return next((c for c in w.status.conditions or [] if c.type == "Frozen"), None)


def writes(p: Plan) -> tuple[int, int, bool]:
    return (len(p.create_runs), len(p.create_jobs), p.create_pause is not None)


def test_no_rollout_begins_while_frozen_and_it_begins_when_the_freeze_ends() -> None:
    w = rolled_out()
    w.freeze = HOLIDAY
    w.add_tg("a-v2", "v2")
    w.run(10)
    assert w.weights() == {"a-v1": 100}
    assert not w.runs
    assert not w.pauses
    assert all(writes(p) == (0, 0, False) for p in w.history[-10:])
    st_ = w.status
    assert (st_.health, st_.paused_reason, st_.rollout_id) == ("Paused", "Frozen", None)
    assert st_.message == f"v1 serves 100%; rollout of v2 waits: {SAID}"
    c = frozen_condition(w)
    assert (c.status, c.reason, c.message) == ("True", "Held", SAID)
    assert events(w, "Frozen") == [st_.message]  # once, when the hold began
    assert w.history[-1].wake_after == pytest.approx((UNTIL - w.now).total_seconds() + 1)
    w.freeze = None
    w.run(40)
    assert (w.status.stable_version, w.weights()) == ("v2", {"a-v2": 100})
    assert len(events(w, "Unfrozen")) == 1
    assert frozen_condition(w).status == "False"
    assert frozen_condition(w).reason == "NotFrozen"


def test_a_freeze_applies_to_a_healthy_cell_without_holding_anything() -> None:
    w = rolled_out()
    w.freeze = HOLIDAY
    w.run(3)
    assert (w.status.health, w.status.paused_reason) == ("Healthy", None)
    assert (frozen_condition(w).status, frozen_condition(w).reason) == ("True", "Applies")
    assert events(w, "Frozen") == []
    # a new target group of the serving version is added (scale out)
    w.add_tg("b-v1", "v1")
    w.run(3)
    assert w.weights() == {"a-v1": 50, "b-v1": 50}


def walk_to(w: Frozen, index: int) -> None:
    """Tick until the rollout is at step `index` (0-based)."""
    for _ in range(60):
        if (w.status.current_step_index or 0) >= index and w.status.rollout_id:
            return
        w.tick()
    raise AssertionError(f"never reached step {index}: {w.status.message}")


def frozen_at_step_1() -> Frozen:
    """v2 walked to its second step, then the holiday freeze, two ticks on."""
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.freeze = HOLIDAY
    w.run(2)
    return w


def test_weight_step_written_completes_then_the_next_step_waits() -> None:
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    while w.weights() != {"a-v1": 80, "a-v2": 20}:
        w.tick()  # step 0, stepWeight 20, written; AWS shows it next tick
    assert not w.synced
    w.freeze = HOLIDAY
    w.run(10)
    # the written weight stays and its step completes; the pause of step 1 is never created
    assert w.weights() == {"a-v1": 80, "a-v2": 20}
    assert w.status.current_step_index == 1
    assert not w.pauses
    assert w.status.message == f"canary v2 at 20%: step 2 of canary v2 waits: {SAID}"
    assert (w.status.health, w.status.paused_reason) == ("Paused", "Frozen")
    w.freeze = None
    w.run(40)
    assert (w.status.stable_version, w.weights()) == ("v2", {"a-v2": 100})


def test_running_pause_runs_out_and_the_analysis_after_it_waits() -> None:
    w = rolled_out([{"stepWeight": 20}, {"pause": {}}, ANALYSIS, {"stepWeight": 50}])
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.run(2)
    assert list(w.pauses.values()) == ["Started"]  # an indefinite pause
    w.freeze = HOLIDAY
    w.promote = f"{w.status.rollout_id}/1"  # okra promote ends the pause under way
    w.run(6)
    assert w.status.current_step_index == 2
    assert not w.runs  # the analysis step has not begun
    assert w.status.paused_reason == "Frozen"
    # okra promote --full under a freeze: the final 100% waits too
    w.promote = f"{w.status.rollout_id}/full"
    w.run(6)
    assert w.weights() == {"a-v1": 80, "a-v2": 20}
    assert "the final 100% of canary v2 waits" in (w.status.message or "")
    w.freeze = None
    w.run(5)
    assert w.weights() == {"a-v2": 100}


def test_analysis_under_way_finishes_and_its_failure_rolls_back_during_the_freeze() -> None:
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    w.outcome = lambda name: "Failed"
    walk_to(w, 2)
    assert list(w.runs.values()) == ["Running"]  # the analysis is under way
    w.freeze = HOLIDAY
    w.run(5)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert w.status.health == "Degraded"
    assert w.status.paused_reason != "Frozen"
    assert frozen_condition(w).status == "True"  # still frozen: only the rollback moved


def test_analysis_under_way_succeeds_and_the_next_step_waits() -> None:
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    w.outcome = lambda name: "Running"
    walk_to(w, 2)
    run = next(iter(w.runs))
    w.freeze = HOLIDAY
    w.run(3)
    w.runs[run] = "Successful"
    w.run(3)
    assert w.status.current_step_index == 3
    assert w.weights() == {"a-v1": 80, "a-v2": 20}  # step 4's 40 % is not written
    assert w.status.analysis_runs == {"step-2": run}  # the verdict is recorded


def test_background_analysis_failure_rolls_back_during_the_freeze() -> None:
    bg = {"templates": [{"templateName": "errors"}], "startingStep": 0}
    w = rolled_out(background=bg)
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.freeze = HOLIDAY
    w.run(2)
    assert w.status.paused_reason == "Frozen"
    bg_run = w.status.analysis_runs["background"]  # type: ignore[index]
    w.runs[bg_run] = "Failed"
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked


def test_abort_and_rollback_proceed_during_the_freeze() -> None:
    w = frozen_at_step_1()
    w.abort = w.status.rollout_id
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    assert w.status.aborted
    # spec.version below the serving one: a rollback, all at once
    w2 = rolled_out()
    w2.add_tg("a-v2", "v2")
    w2.run(40)
    assert w2.status.stable_version == "v2"
    w2.freeze = HOLIDAY
    w2.spec = w2.spec.model_copy(update={"version": "v1"})
    w2.run(3)
    assert w2.weights() == {"a-v1": 100}
    assert w2.status.stable_version == "v1"


def test_first_rollout_and_stepless_update_wait() -> None:
    w = Frozen(spec(DEMO_STEPS))
    w.freeze = HOLIDAY
    w.add_tg("a-v1", "v1")
    w.run(5)
    assert w.forward is None
    assert (w.status.phase, w.status.health) == ("Init", "Paused")
    assert w.status.message == f"rollout of v1 waits: {SAID}"
    w.freeze = None
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    u = rolled_out([])
    u.freeze = HOLIDAY
    u.add_tg("a-v2", "v2")
    u.run(5)
    assert u.weights() == {"a-v1": 100}
    assert u.status.message == f"v1 serves 100%; rollout of v2 waits: {SAID}"
    u.freeze = None
    u.run(3)
    assert u.weights() == {"a-v2": 100}


def test_first_rollout_with_checks_waits() -> None:
    check = {"name": "smoke", "job": {"template": {"spec": {"image": "busybox"}}}}
    w = Frozen(spec(DEMO_STEPS, prechecks=[check]))
    w.freeze = HOLIDAY
    w.add_tg("a-v1", "v1")
    w.run(5)
    assert w.forward is None
    assert not w.jobs
    assert w.status.paused_reason == "Frozen"
    w.freeze = None
    w.run(5)
    assert w.weights() == {"a-v1": 100}


@settings(max_examples=150, deadline=None)
@given(
    start=st.integers(0, 30),
    length=st.integers(1, 25),
    fails=st.booleans(),
)
def test_while_frozen_nothing_new_starts_and_the_rollout_ends_as_without_a_freeze(
    start: int, length: int, fails: bool
) -> None:
    """A freeze over any stretch of the demo rollout: while it applies no run, Pause or
    check is created and at most the step under way completes (its weight was written
    before); a failure still rolls back; after it the rollout ends as it would have."""
    w = rolled_out()
    w.outcome = lambda name: "Failed" if fails else "Successful"
    w.add_tg("a-v2", "v2")
    w.run(start)
    w.freeze = HOLIDAY
    index = w.status.current_step_index or 0
    before = dict(w.weights())
    for _ in range(length):
        writing = w.forward
        p = w.tick()
        assert writes(p) == (0, 0, False), (w.now, p.status.message)
        if p.forward is not None and writing is not None and w.status.stable_version != "v1":
            assert sorted(p.forward) == sorted(writing)
        if w.status.paused_reason == "Frozen":
            assert (w.status.current_step_index or 0) <= index + 1
            assert w.weights() == before, (w.now, w.status.message)
        # the weights stay as the freeze found them, unless a failure rolls back
        rolled_back = {"a-v1": 100} if fails else before
        assert w.weights() in (before, rolled_back), (w.now, w.status.message)
    w.freeze = None
    w.run(60)
    if fails:
        assert w.weights() == {"a-v1": 100}
        assert "v2" in w.blocked
    else:
        assert (w.status.stable_version, w.weights()) == ("v2", {"a-v2": 100})
