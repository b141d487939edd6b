"""A Cell's rollout record (`status.history`, `cell.history.recorded`): each rollout from
its start to its end, its steps, what okra said and the user actions it saw; bounded; and
unchanged by a reconcile that changes nothing (so an idle Cell is never written for it)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from okra_controllers.actors import ACTOR, ACTOR_ACTION, credit_for
from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus
from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.history import (
    MAX_RECORDED_ANALYSES,
    MAX_RECORDED_EVENTS,
)
from okra_controllers.cell.history import recorded, runs_to_read
from okra_runtime.events import Event

pytestmark = pytest.mark.unit

T0 = datetime.datetime(2026, 12, 4, 2, 51, tzinfo=datetime.UTC)


def at(seconds: int) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def status(**fields: Any) -> RolloutCellStatus:
    return RolloutCellStatus.model_validate(fields)


IDLE = {"stableVersion": "v1", "phase": "Completed", "health": "Healthy"}


def rolling(step: int, weight: int, rid: str = "r1", **more: Any) -> dict[str, Any]:
    return {
        "stableVersion": "v1",
        "canaryVersion": "v2",
        "rolloutId": rid,
        "currentStepIndex": step,
        "canaryWeight": weight,
        "phase": "Migrating",
        **more,
    }


class Walk:
    """The statuses a Cell goes through, each reconcile's history recorded as act does."""

    def __init__(self, first: dict[str, Any]) -> None:
        self.status = status(**first)
        self.annotations: dict[str, str] = {}
        self.pinned: str | None = None
        self.runs: dict[str, dict[str, Any]] = {}  # the AnalysisRuns' statuses, by name
        self.enforced: bool | None = None  # okra's actor policy in force (None: no credit)

    def to(
        self, t: int, fields: dict[str, Any], *events: Event, limit: int = 10, steps: int = 4
    ) -> Any:
        after = status(**{**fields, "history": self.status.history})
        wanted = runs_to_read(self.status, after)
        runs = {
            n: AnalysisRunStatus.model_validate(self.runs[n])
            for n, any_phase in wanted.items()
            if n in self.runs and (any_phase or self.runs[n].get("phase") != "Running")
        }
        credit = None
        if self.enforced is not None:  # as act does
            credit = credit_for(self.annotations, self.enforced, self.status.credited_actor)
        after.history = recorded(
            self.status,
            after,
            events,
            at(t),
            annotations=self.annotations,
            pinned=self.pinned,
            steps=steps,
            limit=limit,
            runs=runs,
            credit=credit,
        )
        after.credited_actor = credit.spent if credit is not None else None
        self.status = after
        return after.history


def dumped(history: Any) -> list[dict[str, Any]]:
    return [r.model_dump(by_alias=True, exclude_none=True, mode="json") for r in history]


def test_a_completed_rollout_from_start_to_end() -> None:
    w = Walk(IDLE)
    assert w.to(0, IDLE) is None  # never rolled out: no record
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.to(60, rolling(1, 20, health="Paused", pausedReason="Pause"))
    w.annotations = {"okra.mumo.co/promote": "r1/1"}
    w.to(300, rolling(2, 50))
    history = w.to(
        400,
        {**IDLE, "stableVersion": "v2"},
        Event("Normal", "RolloutCompleted", "v2 serves 100%"),
    )
    assert dumped(history) == [
        {
            "rolloutId": "r1",
            "from": "v1",
            "to": "v2",
            "trigger": "NewVersion",
            "startedAt": "2026-12-04T02:51:01Z",
            "endedAt": "2026-12-04T02:57:40Z",
            "outcome": "Completed",
            "cause": "v2 serves 100%",
            "steps": [
                {
                    "index": 0,
                    "startedAt": "2026-12-04T02:51:01Z",
                    "endedAt": "2026-12-04T02:52:00Z",
                    "canaryWeight": 20,
                },
                {
                    "index": 1,
                    "startedAt": "2026-12-04T02:52:00Z",
                    "endedAt": "2026-12-04T02:56:00Z",
                    "canaryWeight": 20,
                },
                {
                    "index": 2,
                    "startedAt": "2026-12-04T02:56:00Z",
                    "endedAt": "2026-12-04T02:57:40Z",
                    "canaryWeight": 50,
                },
            ],
            "events": [
                {
                    "time": "2026-12-04T02:51:01Z",
                    "type": "Normal",
                    "reason": "RolloutStarted",
                    "message": "canary v2 from v1",
                },
                {
                    "time": "2026-12-04T02:56:00Z",
                    "type": "Normal",
                    "reason": "Promoted",
                    "message": "okra promote at step 2 (okra.mumo.co/promote=r1/1)",
                },
                {
                    "time": "2026-12-04T02:57:40Z",
                    "type": "Normal",
                    "reason": "RolloutCompleted",
                    "message": "v2 serves 100%",
                },
            ],
        }
    ]


