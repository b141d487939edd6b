"""Which phase the Cell is in, decided from what serves and what is desired.

Waiting (no version desired yet), a first rollout (with or without checks), the
steady state, a rollback, a step-less update, or a canary: each has its own module;
this one only picks, so the rules for choosing are in one short function.
"""

from __future__ import annotations

from okra_controllers.cell.plan.bluegreen import background, steps_of
from okra_controllers.cell.plan.canary import canary
from okra_controllers.cell.plan.freeze import hold_start
from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.status import FAILED_AND_BLOCKED, kept_message, set_phase
from okra_controllers.cell.plan.strategy import has_checks
from okra_controllers.cell.plan.switch import first_with_checks, steady, switch
from okra_controllers.cell.plan.waiting import desired, serving_version


def route(o: Observed) -> Plan:
    """The rollout's plan for a Cell behind a load balancer, before the gates."""
    st = o.status.model_copy(deep=True)
    st.observed_generation = o.generation
    p = Plan(forward=None, status=st)
    g = o.grouped
    for name, value in g.unparsable:
        p.events.append(
            Event(
                "Warning",
                "UnparsableVersion",
                f"AWSTargetGroup {name}: version label {value!r} is not a version; ignored",
            )
        )
    to, why = desired(o)
    stable = serving_version(o)
    if to is None:
        if stable is None and o.status.health == "Degraded" and o.blocked:
            # A first rollout failed its checks: the failure stays visible (okra retry).
            set_phase(p, o, "Degraded", kept_message(o.status.message, FAILED_AND_BLOCKED))
            return p
        if stable is None:
            p.status.phase = "Init"
            set_phase(p, o, "Progressing", why)
            return p
        to = next(v for v in g.versions if v.text == stable)
    if (
        has_checks(o.spec)
        and o.status.stable_version is None
        and (stable is None or o.status.canary_version == to.text)
    ):
        # The first rollout (its own config, once written, shows `to` serving).
        if o.freeze is not None and (o.status.canary_version != to.text or not o.status.rollout_id):
            return hold_start(p, o, to, None)
        return first_with_checks(p, o, to)
    stable_v = next((v for v in g.versions if v.text == stable), None)
    if stable_v is None or o.forward is None:
        if o.freeze is not None and to.text != stable:
            return hold_start(p, o, to, stable_v)
        return switch(p, o, to, "first rollout", first=True)
    if to.parsed == stable_v.parsed:
        return steady(p, o, stable_v, why)
    if to.parsed < stable_v.parsed:
        return switch(p, o, to, f"rollback from {stable}", first=False)
    steps = steps_of(o.spec)
    if not steps and background(o.spec) is None and not has_checks(o.spec):
        if o.freeze is not None:
            return hold_start(p, o, to, stable_v)
        return switch(p, o, to, f"update from {stable} (no steps)", first=False)
    return canary(p, o, stable_v, to, steps)
