"""What deleting a ProgressiveRollout cancels and waits for (`plan.deletion`), for every
state an Application's operation can be in."""

from __future__ import annotations

import itertools

import pytest

from okra_controllers.progressiverollout.plan import App, plan_deletion, waiting_message

OURS = "2222222-abcdef01-3"


def app(name: str, pending: str | None, op_sync: str | None, op_phase: str) -> App:
    return App(
        name=name,
        cluster=name,
        labels={},
        pending_sync_id=pending,
        operation_pending=pending is not None,
        op_sync_id=op_sync,
        op_phase=op_phase,
    )


PHASES = ("", "Running", "Terminating", "Succeeded", "Failed", "Error")


@pytest.mark.parametrize(
    ("pending", "op_sync", "op_phase"),
    list(itertools.product((None, OURS), (None, OURS, "other-sync-1"), PHASES)),
)
def test_each_operation_state_is_cancelled_waited_for_or_left(
    pending: str | None, op_sync: str | None, op_phase: str
) -> None:
    d = plan_deletion([app("a", pending, op_sync, op_phase)])
    if pending is None:  # no operation of okra's: nothing to do
        assert (d.cancel, d.running, d.done) == ((), (), True)
    elif op_sync == OURS and op_phase in ("Running", "Terminating"):  # Argo CD runs it
        assert (d.cancel, d.running, d.done) == ((), ("a",), False)
    else:  # not picked up (the state is of another operation, or of none): cancelled
        assert (d.cancel, d.running, d.done) == (("a",), (), False)


def test_several_applications_are_planned_in_name_order() -> None:
    d = plan_deletion(
        [
            app("c", OURS, None, ""),
            app("b", OURS, OURS, "Running"),
            app("a", "x-1", "older-1", "Succeeded"),
            app("d", None, OURS, "Succeeded"),
        ]
    )
    assert d.cancel == ("a", "c")
    assert d.running == ("b",)
    assert not d.done


def test_the_waiting_message_names_refused_cancels_and_running_syncs() -> None:
    assert waiting_message([], []) == ""
    assert waiting_message(["b"], []) == "okra's sync running in Argo CD on b"
    assert waiting_message(["b"], ["d", "c"]) == (
        "cancelling okra's pending sync on c, d (retrying); okra's sync running in Argo CD on b"
    )