def test_a_reconcile_that_changes_nothing_leaves_the_record_as_it_was() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    before = dumped(w.status.history)
    for t in range(2, 50):
        assert dumped(w.to(t, rolling(0, 20))) == before
    w.to(50, {**IDLE, "stableVersion": "v2"}, Event("Normal", "RolloutCompleted", "v2 serves 100%"))
    ended = dumped(w.status.history)
    for t in range(51, 60):  # and once ended, idle passes (and repeated Events) change nothing
        assert dumped(w.to(t, {**IDLE, "stableVersion": "v2"})) == ended
    assert dumped(w.to(61, rolling(0, 20, rid="r1"))) == ended  # no rollout reopens


def test_a_failed_analysis_rolls_back_with_its_cause() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    cause = "version v2 failed: analysis web-v2-r1-step-1 Failed: p99 +38%; all traffic back to v1"
    (r,) = w.to(
        240,
        {**IDLE, "phase": "Error", "health": "Degraded"},
        Event("Warning", "RolloutFailed", cause),
    )
    assert (r.outcome, r.cause, r.ended_at) == ("RolledBack", cause, at(240))
    assert r.steps[-1].ended_at == at(240)
    assert r.steps[-1].canary_weight == 20
    assert [e.reason for e in r.events] == ["RolloutStarted", "RolloutFailed"]


def test_abort_then_retry_is_two_records_the_second_a_retry() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    said = "rollout of v2 aborted; all traffic on v1"
    (r,) = w.to(30, rolling(0, 0, aborted=True), Event("Warning", "RolloutAborted", said))
    assert (r.outcome, r.cause) == ("Aborted", said)
    assert w.to(31, rolling(0, 0, aborted=True)) == [r]  # held aborted: nothing new
    new, old = w.to(90, rolling(0, 20, rid="r2"), Event("Normal", "RolloutStarted", "again"))
    assert (new.rollout_id, new.trigger, new.outcome) == ("r2", "Retry", None)
    assert old == r


def test_a_newer_version_supersedes_the_rollout_in_progress() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    v3 = {**rolling(0, 20, rid="r2"), "canaryVersion": "v3"}
    new, old = w.to(40, v3, Event("Normal", "RolloutStarted", "canary v3 from v1"))
    assert (old.outcome, old.cause, old.ended_at) == (
        "Superseded",
        "superseded by the rollout of v3",
        at(40),
    )
    assert (new.to_version, new.trigger, new.outcome) == ("v3", "NewVersion", None)


def test_the_trigger_says_a_pin_and_changed_steps() -> None:
    w = Walk(IDLE)
    w.pinned = "v2"
    (r,) = w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    assert r.trigger == "Pin"
    new, _ = w.to(5, rolling(0, 20, rid="r2"))
    assert new.trigger == "StepsChanged"


def test_a_rollout_whose_version_goes_away_is_superseded_with_the_status_message() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    (r,) = w.to(9, {**IDLE, "message": "v1 serves 100%: no canary target group"})
    assert (r.outcome, r.cause) == ("Superseded", "v1 serves 100%: no canary target group")


def test_a_rollout_under_way_before_the_record_began_says_so() -> None:
    w = Walk(rolling(2, 50))
    (r,) = w.to(1, rolling(2, 50))
    assert (r.trigger, r.started_at, r.steps[0].index) == ("Unknown", at(1), 2)


def test_the_users_pause_and_resume_are_recorded() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.to(5, rolling(0, 20, pausedReason="PausedByUser", message="held by okra pause"))
    (r,) = w.to(9, rolling(0, 20))
    assert [(e.reason, e.message) for e in r.events[1:]] == [
        ("PausedByUser", "held by okra pause"),
        ("Resumed", "okra pause's hold removed"),
    ]


