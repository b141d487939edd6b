"""`plan`: the phases composed, then the gates that may hold them back, then the reports.

The phase modules each say what their phase wants written; the gates here (load
balancer limits, Argo CD, target group health) may then hold the whole plan back
with a status that says why, and the reports (progress deadline, a config AWS
refuses, a misplaced listener) are added last, whatever the phase.
"""

from __future__ import annotations

from okra_controllers.cell.plan.bluegreen import analysis_health_gate
from okra_controllers.cell.plan.cluster_labels import argocd_gate, relabel_serving
from okra_controllers.cell.plan.clusters_only import clusters_only
from okra_controllers.cell.plan.deadline import deadline
from okra_controllers.cell.plan.freeze import report_freeze
from okra_controllers.cell.plan.health import health_gate
from okra_controllers.cell.plan.loadbalancer import limit_problem, report_load_balancer
from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.route import route
from okra_controllers.cell.plan.status import hold
from okra_controllers.cell.plan.waiting import report_waiting


def plan(o: Observed) -> Plan:
    """What to do next: the rollout's plan, then the gates that may hold it back."""
    if o.spec.ingress is None:
        p = deadline(clusters_only(o), o)
    else:
        p = deadline(gated(o), o)
        relabel_serving(p, o)
    report_load_balancer(p, o)
    report_freeze(p, o)
    if (
        o.spec.ingress is not None
        and o.spec.ingress.misspelled()
        and o.status.observed_generation != o.generation
    ):
        p.events.append(
            Event(
                "Warning",
                "MisplacedListener",
                "spec.ingress.awsApplicationLoadBalancer holds the listener of this "
                "AWSNetworkLoadBalancer Cell (the original okra's spelling, read as it "
                "is): rename the key to spec.ingress.awsNetworkLoadBalancer",
            )
        )
    return p


def gated(o: Observed) -> Plan:
    """The rollout's plan, unless a gate holds it back (the first that does says why)."""
    p = route(o)
    report_waiting(p, o)
    problem = limit_problem(o, p.forward)
    if problem is not None:
        reason, message = problem
        return hold(p, o, "Degraded", message, Event("Warning", reason, message))
    held = argocd_gate(p, o)
    if held is not None:
        return held
    held = analysis_health_gate(p, o)
    if held is not None:
        return held
    return health_gate(p, o)
