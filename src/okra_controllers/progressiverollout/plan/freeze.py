"""Freezes: while one applies (`Observed.freeze`), no stage starts and no cluster's sync
starts; what is under way goes on.

As `okra pause` does, and at the same boundaries: a stage that has not started waits, and
within a started stage no new sync (the next wave within `maxUnavailable`) starts. A sync
already started runs to its end, bakes and is verified; a stage whose clusters are all done
runs its analysis, and its verdict counts (a failure pauses or rolls back by the failure
policy). A rollback and `okra abort` proceed. The status says which freezes hold the rollout
and until when (condition `Frozen`: reason `Held` while it holds something, `Applies` while
it only applies), Events mark the hold and its end, and the rollout is looked at again when
the freeze ends.
"""

from __future__ import annotations

from okra_controllers.progressiverollout.plan.draft import Draft

FROZEN = "Frozen"


def frozen(d: Draft) -> bool:
    return d.o.freeze is not None


def hold(d: Draft, what: str) -> None:
    """`what` waits for the freeze: said in the status."""
    assert d.o.freeze is not None
    d.held = True
    d.st.phase = "Paused"
    d.st.message = f"{what} held: {d.o.freeze.describe()}"


def report_freeze(d: Draft) -> None:
    """Condition `Frozen`, the Events of a hold's start and end, a look again at its end."""
    before = next((c for c in d.o.status.conditions or [] if c.type == FROZEN), None)
    was_held = before is not None and before.status == "True" and before.reason == "Held"
    f = d.o.freeze
    if f is not None:
        message = f.describe()
        d.cond(FROZEN, True, "Held" if d.held else "Applies", message)
        left = f.seconds_left(d.now)
        if left is not None:
            d.p.wake(left)
        if d.held and not was_held:
            d.event("Normal", "Frozen", d.st.message or message)
    elif before is not None and before.status == "True":
        d.cond(FROZEN, False, "NotFrozen", "no freeze applies")
        if was_held:
            d.event("Normal", "Unfrozen", f"no freeze holds the rollout: {d.st.message or ''}")