def test_a_promote_fully_is_recorded_as_such() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.annotations = {"okra.mumo.co/promote": "r1/full"}
    (r,) = w.to(2, rolling(3, 100))
    assert r.events[-1].message == "okra promote fully (okra.mumo.co/promote=r1/full)"
    assert [s.index for s in r.steps] == [0, 3]


def test_the_record_is_bounded_in_rollouts_and_in_entries() -> None:
    w = Walk(IDLE)
    for n in range(14):
        w.to(10 * n, rolling(0, 20, rid=f"r{n}"), Event("Normal", "RolloutStarted", f"#{n}"))
    history = w.to(500, rolling(0, 20, rid="r13"), limit=3)
    assert [r.rollout_id for r in history] == ["r13", "r12", "r11"]
    for n in range(MAX_RECORDED_EVENTS + 5):
        w.to(600 + n, rolling(0, 20, rid="r13"), Event("Normal", "TrafficConfirmed", f"#{n}"))
    events = w.status.history[0].events  # type: ignore[index]
    assert len(events) == MAX_RECORDED_EVENTS
    assert events[-1].message == f"#{MAX_RECORDED_EVENTS + 4}"
    assert w.to(700, rolling(0, 20, rid="r13"), limit=0) is None


def test_steps_passed_in_one_reconcile_each_began_and_ended_then() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    (r,) = w.to(3, rolling(3, 50))
    assert [(s.index, s.started_at, s.ended_at) for s in r.steps] == [
        (0, at(1), at(3)),
        (1, at(3), at(3)),
        (2, at(3), at(3)),
        (3, at(3), None),
    ]


def test_past_the_last_step_the_rollout_completes_and_runs_no_step() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(2, 50), Event("Normal", "RolloutStarted", "canary v2 from v1"), steps=3)
    (r,) = w.to(5, rolling(3, 100, phase="Completing"), steps=3)
    assert [(s.index, s.ended_at) for s in r.steps] == [(2, at(5))]
    (r,) = w.to(9, {**IDLE, "stableVersion": "v2"}, Event("Normal", "RolloutCompleted", "done"))
    assert [(s.index, s.ended_at) for s in r.steps] == [(2, at(5))]
    assert (r.outcome, r.ended_at) == ("Completed", at(9))


def run(phase: str, *values: str, judged: bool = False, **more: Any) -> dict[str, Any]:
    """An AnalysisRun's status: one metric `latency` with these measurements."""
    metric: dict[str, Any] = {
        "name": "latency",
        "phase": phase,
        "count": len(values),
        "successful": len(values) if phase == "Successful" else 0,
        "failed": 1 if phase == "Failed" else 0,
        "measurements": [
            {"phase": "Successful", "value": v, "finishedAt": at(10 + i).isoformat()}
            for i, v in enumerate(values)
        ],
    }
    if judged:
        metric["judgment"] = {
            "classification": "High",
            "canary": {"count": 30, "median": 138, "p90": 160, "min": 120, "max": 170},
            "baseline": {"count": 30, "median": 100, "p90": 110, "min": 90, "max": 115},
            "effectSize": 0.38,
            "pValue": 0.0001,
        }
    return {
        "phase": phase,
        "startedAt": at(10).isoformat(),
        "metricResults": [metric],
        **(
            {"judgment": {"outcome": "Fail", "score": 41, "pass": 90, "marginal": 75}}
            if judged
            else {}
        ),
        **more,
    }


def test_each_analysis_is_recorded_once_as_it_finished() -> None:
    w = Walk(IDLE)
    runs = {"step-1": "web-r1-step-1"}
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.runs["web-r1-step-1"] = run("Running", "0.1")
    (r,) = w.to(20, rolling(1, 20, analysisRuns=runs))
    assert r.analyses is None  # running: not yet
    w.runs["web-r1-step-1"] = run(
        "Successful", *[f"0.{n}" for n in range(8)], completedAt=at(30).isoformat()
    )
    (r,) = w.to(31, rolling(1, 20, analysisRuns=runs))
    (a,) = r.analyses or []
    assert (a.name, a.at, a.phase, a.completed_at) == (
        "web-r1-step-1",
        "step-1",
        "Successful",
        at(30),
    )
    (m,) = a.metrics
    assert (m.name, m.count, m.successful) == ("latency", 8, 8)
    assert [(x.value, x.time, x.phase) for x in m.measurements] == [
        (f"0.{n}", at(10 + n), "Successful") for n in range(8)
    ]
    before = w.status.model_copy(deep=True)
    (r,) = w.to(32, rolling(1, 20, analysisRuns=runs))
    assert w.status.history == before.history  # recorded once: an idle pass writes nothing
    assert runs_to_read(w.status, w.status) == {}  # and reads no run


