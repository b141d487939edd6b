"""One pass of the canary over its steps (`Walk`: where it is, what holds it, the runs it
has asked for) and what a step comes to (`Outcome`). The canary (`canary`) walks with
them and a weight step's traffic confirmation (`confirm`) answers in them: both import
this module, and neither imports the other's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from okra_controllers.api.v1alpha1.strategy import CanaryStep, StepAnalysis
from okra_controllers.cell.plan.failure import fail
from okra_controllers.cell.plan.model import Forward, Observed, Plan, RunRequest
from okra_controllers.cell.plan.weights import walk_forward, walked_share
from okra_controllers.cell.versions import Version

Outcome: TypeAlias = Literal["next", "stop"] | Plan  # a step completed, holds the walk, or ended it


@dataclass
class Walk:
    """One pass over a rollout's steps: where it is (`i`), what holds it (`paused`), and
    the runs it has named and asked for."""

    p: Plan
    o: Observed
    stable: Version
    canary: Version
    steps: list[CanaryStep]
    rid: str
    runs: dict[str, str]  # the rollout's AnalysisRuns: "step-<i>" | "background" -> name
    i: int = 0
    paused: str | None = None
    frozen: bool = False  # `paused` is a freeze's
    requested: set[str] = field(default_factory=set)
    traffic: str | None = None  # why the traffic holds the step (`confirm`)

    def at(self, weight: int) -> tuple[Forward, ...]:
        """The forward list with the canary at `weight` and the stable at the rest."""
        by_version = self.o.grouped.by_version
        return walk_forward(by_version[self.stable.text], by_version[self.canary.text], weight)

    def share(self, forward: tuple[Forward, ...]) -> int:
        """How far `forward` is along the walk, in percent (the status' canaryWeight)."""
        by_version = self.o.grouped.by_version
        return walked_share(forward, by_version[self.stable.text], by_version[self.canary.text])

    def ensure_run(self, name: str, analysis: StepAnalysis, bg: bool) -> str:
        """The run's phase; the run asked for when it does not exist yet."""
        if name not in self.o.runs and name not in self.requested:
            self.requested.add(name)
            self.p.create_runs.append(RunRequest(name, analysis, bg))
        return self.o.runs.get(name, "")

    def fail(self, cause: str) -> Plan:
        self.p.status.analysis_runs = self.runs
        return fail(self.p, self.o, self.stable, self.canary, cause)
