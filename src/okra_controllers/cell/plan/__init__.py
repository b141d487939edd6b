"""The Cell's plan: a pure function from what was observed to what should be.

Given the Cell, its target groups (grouped by version), the load balancer
config as it is and whether AWS shows it applied, the blocklist, the phases of
the Cell's AnalysisRuns and Pauses, and the user's commands, `plan` returns the
forward weights to write, the Cell's next status, and what to create or stop.
It never does I/O, so every rule below is tested directly:

- Desired version: `spec.version` if set, else the highest non-blocked version
  with at least `replicas` target groups. Until one exists nothing changes.
- First rollout (no config yet) and rollback (desired below stable): all weight
  to the desired version at once. A new target group of the serving version is
  added at once (scale out); older versions leave the rule.
- Canary (desired above stable): steps in order; a weight step completes only
  when AWS shows the planned weights; a pause when its Pause expires or is
  cancelled; an analysis when its run succeeds. Background analysis runs from
  `startingStep`. After the last step the canary gets 100.
- Any analysis Failed/Error: all weight back to stable at once, the version is
  blocked with the cause. Inconclusive pauses until promote or abort. Abort
  holds on stable until retry. `okra pause` (the pause annotation) holds the
  canary at its current weight, before the next step, until promote.
- Weights are split evenly across a version's target groups (remainder to the
  last by name) and always total exactly 100.
- With `spec.trafficConfirmation`, a weight step completes only once the traffic
  each version's target groups served (a reading the caller makes when asked, in
  `needs_traffic`) matches the weights AWS shows; too little traffic holds it, a
  split off the plan past the deadline fails it by the failure policy.
- A newer version with fewer than `replicas` target groups is reported as
  waiting (condition `ReplicasReady`, an Event when that changes, the message).
- Ending a rollout (completion, rollback, failure, abort, restart) terminates
  its AnalysisRuns and cancels its Pauses.
- Progress deadline (`progressDeadlineSeconds`, Argo Rollouts' meaning): a
  Progressing Cell that makes no progress that long is reported; with
  `progressDeadlineAbort` its canary fails (stable back to 100, version blocked).
- Gates, decided here with the rest: ALB limits (at most 5 target groups in a
  forward action, weights 0..999, a listener rule with at least one condition;
  behind Route 53, at most 100 records with weights 0..255) turn the plan into a
  Degraded status that says what to fix; a target group
  about to get weight for the first time needs a healthy target (observed
  input `health`; unknown health asks the caller to look, in `needs_health`).

One module per lifecycle phase, each saying its one job: `model` (what the plan
reads and returns), `waiting` (the desired version, `ReplicasReady`), `route` (which
phase), `switch` (first rollout, rollback, steady state), `canary` (the steps),
`bluegreen` (an NLB's 0-or-100 canary), `checks` (pre- and postchecks), `failure`
(stable back, version blocked), `ending` (runs and Pauses stopped), `deadline`
(`progressDeadlineSeconds`), `health` and `loadbalancer` (gates; the load
balancer's limits and, for Route 53, weights written but not yet in effect), `cluster_labels`
and `clusters_only` (Argo CD), `traffic` (does the traffic served match the weights, with
`spec.trafficConfirmation`) and `confirm` (a weight step held or failed on it), `status`
(conditions and holds), `compose` (`plan`).
"""

from okra_controllers.cell.plan.bluegreen import steps_of
from okra_controllers.cell.plan.compose import plan
from okra_controllers.cell.plan.freeze import freeze_holds
from okra_controllers.cell.plan.loadbalancer import MAX_FORWARD, MAX_WEIGHT
from okra_controllers.cell.plan.model import (
    DONE_PAUSE,
    DONE_RUN,
    FAILED_RUN,
    Event,
    EventType,
    Forward,
    JobRequest,
    Observed,
    PauseRequest,
    Plan,
    RunRequest,
    Stage,
)
from okra_controllers.cell.plan.names import job_name, rollout_id, run_name
from okra_controllers.cell.plan.strategy import step_hash, weight_before
from okra_controllers.cell.plan.weights import forward_for, forward_hash

__all__ = [
    "DONE_PAUSE",
    "DONE_RUN",
    "FAILED_RUN",
    "MAX_FORWARD",
    "MAX_WEIGHT",
    "Event",
    "EventType",
    "Forward",
    "JobRequest",
    "Observed",
    "PauseRequest",
    "Plan",
    "RunRequest",
    "Stage",
    "forward_for",
    "forward_hash",
    "freeze_holds",
    "job_name",
    "plan",
    "rollout_id",
    "run_name",
    "step_hash",
    "steps_of",
    "weight_before",
]