def test_a_judged_analysis_that_rolled_back_keeps_its_comparison() -> None:
    w = Walk(IDLE)
    runs = {"step-2": "web-r1-step-2"}
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.to(20, rolling(2, 40, analysisRuns=runs))
    w.runs["web-r1-step-2"] = run("Failed", "138", judged=True, message="score 41 < 75")
    failed = Event("Warning", "RolloutFailed", "analysis web-r1-step-2 Failed: score 41 < 75")
    (r,) = w.to(25, {**IDLE}, failed)  # the rollout ends: its runs cleared from the status
    assert (r.outcome, r.cause) == ("RolledBack", failed.message)
    (a,) = r.analyses or []
    assert (a.phase, a.message) == ("Failed", "score 41 < 75")
    assert a.judgment is not None
    assert (a.judgment.score, a.judgment.outcome) == (41, "Fail")
    j = a.metrics[0].judgment
    assert j is not None
    assert (j.classification, j.effect_size) == ("High", 0.38)
    assert (j.canary.median, j.canary.max, j.baseline.median, j.baseline.min) == (138, 170, 100, 90)


def test_at_the_end_a_running_background_analysis_is_recorded_as_it_stood() -> None:
    w = Walk(IDLE)
    runs = {"background": "web-r1-bg", "step-0": "web-r1-step-0"}
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.runs["web-r1-bg"] = run("Running", "0.1", "0.2")
    w.runs["web-r1-step-0"] = run("Pending")
    w.runs["web-r1-step-0"]["phase"] = ""  # never started
    w.to(20, rolling(0, 20, analysisRuns=runs))
    done = Event("Normal", "RolloutCompleted", "v2 serves 100 %")
    (r,) = w.to(30, {**IDLE, "stableVersion": "v2"}, done)
    assert [
        (a.name, a.phase, [x.value for x in a.metrics[0].measurements]) for a in r.analyses or []
    ] == [("web-r1-bg", "Running", ["0.1", "0.2"])]


def test_a_superseded_rollout_keeps_its_analyses_and_the_record_is_bounded() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    names = {f"step-{i}": f"web-r1-step-{i}" for i in range(MAX_RECORDED_ANALYSES + 2)}
    for i, name in enumerate(names.values()):
        w.runs[name] = run("Successful", str(i), completedAt=at(100 + i).isoformat())
        w.to(100 + i, rolling(i, 20, analysisRuns=dict(list(names.items())[: i + 1])))
    r = w.status.history[0]  # type: ignore[index]
    assert [a.name for a in r.analyses or []] == list(names.values())  # each once, in order
    assert [bool(a.metrics) for a in r.analyses or []] == [False] * 2 + [True] * 10
    assert (r.analyses or [])[0].phase == "Successful"
    before = w.status.model_copy(deep=True)
    w.to(150, rolling(11, 20, analysisRuns=names))
    assert w.status.history == before.history  # nothing recorded twice
    v3 = rolling(0, 20, rid="r2", canaryVersion="v3")
    old, new = w.to(200, v3)[1], w.status.history[0]  # type: ignore[index]
    assert (old.outcome, len(old.analyses or []), new.analyses) == (
        "Superseded",
        MAX_RECORDED_ANALYSES + 2,
        None,
    )


