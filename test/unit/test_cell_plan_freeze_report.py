"""What a Cell held by a freeze says about itself (cell/plan/freeze.py, status.py): the
phase of a Cell whose rollout a freeze keeps from beginning, and that a Cell which stops
being held (an abort, a failure) says `pausedReason: Frozen` no longer, during the freeze
and after it."""

from __future__ import annotations

from okra_controllers.cell.plan import freeze_holds
from unit.test_cell_plan_freeze import (
    HOLIDAY,
    SAID,
    frozen_at_step_1,
    frozen_condition,
    rolled_out,
    walk_to,
)


def test_an_abort_under_a_freeze_ends_the_hold_in_the_status() -> None:
    w = frozen_at_step_1()
    assert w.status.paused_reason == "Frozen"
    assert freeze_holds(w.status)
    w.abort = w.status.rollout_id
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    assert (w.status.phase, w.status.health) == ("Error", "Degraded")
    # the freeze still applies, but holds nothing: the abort does
    assert w.status.paused_reason is None
    assert not freeze_holds(w.status)
    c = frozen_condition(w)
    assert (c.status, c.reason) == ("True", "Applies")
    paused = next(c for c in w.status.conditions or [] if c.type == "Paused")
    assert (paused.status, paused.reason) == ("False", "Degraded")
    w.freeze = None
    w.run(3)
    assert (w.status.phase, w.status.paused_reason) == ("Error", None)
    assert frozen_condition(w).status == "False"
    assert not freeze_holds(w.status)


def test_only_a_paused_cell_counts_as_held() -> None:
    w = frozen_at_step_1()
    stale = w.status.model_copy(update={"health": "Degraded", "phase": "Error"})
    assert stale.paused_reason == "Frozen"
    assert not freeze_holds(stale)  # written by an okra that left the reason behind


def test_a_rollout_held_before_it_begins_is_in_init_while_the_stable_serves() -> None:
    w = rolled_out()
    w.freeze = HOLIDAY
    w.add_tg("a-v2", "v2")
    w.run(5)
    assert w.weights() == {"a-v1": 100}
    st = w.status
    assert (st.phase, st.health, st.paused_reason) == ("Init", "Paused", "Frozen")
    assert st.message == f"v1 serves 100%; rollout of v2 waits: {SAID}"
    assert (st.canary_version, st.rollout_id) == (None, None)  # no rollout has begun
    w.freeze = None
    w.run(3)
    assert (w.status.phase, w.status.health) == ("Migrating", "Progressing")
    w.run(40)
    assert (w.status.phase, w.status.stable_version) == ("Completed", "v2")


def test_a_retried_rollout_held_before_it_begins_again_is_in_init() -> None:
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.freeze = HOLIDAY
    w.abort = w.status.rollout_id
    w.run(3)
    assert w.status.phase == "Error"
    w.abort = None  # okra retry: the rollout starts over, and waits for the freeze
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    st = w.status
    assert (st.phase, st.health, st.paused_reason) == ("Init", "Paused", "Frozen")
    assert st.message == f"v1 serves 100%; rollout of v2 waits: {SAID}"


def test_a_held_rollout_that_has_begun_is_migrating() -> None:
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.freeze = HOLIDAY
    w.run(10)  # the pause runs out; the analysis of step 3 waits
    st = w.status
    assert (st.phase, st.health, st.paused_reason) == ("Migrating", "Paused", "Frozen")
    assert st.current_step_index == 2
