"""The progress deadline in the Cell plan (Argo Rollouts' `progressDeadlineSeconds` and
`progressDeadlineAbort`), driven through test_cell_plan's simulated world: what counts as
no progress, what does not (pauses waiting for the user), the report, the abort."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.cell.plan import Plan
from unit.test_cell_plan import ANALYSIS, World, spec


class StuckAws(World):
    """AWS never shows a written weight while `stuck` (the config stays unsynced)."""

    stuck = False

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "synced" and self.stuck:
            value = False
        super().__setattr__(name, value)


def rolled_out(steps: list[Any], **kw: Any) -> StuckAws:
    w = StuckAws(spec(steps, **kw))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    return w


def condition(w: World, type_: str = "Progressing") -> Any:
    return next(c for c in w.status.conditions or [] if c.type == type_)


def deadline_events(w: World) -> list[str]:
    return [
        e.message for p in w.history for e in p.events if e.reason == "ProgressDeadlineExceeded"
    ]


def test_a_weight_aws_never_shows_is_reported_after_the_deadline() -> None:
    w = rolled_out([{"setWeight": 20}, ANALYSIS], progressDeadlineSeconds=10)
    w.stuck = True
    w.tick()  # the canary starts: 20% written, and AWS never shows it
    for _ in range(9):
        p = w.tick()
        assert condition(w).status == "True"
        assert p.requeue_after is not None
    for _ in range(5):
        w.tick()
    cond = condition(w)
    assert (cond.status, cond.reason) == ("False", "ProgressDeadlineExceeded")
    assert "progressDeadlineSeconds (10s)" in cond.message
    assert "canary v2 at 20%" in cond.message
    assert len(deadline_events(w)) == 1  # one Event, however long it stays stuck
    assert w.status.health == "Progressing"  # reported, not aborted
    assert "v2" not in w.blocked
    # AWS catches up: progress again, the condition clears.
    w.stuck = False
    w.run(20)
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    assert condition(w).status == "False"  # Healthy: not progressing
    assert condition(w).reason == "Healthy"


def test_each_stall_is_reported_once_and_a_second_stall_after_progress_again() -> None:
    """As Argo Rollouts: the deadline is per stall. A weight AWS is slow to show (a loaded
    machine) past the deadline is one report; once it shows, the step moves on and the
    clock restarts, and the analysis that then never ends is a second one (its own
    `since`). Each is said once however many reconciles follow."""
    w = rolled_out([{"setWeight": 20}, ANALYSIS], progressDeadlineSeconds=5)
    w.outcome = lambda name: "Running"  # the analysis never finishes
    w.stuck = True
    w.run(12)  # step 1's weight is not shown by AWS for 12 s
    first = deadline_events(w)
    assert len(first) == 1, first
    assert "(step 1/2)" in first[0]
    w.stuck = False
    w.run(3)  # AWS shows it: the analysis step starts, the condition clears
    assert condition(w).status == "True"
    w.run(20)
    events = deadline_events(w)
    assert len(events) == 2, events
    assert "(step 2/2)" in events[1]
    assert events[0].split(",")[0] != events[1].split(",")[0]  # "no progress since <t>"


def test_an_analysis_running_past_the_deadline_aborts_when_asked() -> None:
    w = rolled_out(
        [{"setWeight": 20}, ANALYSIS], progressDeadlineSeconds=5, progressDeadlineAbort=True
    )
    w.outcome = lambda name: "Running"  # never finishes
    w.run(15)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert "progressDeadlineSeconds (5s)" in w.blocked["v2"]
    assert w.status.health == "Degraded"
    assert w.status.last_progress_time is None
    assert len(deadline_events(w)) == 1
    assert any(r.terminate_runs for r in w.history)  # the stuck run is ended


def test_an_indefinite_pause_never_exceeds_the_deadline() -> None:
    w = rolled_out([{"setWeight": 20}, {"pause": {}}], progressDeadlineSeconds=2)
    w.run(30)
    assert w.status.health == "Paused"
    assert w.status.last_progress_time is None
    assert deadline_events(w) == []
    # Promoted after a long wait: the clock starts again from there.
    w.promote = f"{w.status.rollout_id}/1"
    w.run(10)
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    assert deadline_events(w) == []


def test_without_a_deadline_nothing_is_reported() -> None:
    w = rolled_out([{"setWeight": 20}, ANALYSIS])
    w.outcome = lambda name: "Running"
    w.run(50)
    assert deadline_events(w) == []
    assert all(p.requeue_after is None for p in w.history)


def test_a_health_gate_holding_counts() -> None:
    w = rolled_out([{"setWeight": 20}], progressDeadlineSeconds=5)
    w.unhealthy = {"a-v2"}
    w.run(10)
    cond = condition(w)
    assert cond.reason == "ProgressDeadlineExceeded"
    assert "waiting for a healthy target in a-v2" in cond.message
    assert len(deadline_events(w)) == 1


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(1, 20), ticks=st.integers(1, 40))
def test_reported_exactly_when_the_clock_passes_the_limit(limit: int, ticks: int) -> None:
    w = rolled_out([{"setWeight": 20}, ANALYSIS], progressDeadlineSeconds=limit)
    w.outcome = lambda name: "Running"
    w.run(ticks)
    last: Plan = w.history[-1]
    since = last.status.last_progress_time
    assert since is not None
    exceeded = (w.now - datetime.timedelta(seconds=1) - since).total_seconds() >= limit
    assert (condition(w).reason == "ProgressDeadlineExceeded") == exceeded
    assert len(deadline_events(w)) == (1 if exceeded else 0)
