"""with_condition: one rule for every controller's conditions (Kubernetes' API conventions):
the transition time moves only when the status does; a condition keeps its place."""

from __future__ import annotations

import datetime

from okra_controllers.api.v1alpha1.common import Condition, with_condition

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
T1 = T0 + datetime.timedelta(minutes=5)


def cond(type_: str, status: str, at: datetime.datetime = T0, reason: str = "R") -> Condition:
    return Condition(
        type=type_,
        status=status,  # type: ignore[arg-type]
        reason=reason,
        message="m",
        last_transition_time=at,
        observed_generation=1,
    )


def test_a_new_condition_is_added_last_at_now() -> None:
    got = with_condition([cond("A", "True")], "B", False, "Why", "says", T1, 2)
    assert [c.type for c in got] == ["A", "B"]
    assert got[1].model_dump() == {
        "type": "B",
        "status": "False",
        "reason": "Why",
        "message": "says",
        "last_transition_time": T1,
        "observed_generation": 2,
    }
    assert with_condition(None, "B", True, "R", "", T1, None)[0].last_transition_time == T1


def test_the_same_status_keeps_its_transition_time_and_takes_the_rest() -> None:
    got = with_condition([cond("A", "True"), cond("B", "True")], "A", True, "Other", "new", T1, 3)
    assert [c.type for c in got] == ["A", "B"]
    assert (got[0].last_transition_time, got[0].reason, got[0].message) == (T0, "Other", "new")
    assert got[0].observed_generation == 3
    assert got[1] == cond("B", "True")


def test_a_flipped_status_moves_the_transition_time() -> None:
    got = with_condition([cond("A", "True"), cond("B", "False")], "B", True, "R", "m", T1, 1)
    assert [(c.type, c.status, c.last_transition_time) for c in got] == [
        ("A", "True", T0),
        ("B", "True", T1),
    ]
    unknown = with_condition([cond("A", "Unknown")], "A", False, "R", "m", T1, 1)
    assert unknown[0].last_transition_time == T1


def test_the_input_is_not_changed() -> None:
    before = [cond("A", "True")]
    with_condition(before, "A", False, "R", "m", T1, 1)
    assert before == [cond("A", "True")]