def test_the_measurements_kept_are_shared_by_the_metrics() -> None:
    w = Walk(IDLE)
    runs = {"step-0": "web-r1-step-0"}
    w.to(1, rolling(0, 20, analysisRuns=runs), Event("Normal", "RolloutStarted", "canary v2"))
    one = run("Successful", *[str(n) for n in range(40)])["metricResults"][0]
    many = [{**one, "name": f"m{i}"} for i in range(4)]
    w.runs["web-r1-step-0"] = {**run("Successful"), "metricResults": many}
    (r,) = w.to(2, rolling(0, 20, analysisRuns=runs))
    kept = [[x.value for x in m.measurements] for m in (r.analyses or [])[0].metrics]
    assert kept == [[str(n) for n in range(33, 40)]] * 4  # 30 // 4 each, the newest
    w2 = Walk(IDLE)
    w2.to(1, rolling(0, 20, analysisRuns=runs), Event("Normal", "RolloutStarted", "canary v2"))
    w2.runs["web-r1-step-0"] = {
        **run("Successful"),
        "metricResults": [{**one, "name": f"m{i}"} for i in range(32)],
    }
    (r,) = w2.to(2, rolling(0, 20, analysisRuns=runs))
    assert [len(m.measurements) for m in (r.analyses or [])[0].metrics] == [1] * 32  # at least one
    w3 = Walk(IDLE)
    w3.to(1, rolling(0, 20, analysisRuns=runs), Event("Normal", "RolloutStarted", "canary v2"))
    w3.runs["web-r1-step-0"] = run("Successful", *[str(n) for n in range(40)])
    (r,) = w3.to(2, rolling(0, 20, analysisRuns=runs))
    assert len((r.analyses or [])[0].metrics[0].measurements) == 10  # at most ten


def test_a_freeze_that_held_the_rollout_is_an_interval_of_its_own() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    held = rolling(1, 20, health="Paused", pausedReason="Frozen", message="held by Freeze INC-7")
    w.to(10, held, Event("Normal", "Frozen", "held by Freeze INC-7"))
    (r,) = w.to(20, held)
    assert [(f.started_at, f.ended_at, f.message) for f in r.freezes or []] == [
        (at(10), None, "held by Freeze INC-7")
    ]
    (r,) = w.to(40, rolling(1, 20), Event("Normal", "Unfrozen", "no freeze holds the rollout"))
    assert [(f.started_at, f.ended_at) for f in r.freezes or []] == [(at(10), at(40))]
    w.to(50, held)  # held again, then the rollout ends under it: the hold ends with it
    (r,) = w.to(60, {**IDLE, "stableVersion": "v1"}, Event("Warning", "RolloutAborted", "x"))
    assert [(f.started_at, f.ended_at) for f in r.freezes or []] == [
        (at(10), at(40)),
        (at(50), at(60)),
    ]


def test_a_step_keeps_the_traffic_reading_it_ended_with() -> None:
    w = Walk(IDLE)
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    reading = {
        "step": "r1/0",
        "since": at(2).isoformat(),
        "verdict": "Confirmed",
        "requests": 1200,
        "versions": [
            {"version": "v1", "planned": 80, "observed": 80.4, "requests": 965},
            {"version": "v2", "planned": 20, "observed": 19.6, "requests": 235},
        ],
    }
    w.to(5, rolling(0, 20, traffic=reading))
    stale = {**reading, "step": "r1/1", "verdict": "Waiting"}
    (r,) = w.to(9, rolling(1, 20, traffic=stale))
    first, second = r.steps
    assert first.traffic is not None
    assert (first.traffic.verdict, first.traffic.requests) == ("Confirmed", 1200)
    assert [(v.version, v.observed) for v in first.traffic.versions] == [("v1", 80.4), ("v2", 19.6)]
    assert second.traffic is None  # its reading is of step 1 while it runs: kept when it ends


def acted(user: str, action: str, value: str, token: str = "t1") -> dict[str, str]:
    """The actor annotations okra's CLI writes beside an action."""
    return {ACTOR: user, ACTOR_ACTION: f"{action}={value} {token}"}


def test_a_promote_is_credited_to_the_actor_written_with_it() -> None:
    w = Walk(IDLE)
    w.enforced = True
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.to(60, rolling(1, 20, health="Paused", pausedReason="Pause"))
    w.annotations = {"okra.mumo.co/promote": "r1/1", **acted("alice", "promote", "r1/1")}
    (r,) = w.to(300, rolling(2, 50))
    assert [(e.reason, e.user) for e in r.events] == [
        ("RolloutStarted", None),  # okra's own: no user
        ("Promoted", "alice"),
    ]
    assert dumped([r])[0]["events"][-1]["user"] == "alice"
    assert w.status.credited_actor == "promote=r1/1 t1"


