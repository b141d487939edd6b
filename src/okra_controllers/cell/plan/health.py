"""The health gate: no traffic to a target group before it has a healthy target.

A target group about to get weight for the first time may not serve yet (its
targets registering, a wrong port): weight sent there is lost requests. Health is
observed input, read from AWS only for the groups this gate names (`needs_health`),
so a Cell in steady state reads none.
"""

from __future__ import annotations

from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.status import condition, hold


def wait_for_health(p: Plan, o: Observed, tgs: list[tuple[str, str]], before: str) -> Plan | None:
    """`p` held until each of these (name, ARN) target groups has a healthy target, saying
    which one it waits for `before` what; None when they all have one. Health is observed
    input; unknown health asks for a look (`needs_health`)."""
    unknown = tuple(arn for _, arn in tgs if arn not in o.health)
    if unknown:
        names = ", ".join(name for name, arn in tgs if arn in unknown)
        held = hold(p, o, "Progressing", f"checking for a healthy target in {names}", None)
        held.needs_health = unknown
        return held
    unhealthy = [(name, arn) for name, arn in tgs if not o.health[arn]]
    if not unhealthy:
        return None
    message = f"waiting for a healthy target in {', '.join(n for n, _ in unhealthy)} {before}"
    problems = refused(o, unhealthy)
    if problems:
        message = f"{message}; {problems}"
    return hold(
        p,
        o,
        "Progressing",
        message,
        Event("Warning", "TargetGroupUnhealthy", message),
        ("TargetGroupsHealthy", "TargetGroupRefused" if problems else "NoHealthyTargets"),
    )


def refused(o: Observed, tgs: list[tuple[str, str]]) -> str:
    """What AWS said refusing to describe these (name, ARN) target groups; "" if none."""
    said = [
        f"AWSTargetGroup {name}: {o.health_problems[arn]}"
        for name, arn in tgs
        if arn in o.health_problems
    ]
    return f"AWS refuses to describe it: {'; '.join(said)}" if said else ""


def health_gate(p: Plan, o: Observed) -> Plan:
    """Hold weights back from a target group that never had weight until it has a
    healthy target."""
    if p.forward is None:
        return p
    weighted = {f.arn for f in o.forward or () if f.weight > 0}
    new = sorted({f.arn for f in p.forward if f.weight > 0} - weighted)
    names = {f.arn: f.name for f in reversed(p.forward)}  # an ARN's first name in forward
    held = wait_for_health(p, o, [(names[arn], arn) for arn in new], "before sending it traffic")
    if held is not None:
        return held
    if any(c.type == "TargetGroupsHealthy" for c in p.status.conditions or []):
        condition(
            p.status,
            "TargetGroupsHealthy",
            True,
            "HealthyTargets",
            "every target group given weight has a healthy target",
            o.now,
            o.generation,
        )
    return p
