"""The rollout ahead, from the Cell controller's own `plan`: what `okra plan` prints.

`simulate(observed)` plans once from what was observed (that is what the
controller would do now), then keeps planning as if everything went right:
AWS shows each written weight, every analysis run succeeds, every pause ends
(a timed one after its duration, an indefinite one by `okra promote`), the traffic
confirms each weight step once its window has passed. Each
pass that writes weights, starts an analysis or a pause, or emits an event is
a `Stage`. The walk stops when the Cell is Healthy with no rollout, when a
pass changes nothing (a blocker: waiting for replicas, a health gate, an ALB
limit, a blocked version, an abort, okra pause), or after `MAX_PASSES`.

No I/O: the same function the controller runs is called with made-up
observations, so the weights printed are the weights the controller writes.
"""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field

from okra_controllers.cell.plan import Event, Forward, Observed, Plan, plan
from okra_controllers.cell.plan.traffic import TrafficReading

MAX_PASSES = 500


@dataclass(frozen=True)
class Stage:
    step: int | None  # the canary step index the Cell is at after this pass (None: no rollout)
    forward: tuple[Forward, ...] | None  # weights written in this pass (None: unchanged)
    weights: tuple[Forward, ...]  # the weights in force after this pass
    phase: str  # the Cell's health after this pass (Progressing, Paused, Healthy, Degraded)
    message: str
    events: tuple[Event, ...] = ()
    runs: tuple[str, ...] = ()  # AnalysisRuns started in this pass
    pause: str | None = None  # Pause started in this pass
    pause_seconds: float | None = None  # its duration (None: until promoted)


@dataclass
class Simulation:
    now: Plan  # what the controller would do now, from the real observation
    stages: list[Stage] = field(default_factory=list)
    blocked_by: str | None = None  # why the walk stopped short of Healthy, if it did
    finished: bool = False  # reached Healthy with no rollout in progress
    stable: str | None = None  # the stable version where the walk ended


def _pass(p: Plan, o: Observed) -> Stage:
    pause_seconds = None
    if p.create_pause is not None and p.create_pause.expire_time is not None:
        pause_seconds = (p.create_pause.expire_time - o.now).total_seconds()
    return Stage(
        step=p.status.current_step_index if p.status.canary_version else None,
        forward=p.forward if p.forward is not None and p.forward != o.forward else None,
        weights=p.forward if p.forward is not None else (o.forward or ()),
        phase=p.status.health,
        message=p.status.message or "",
        events=tuple(p.events),
        runs=tuple(r.name for r in p.create_runs),
        pause=p.create_pause.name if p.create_pause is not None else None,
        pause_seconds=pause_seconds,
    )


def _next(o: Observed, p: Plan) -> Observed:
    """The observation after `p` was carried out and everything it waits for went right."""
    runs = dict(o.runs)
    for r in p.create_runs:
        runs[r.name] = "Successful"
    for name, phase in list(runs.items()):
        if phase in ("", "Pending", "Running", "Inconclusive"):
            runs[name] = "Successful"
    pauses = dict(o.pauses)
    if p.create_pause is not None:
        pauses[p.create_pause.name] = "Expired" if p.create_pause.expire_time else "Cancelled"
    for name, phase in list(pauses.items()):
        if phase in ("", "Started"):
            pauses[name] = "Cancelled"
    blocked = dict(o.blocked)
    if p.block is not None:
        blocked[p.block[0]] = p.block[1]
    forward = p.forward if p.forward is not None else o.forward
    health = dict(o.health)
    for arn in p.needs_health:
        health.setdefault(arn, True)
    # Traffic confirmation: the window is waited out, and the traffic follows the weights.
    traffic, seconds = None, 1.0
    if p.needs_traffic is not None:
        q, weights = p.needs_traffic, {f.arn: f.weight for f in forward or ()}
        traffic = TrafficReading(q.start, q.end, {a: 1e9 * weights.get(a, 0) for a in q.arns})
    elif p.status.traffic is not None and p.status.traffic.verdict == "Waiting" and p.wake_after:
        seconds = max(seconds, p.wake_after)
    return dataclasses.replace(
        o,
        status=p.status,
        forward=forward,
        synced=True,
        runs=runs,
        pauses=pauses,
        blocked=blocked,
        health=health,
        now=o.now + datetime.timedelta(seconds=seconds),
        traffic=traffic,
    )


def simulate(observed: Observed) -> Simulation:
    first = plan(observed)
    sim = Simulation(now=first)
    o, p = observed, first
    for _ in range(MAX_PASSES):
        stage = _pass(p, o)
        if stage.forward is not None or stage.events or stage.runs or stage.pause:
            sim.stages.append(stage)
        if p.block is not None or p.status.health == "Degraded":
            sim.blocked_by = p.status.message or "Degraded"
            return sim
        settled = p.forward is None or (o.synced and sorted(p.forward) == sorted(o.forward or ()))
        sim.stable = p.status.stable_version
        if p.status.health == "Healthy" and not p.status.canary_version and settled:
            sim.finished = True
            return sim
        nxt = _next(o, p)
        if dataclasses.replace(nxt, now=o.now) == o or (p.held and not p.needs_health):
            sim.blocked_by = p.status.message or "the plan makes no progress"
            return sim
        o, p = nxt, plan(nxt)
    sim.blocked_by = f"no end after {MAX_PASSES} passes"
    return sim
