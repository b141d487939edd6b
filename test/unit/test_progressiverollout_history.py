"""A ProgressiveRollout's record (`status.history`, `progressiverollout.history.recorded`): one
record per revision rolled out, its stages and clusters as the status last had them, how it
ended; bounded; unchanged by a reconcile that changes nothing."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from okra_controllers.actors import ACTOR, ACTOR_ACTION, credit_for
from okra_controllers.api.v1alpha1.progressiverollout import ProgressiveRolloutStatus
from okra_controllers.progressiverollout.history import recorded

pytestmark = pytest.mark.unit

T0 = datetime.datetime(2026, 12, 4, 2, 0, tzinfo=datetime.UTC)


def at(seconds: int) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def stage(name: str, phase: str, *clusters: tuple[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "phase": phase,
        "clusters": [{"name": c, "application": f"web-{c}", "phase": ph} for c, ph in clusters],
    }


def rolling(revision: str, started: int, *stages: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "phase": "Progressing",
        "revision": revision,
        "started": at(started).isoformat(),
        "stages": list(stages),
        **more,
    }


class Walk:
    def __init__(self) -> None:
        self.status = ProgressiveRolloutStatus()

    def to(
        self,
        t: int,
        fields: dict[str, Any],
        limit: int = 10,
        annotations: dict[str, str] | None = None,
    ) -> Any:
        after = ProgressiveRolloutStatus.model_validate(
            {**fields, "history": self.status.model_dump(by_alias=True)["history"]}
        )
        credit = None if annotations is None else credit_for(annotations, True, None)
        after.history = recorded(self.status, after, at(t), limit, credit)
        self.status = after
        return after.history


def test_a_revision_from_its_first_stage_to_completed() -> None:
    w = Walk()
    assert w.to(0, {"phase": "Pending"}) is None  # nothing rolled out yet: no record
    w.to(1, rolling("abc", 1, stage("canary", "Progressing", ("a", "Syncing"))))
    (r,) = w.to(60, rolling("abc", 1, stage("canary", "Completed", ("a", "Completed"))))
    assert (r.revision, r.started_at, r.outcome) == ("abc", at(1), None)
    assert [(c.name, c.phase) for c in r.stages[0].clusters or []] == [("a", "Completed")]
    done = rolling("abc", 1, stage("canary", "Completed", ("a", "Completed")))
    (r,) = w.to(90, {**done, "phase": "Completed", "finished": at(88).isoformat(), "message": "ok"})
    assert (r.outcome, r.ended_at, r.message) == ("Completed", at(88), "ok")
    before = w.status.model_copy(deep=True)
    (r,) = w.to(120, {**done, "phase": "Completed", "finished": at(88).isoformat()})
    assert w.status.history == before.history  # ended: the record no longer changes


def test_a_pass_that_changes_nothing_leaves_the_record_as_it_was() -> None:
    w = Walk()
    s = rolling("abc", 1, stage("canary", "Progressing", ("a", "Syncing")))
    w.to(1, s)
    before = w.status.model_copy(deep=True)
    w.to(5, s)
    assert w.status.history == before.history


def test_a_newer_revision_supersedes_the_one_in_progress() -> None:
    w = Walk()
    w.to(1, rolling("abc", 1, stage("canary", "Progressing", ("a", "Syncing"))))
    new, old = w.to(30, rolling("def", 30, stage("canary", "Progressing")))
    assert (old.outcome, old.ended_at, old.message) == (
        "Superseded",
        at(30),
        "superseded by revision def",
    )
    assert [c.phase for c in old.stages[0].clusters or []] == ["Syncing"]  # as it last was
    assert (new.revision, new.started_at, new.outcome) == ("def", at(30), None)


@pytest.mark.parametrize(
    ("phase", "aborted", "outcome"),
    [
        ("Failed", None, "Failed"),
        ("RolledBack", None, "RolledBack"),
        ("RolledBack", True, "Aborted"),
    ],
)
def test_how_a_revision_ended(phase: str, aborted: bool | None, outcome: str) -> None:
    w = Walk()
    w.to(1, rolling("abc", 1, stage("canary", "Progressing", ("a", "Syncing"))))
    if aborted:  # aborted, rolling back: not ended until the rollback is
        (r,) = w.to(
            5, rolling("abc", 1, stage("canary", "Failed"), phase="RollingBack", aborted=True)
        )
        assert r.outcome is None
    end = rolling("abc", 1, stage("canary", "Failed"), phase=phase, message="why", aborted=aborted)
    (r,) = w.to(9, end)
    assert (r.outcome, r.message, r.ended_at) == (outcome, "why", at(9))


def test_resumed_after_it_ended_is_a_new_record_of_the_same_revision() -> None:
    w = Walk()
    w.to(1, rolling("abc", 1, stage("canary", "Progressing")))
    w.to(5, rolling("abc", 1, stage("canary", "Failed"), phase="Failed", aborted=True))
    again, ended = w.to(50, rolling("abc", 1, stage("canary", "Progressing")))
    assert (ended.outcome, again.revision, again.started_at, again.outcome) == (
        "Aborted",
        "abc",
        at(50),
        None,
    )


def test_the_record_is_bounded() -> None:
    w = Walk()
    for i in range(5):
        w.to(i * 10, rolling(f"r{i}", i * 10, stage("canary", "Progressing")))
    history = w.to(60, rolling("r5", 60, stage("canary", "Progressing")), limit=3)
    assert [r.revision for r in history] == ["r5", "r4", "r3"]
    assert w.to(70, rolling("r5", 60, stage("canary", "Progressing")), limit=0) is None


def test_the_requests_acted_on_say_who_made_them() -> None:
    w = Walk()
    going = stage("canary", "Progressing", ("a", "Syncing"))
    w.to(1, rolling("abc", 1, going), annotations={})
    promote = {"okra.mumo.co/promote": "t1", ACTOR: "alice", ACTOR_ACTION: "promote=t1 n1"}
    w.to(5, rolling("abc", 1, going, handled={"promote": "t1"}), annotations=promote)
    assert w.to(6, rolling("abc", 1, going, handled={"promote": "t1"}), annotations=promote)
    by_hand = {**promote, "okra.mumo.co/abort": "t2"}  # alice's actor is for her promote
    (r,) = w.to(
        9, rolling("abc", 1, going, handled={"promote": "t1", "abort": "t2"}), annotations=by_hand
    )
    assert [(a.time, a.action, a.user) for a in r.actions] == [
        (at(5), "promote", "alice"),
        (at(9), "abort", "unknown"),
    ]