@pytest.mark.parametrize(
    ("annotations", "why"),
    [
        ({}, "hand-written: no actor"),
        ({ACTOR: "alice"}, "no action beside the actor"),
        (acted("alice", "promote", "r1/0"), "the actor was written for another step"),
        (acted("alice", "promote", "r0/1"), "... or another rollout"),
        (acted("alice", "pause", "true"), "... or another action"),
        ({ACTOR: "alice", ACTOR_ACTION: "promote=r1/1"}, "not okra's form (no token)"),
    ],
)
def test_a_promote_without_an_actor_bound_to_it_is_by_unknown(
    annotations: dict[str, str], why: str
) -> None:
    w = Walk(IDLE)
    w.enforced = True
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.to(60, rolling(1, 20, health="Paused", pausedReason="Pause"))
    w.annotations = {"okra.mumo.co/promote": "r1/1", **annotations}
    (r,) = w.to(300, rolling(2, 50))
    assert (r.events[-1].reason, r.events[-1].user) == ("Promoted", "unknown"), why


def test_without_okras_policy_in_force_every_user_action_is_by_unknown() -> None:
    w = Walk(IDLE)
    w.enforced = False
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.annotations = {"okra.mumo.co/promote": "r1/0", **acted("alice", "promote", "r1/0")}
    (r,) = w.to(60, rolling(1, 20))
    assert (r.events[-1].reason, r.events[-1].user) == ("Promoted", "unknown")
    assert w.status.credited_actor is None


def test_an_actor_is_credited_once_never_for_a_later_hand_written_action() -> None:
    w = Walk(IDLE)
    w.enforced = True
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    held = rolling(0, 20, pausedReason="PausedByUser", message="held by okra pause")
    w.annotations = {"okra.mumo.co/pause": "true", **acted("alice", "pause", "true")}
    w.to(5, held)
    w.annotations = acted("alice", "pause", "true")  # the pause annotation removed by hand
    w.to(9, rolling(0, 20))
    w.annotations = {"okra.mumo.co/pause": "true", **acted("alice", "pause", "true")}
    w.to(12, held)  # paused by hand again: alice's actor is the one she wrote at 5
    w.annotations = acted("bob", "resume", "", token="t2")  # okra resume, as bob
    w.to(15, rolling(0, 20))
    w.annotations = {"okra.mumo.co/pause": "true", **acted("alice", "pause", "true", "t3")}
    (r,) = w.to(20, held)  # okra pause again, as alice: a new token
    assert [(e.reason, e.user) for e in r.events[1:]] == [
        ("PausedByUser", "alice"),
        ("Resumed", "unknown"),
        ("PausedByUser", "unknown"),
        ("Resumed", "bob"),
        ("PausedByUser", "alice"),
    ]


def test_abort_retry_and_a_pin_say_who() -> None:
    w = Walk(IDLE)
    w.enforced = True
    w.to(1, rolling(0, 20), Event("Normal", "RolloutStarted", "canary v2 from v1"))
    w.annotations = {"okra.mumo.co/abort": "r1", **acted("alice", "abort", "r1")}
    said = "rollout of v2 aborted; all traffic on v1"
    (r,) = w.to(30, rolling(0, 0, aborted=True), Event("Warning", "RolloutAborted", said))
    assert (r.events[-1].reason, r.events[-1].user) == ("RolloutAborted", "alice")
    w.annotations = acted("bob", "retry", "r1", token="t2")
    new, _ = w.to(90, rolling(0, 20, rid="r2"), Event("Normal", "RolloutStarted", "again"))
    assert (new.trigger, new.started_by) == ("Retry", "bob")
    w.pinned = "v3"
    w.annotations = acted("carol", "version", "v3", token="t3")
    pinned = {**rolling(0, 20, rid="r3"), "canaryVersion": "v3"}
    newest, *_ = w.to(120, pinned, Event("Normal", "RolloutStarted", "canary v3 from v1"))
    assert (newest.trigger, newest.started_by) == ("Pin", "carol")
    again = {**rolling(0, 20, rid="r4"), "canaryVersion": "v4"}
    latest, *_ = w.to(150, again, Event("Normal", "RolloutStarted", "canary v4 from v1"))
    assert (latest.trigger, latest.started_by) == ("NewVersion", None)  # no user starts it
