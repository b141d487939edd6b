"""Failure: all traffic back to the stable version at once, and the version blocked.

A failed analysis, precheck or postcheck (or an exceeded progress deadline with
`progressDeadlineAbort`) ends the rollout the same way: the stable version gets 100,
the failed version goes to the VersionBlocklist with the cause (so it is not rolled
out again until `okra retry`), and the status says why. A failed precheck or postcheck
waits `rollbackDelaySeconds` (or the failure policy's delay) first, timed from the status
so a restart does not reset it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Literal

from okra_controllers.cell.plan.ending import end_rollout
from okra_controllers.cell.plan.model import Event, Observed, Plan, Stage
from okra_controllers.cell.plan.status import set_phase
from okra_controllers.cell.plan.weights import forward_for, weights_status
from okra_controllers.cell.versions import Version


def fail(p: Plan, o: Observed, stable: Version, canary: Version, cause: str) -> Plan:
    """The canary failed: stable back to 100 at once, the canary blocked for `cause`."""
    p.forward = forward_for([(o.grouped.by_version[stable.text], 100)])
    weights_status(p)
    p.block = (canary.text, cause)
    end_rollout(p, o)
    message = f"version {canary.text} failed: {cause}; all traffic back to {stable.text}"
    p.events.append(Event("Warning", "RolloutFailed", message))
    set_phase(p, o, "Degraded", message)
    return p


def check_failed(
    p: Plan, o: Observed, stage: Stage | Literal["traffic"], said: str, fail: Callable[[], Plan]
) -> Plan:
    """A failed check, handled as `spec.failurePolicy` says.

    - No policy: a failed precheck or postcheck rolls back after `rollbackDelaySeconds`
      (one flow for both: "... failed. Waiting 60 seconds before starting a rollback";
      after a precheck no traffic has moved, so the rollback is the version being
      blocked); traffic that stays off the plan fails the version at once (as a failed
      analysis does).
    - `Rollback`: either kind rolls back after the policy's `delaySeconds`.
    - `Stop`: nothing moves, nothing is blocked; the Cell says so and waits for a person.

    The rollback time is in the status (`rollbackAt`), so a restarted manager waits out the
    same delay, not a new one."""
    policy = o.spec.failure_policy
    st = p.status
    if policy is not None and policy.type == "Stop":
        message = (
            f"{said}; failurePolicy Stop: traffic stays where it is "
            "(okra abort, or a change of the spec, moves on)"
        )
        if not (o.status.phase == "Error" and o.status.message == message):
            p.events.append(Event("Warning", _REASON[stage], message))
        st.phase = "Error"
        set_phase(p, o, "Degraded", message)
        return p
    if policy is None and stage == "traffic":
        return fail()
    delay = policy.delay_seconds if policy is not None else o.spec.rollback_delay_seconds
    if st.rollback_at is None:
        st.rollback_at = o.now + datetime.timedelta(seconds=delay)
    if o.now >= st.rollback_at:
        return fail()
    message = f"{said}. Waiting {delay} seconds before starting a rollback"
    if o.status.rollback_at is None:
        p.events.append(Event("Warning", _REASON[stage], message))
    st.phase = "Error"
    set_phase(p, o, "Degraded", message)
    p.requeue_after = (st.rollback_at - o.now).total_seconds()
    return p


_REASON = {
    "precheck": "PrecheckFailed",
    "postcheck": "PostcheckFailed",
    "traffic": "TrafficNotConfirmed",
}
