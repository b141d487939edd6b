"""Blue/green (an NLB Cell's strategy): a canary whose only weights are 0 and 100.

The new version is analysed while it has no traffic, then `promote` moves everything
at once. Rather than a second walk, the BlueGreen steps are read as canary steps
(`steps_of`) and walked by the canary phase; what is blue/green's own is here: that
reading, that background analysis is a Canary's only, and that an analysis of a
version with no traffic waits for its target groups to have a healthy target.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.cell import CellSpec
from okra_controllers.api.v1alpha1.strategy import BackgroundAnalysis, CanaryStep
from okra_controllers.cell.plan.health import wait_for_health
from okra_controllers.cell.plan.model import Observed, Plan


def is_blue_green(spec: CellSpec) -> bool:
    return spec.update_strategy.type == "BlueGreen"


def steps_of(spec: CellSpec) -> list[CanaryStep]:
    """The strategy's steps as canary steps. BlueGreen is a canary whose only weights
    are 0 and 100: `analysis` runs while the new version has no traffic, `promote: {}`
    is `setWeight: 100` (everything moves at once, and only once AWS shows it does the
    step complete), and what follows runs with the new version serving."""
    strategy = spec.update_strategy
    if is_blue_green(spec):
        return [
            CanaryStep(analysis=s.analysis)
            if s.analysis is not None
            else CanaryStep(set_weight=100)
            for s in (strategy.blue_green.steps if strategy.blue_green else [])
        ]
    return list(strategy.canary.steps) if strategy.canary else []


def background(spec: CellSpec) -> BackgroundAnalysis | None:
    """Background analysis: a Canary's only."""
    canary = spec.update_strategy.canary
    return canary.analysis if canary is not None and not is_blue_green(spec) else None


def analysis_health_gate(p: Plan, o: Observed) -> Plan | None:
    """BlueGreen: the new version's target groups need a healthy target before an
    analysis is started against them (they have no traffic yet, so the load balancer's
    health checks are the only sign they serve at all)."""
    canary = p.status.canary_version
    if not is_blue_green(o.spec) or not canary or not p.create_runs:
        return None
    serving = {f.arn for f in p.forward or () if f.weight > 0}
    tgs = [(tg.name, tg.arn) for tg in o.grouped.by_version.get(canary, [])]
    return wait_for_health(
        p, o, [t for t in tgs if t[1] not in serving], f"before analysing {canary}"
    )
