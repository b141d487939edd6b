"""All at once: the first rollout, a rollback, a step-less update, the steady state.

These move every bit of weight to one version in one write, with no steps: the first
rollout (nothing to compare against), a rollback (`spec.version` below the serving
version: going back to what served before needs no canary), an update with no steps,
and the steady state, where a new target group of the serving version is added at once
(scale out) and older versions leave the rule. A first rollout with checks runs its
prechecks before anything is written and its postchecks once the version serves.
"""

from __future__ import annotations

from okra_controllers.cell.plan.checks import precheck_gate, run_checks
from okra_controllers.cell.plan.ending import end_leftovers, end_rollout
from okra_controllers.cell.plan.failure import check_failed, fail
from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.names import rollout_id
from okra_controllers.cell.plan.status import FAILED_AND_BLOCKED, kept_message, set_phase
from okra_controllers.cell.plan.strategy import step_hash
from okra_controllers.cell.plan.weights import applied, forward_for, forward_hash, weights_status
from okra_controllers.cell.versions import Version


def switch(p: Plan, o: Observed, to: Version, why: str, first: bool) -> Plan:
    """All weight to `to` at once (first rollout, rollback, step-less update)."""
    p.forward = forward_for([(o.grouped.by_version[to.text], 100)])
    weights_status(p)
    if p.status.stable_version != to.text or p.status.canary_version:
        p.events.append(
            Event(
                "Normal", "RolledOut" if first else "Switched", f"{why}: all traffic to {to.text}"
            )
        )
    end_rollout(p, o)
    p.status.stable_version = to.text
    if applied(o, p.forward):
        set_phase(p, o, "Healthy", f"{to.text} serves 100%")
    else:
        p.status.phase = "Migrating"
        set_phase(p, o, "Progressing", f"{why}: shifting all traffic to {to.text}")
    return p


def steady(p: Plan, o: Observed, stable: Version, why: str) -> Plan:
    """The serving version is the desired one: all its target groups share 100."""
    canary = p.status.canary_version
    if canary and canary in o.blocked and canary != stable.text:
        # The canary was blocked (by this controller in a pass whose status write was
        # lost, or by hand): this is the failure, reported as such.
        v = next((v for v in o.grouped.versions if v.text == canary), None)
        if v is not None:
            p.status.analysis_runs = p.status.analysis_runs or {}
            return fail(p, o, stable, v, o.blocked[canary])
    p.forward = forward_for([(o.grouped.by_version[stable.text], 100)])
    weights_status(p)
    if canary:
        end_rollout(p, o)
    else:
        end_leftovers(p, o)
    p.status.stable_version = stable.text
    if p.status.health == "Degraded" and any(v in o.blocked for v in o.grouped.by_version):
        # A failure stays visible until a new rollout starts or the version is retried.
        set_phase(p, o, "Degraded", kept_message(p.status.message, FAILED_AND_BLOCKED))
    elif not applied(o, p.forward):
        p.status.phase = "Migrating"
        set_phase(p, o, "Progressing", f"applying weights for {stable.text}")
    else:
        set_phase(p, o, "Healthy", f"{stable.text} serves 100%" + (f"; {why}" if why else ""))
    return p


def first_with_checks(p: Plan, o: Observed, to: Version) -> Plan:
    """The first rollout (no version serves yet) of a Cell with checks: prechecks before
    the load balancer config is written, then all traffic to `to`, then postchecks. A
    failed precheck blocks the version with nothing written; a failed postcheck (after
    the rollback delay) blocks it and leaves it serving: there is nothing to go back to."""
    st = p.status
    if st.canary_version != to.text or st.rollout_id is None:
        end_rollout(p, o)
        st.canary_version, st.current_step_hash = to.text, step_hash(to.text, o.spec)
        st.step_started_at = st.last_progress_time = o.now
        st.rollout_id = rollout_id(o.cell_uid, st.current_step_hash, o.now)
        p.events.append(Event("Normal", "RolloutStarted", f"first rollout: {to.text}"))
    rid = st.rollout_id
    assert rid is not None
    end_leftovers(p, o, keep=rid)
    target = forward_for([(o.grouped.by_version[to.text], 100)])
    fhash = forward_hash(target)

    def failed(cause: str, serving: str) -> Plan:
        p.block = (to.text, cause)
        end_rollout(p, o)
        message = f"version {to.text} failed: {cause}; {serving}"
        p.events.append(Event("Warning", "RolloutFailed", message))
        set_phase(p, o, "Degraded", message)
        return p

    def prechecking(said: str) -> Plan:
        st.phase = "Init"
        set_phase(p, o, "Progressing", f"Init: {said}; no traffic moves to {to.text}")
        return p

    held = precheck_gate(
        p, o, fhash, rid, to.text, lambda cause: failed(cause, "nothing serves yet"), prechecking
    )
    if held is not None:
        return held
    p.forward = target
    weights_status(p)
    st.canary_weight = 100
    if not applied(o, target):
        st.phase = "Migrating"
        set_phase(p, o, "Progressing", f"first rollout: shifting all traffic to {to.text}")
        return p
    if o.spec.postchecks:
        verdict, said = run_checks(p, o, "postcheck", o.spec.postchecks, fhash, rid, to.text)
        if verdict == "failed":
            return check_failed(
                p,
                o,
                "postcheck",
                said,
                lambda: failed(
                    f"{said}; {to.text} is blocked",
                    f"{to.text} keeps serving: no earlier version to roll back to",
                ),
            )
        if verdict == "pending":
            st.phase = "Completing"
            set_phase(p, o, "Progressing", f"Completing: {to.text} serves 100%; {said}")
            return p
    end_rollout(p, o)
    st.stable_version = to.text
    p.events.append(Event("Normal", "RolledOut", f"first rollout: all traffic to {to.text}"))
    set_phase(p, o, "Healthy", f"{to.text} serves 100%")
    return p
