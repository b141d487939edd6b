"""The load balancer's own limits and refusals, said in the Cell's status.

A forward list AWS would reject (more than 5 target groups, a weight out of range, an
ALB rule with no condition) is never written: the plan turns Degraded and says what
to fix. A config AWS refuses to apply (a listener that does not exist, a missing
permission) is reported on the Cell, since no weight moves until someone fixes it.
"""

from __future__ import annotations

from okra_controllers.cell.plan.model import Event, Forward, Observed, Plan
from okra_controllers.cell.plan.status import add_to_message, condition
from okra_controllers.cell.plan.weights import applied

MAX_FORWARD = 5  # target groups in one ALB forward action
MAX_WEIGHT = 999  # an ALB target group weight
MAX_RECORDS = 100  # weighted records of one Route 53 name and type
MAX_RECORD_WEIGHT = 255  # a Route 53 record's weight


def limit_problem(o: Observed, forward: tuple[Forward, ...] | None) -> tuple[str, str] | None:
    """Load balancer limits the config would break, as (Event reason, what to fix). An
    NLB forward has the ALB's limits (5 target groups, weights 0..999) and no rule."""
    assert o.spec.ingress is not None
    if o.spec.ingress.route53:
        return _route53_problem(forward)
    lb = "NLB" if o.spec.ingress.network else "ALB"
    alb = o.spec.ingress.aws_application_load_balancer
    if (
        not o.spec.ingress.network
        and alb is not None
        and alb.listener_rule is not None
        and not alb.listener_rule.has_condition()
    ):
        return "InvalidListenerRule", (
            "spec.ingress.awsApplicationLoadBalancer.listenerRule has no condition: an ALB "
            "rule other than the default needs at least one of hosts, pathPatterns, methods, "
            "sourceIPs, headers, queryStrings"
        )
    if forward is None:
        return None
    if len(forward) > MAX_FORWARD:
        names = ", ".join(f.name for f in forward)
        return "TooManyTargetGroups", (
            f"cannot route to {len(forward)} target groups ({names}): an {lb} forward "
            f"action holds at most {MAX_FORWARD}; lower the number of target groups "
            "per version"
        )
    bad = [f for f in forward if not 0 <= f.weight <= MAX_WEIGHT]
    if bad:
        return "InvalidWeight", (
            f"weights out of range for {', '.join(f.name for f in bad)}: an {lb} target "
            f"group weight is 0..{MAX_WEIGHT}"
        )
    return None


def _route53_problem(forward: tuple[Forward, ...] | None) -> tuple[str, str] | None:
    """Route 53's limits: 100 weighted records of a name and type, weights 0..255 (a
    share is 0..100, so only a hand-made forward could break the second)."""
    if forward is None:
        return None
    if len(forward) > MAX_RECORDS:
        return "TooManyTargetGroups", (
            f"cannot route to {len(forward)} target groups: Route 53 holds at most "
            f"{MAX_RECORDS} weighted records of one name and type"
        )
    bad = [f for f in forward if not 0 <= f.weight <= MAX_RECORD_WEIGHT]
    if bad:
        return "InvalidWeight", (
            f"weights out of range for {', '.join(f.name for f in bad)}: a Route 53 "
            f"record weight is 0..{MAX_RECORD_WEIGHT}"
        )
    return None


def report_load_balancer(p: Plan, o: Observed) -> None:
    """Condition `LoadBalancerSynced` (and a Warning Event when it turns False or its
    message changes): the load balancer config this Cell writes cannot apply its spec
    (AWS refuses it: a listener or target group that does not exist, a permission
    missing), so no weight moves until the cause is fixed; the message says it."""
    old = next((c for c in p.status.conditions or [] if c.type == "LoadBalancerSynced"), None)
    if o.config_waiting and p.forward is not None and not applied(o, p.forward):
        # Written, not yet in effect (Route 53: INSYNC + TTL): the status says when.
        add_to_message(p.status, f"weights written, not yet in effect: {o.config_waiting}")
        if o.config_effective_at is not None and o.config_effective_at > o.now:
            # the message names that time: the Cell is planned again when it comes
            until = (o.config_effective_at - o.now).total_seconds()
            p.wake_after = until if p.wake_after is None else min(p.wake_after, until)
    if not o.config_problem or p.forward is None or applied(o, p.forward):
        if old is not None and old.status == "False":
            message = "the load balancer config applies its spec"
            condition(p.status, "LoadBalancerSynced", True, "Synced", message, o.now, o.generation)
        return
    reason, _, said = o.config_problem.partition(": ")
    message = f"the load balancer config cannot be applied ({reason}): {said}"
    condition(
        p.status, "LoadBalancerSynced", False, reason or "NotSynced", message, o.now, o.generation
    )
    if old is None or old.status != "False" or old.message != message:
        p.events.append(Event("Warning", "LoadBalancerNotSynced", message))
    add_to_message(p.status, message)
