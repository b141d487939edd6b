"""What a Cell held by a freeze says about itself (cell/plan/freeze.py, status.py): a Cell
which stops being held (an abort, a failure) says `pausedReason: Frozen` no longer, during
the freeze and after it, and only a Paused Cell counts as held."""

from __future__ import annotations

from okra_controllers.cell.plan import freeze_holds
from unit.test_cell_plan_freeze import HOLIDAY, frozen_condition, rolled_out, walk_to


def test_an_abort_under_a_freeze_ends_the_hold_in_the_status() -> None:
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.freeze = HOLIDAY
    w.run(2)
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
    w = rolled_out()
    w.add_tg("a-v2", "v2")
    walk_to(w, 1)
    w.freeze = HOLIDAY
    w.run(2)
    stale = w.status.model_copy(update={"health": "Degraded", "phase": "Error"})
    assert stale.paused_reason == "Frozen"
    assert not freeze_holds(stale)  # written by an okra that left the reason behind
