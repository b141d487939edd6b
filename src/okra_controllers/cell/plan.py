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
  holds on stable until retry.
- Weights are split evenly across a version's target groups (remainder to the
  last by name) and always total exactly 100.
- A newer version with fewer than `replicas` target groups is reported as
  waiting (condition `ReplicasReady`, an Event when that changes, the message).
- Ending a rollout (completion, rollback, failure, abort, restart) terminates
  its AnalysisRuns and cancels its Pauses.
- Gates, decided here with the rest: ALB limits (at most 5 target groups in a
  forward action, weights 0..999, a listener rule with at least one condition)
  turn the plan into a Degraded status that says what to fix; a target group
  about to get weight for the first time needs a healthy target (observed
  input `health`; unknown health asks the caller to look, in `needs_health`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.cell import (
    CanaryStep,
    CellSpec,
    CellStatus,
    StepAnalysis,
    TargetGroupWeight,
)
from okra_controllers.api.v1alpha1.common import Condition
from okra_controllers.cell.versions import Grouped, TargetGroup, Version, split_evenly

EventType = Literal["Normal", "Warning"]
FAILED_RUN = ("Failed", "Error")
DONE_PAUSE = ("Expired", "Cancelled")
DONE_RUN = ("Successful", "Failed", "Error", "Inconclusive")
MAX_FORWARD = 5  # target groups in one ALB forward action
MAX_WEIGHT = 999  # an ALB target group weight


@dataclass(frozen=True, order=True)
class Forward:
    name: str
    arn: str
    weight: int
    version: str


@dataclass(frozen=True)
class Observed:
    cell_name: str
    generation: int
    spec: CellSpec
    status: CellStatus
    grouped: Grouped
    forward: tuple[Forward, ...] | None  # the config's forward list; None: no config yet
    synced: bool  # AWS shows exactly `forward` (config status.applied == spec, current gen)
    blocked: dict[str, str]  # version -> cause
    runs: dict[str, str]  # AnalysisRun name -> phase ("" until the controller sets one)
    pauses: dict[str, str]  # Pause name -> phase
    promote: str | None  # okra.mumo.co/promote annotation: "<rolloutID>/<step>" or ".../full"
    abort: str | None  # okra.mumo.co/abort annotation: the rollout ID to abort
    now: datetime.datetime
    # target group ARN -> it has a healthy target; only ARNs about to get weight
    # for the first time are looked at (the caller fills it when asked).
    health: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class RunRequest:
    name: str
    analysis: StepAnalysis
    background: bool


@dataclass(frozen=True)
class PauseRequest:
    name: str
    expire_time: datetime.datetime | None


@dataclass(frozen=True)
class Event:
    type: EventType
    reason: str
    message: str


@dataclass
class Plan:
    forward: tuple[Forward, ...] | None  # None: leave the config alone
    status: CellStatus
    create_runs: list[RunRequest] = field(default_factory=list)
    terminate_runs: list[str] = field(default_factory=list)
    create_pause: PauseRequest | None = None
    block: tuple[str, str] | None = None
    events: list[Event] = field(default_factory=list)
    cancel_pauses: list[str] = field(default_factory=list)
    needs_health: tuple[str, ...] = ()  # plan again with `health` for these ARNs
    held: bool = False  # a gate holds the plan back; look again soon


def step_hash(version: str, spec: CellSpec) -> str:
    canary = spec.update_strategy.canary
    raw = json.dumps(
        [version, canary.model_dump(mode="json", by_alias=True) if canary else None], sort_keys=True
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def _dns(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def rollout_id(spec_hash: str, started: datetime.datetime) -> str:
    return hashlib.sha256(f"{spec_hash}/{started.isoformat()}".encode()).hexdigest()[:8]


def run_name(cell: str, version: str, rollout: str, what: str) -> str:
    return f"{_dns(cell)[:30]}-{_dns(version)[:16]}-{rollout}-{what}".strip("-")


def weight_before(steps: list[CanaryStep], index: int) -> int:
    """The canary weight once steps[:index] have completed."""
    w = 0
    for step in steps[:index]:
        if step.set_weight is not None:
            w = step.set_weight
        elif step.step_weight is not None:
            w = min(100, w + step.step_weight)
    return w


def forward_for(weights: list[tuple[list[TargetGroup], int]]) -> tuple[Forward, ...]:
    """Forward entries for (target groups, total weight) pairs; zero weights leave the rule."""
    out: list[Forward] = []
    for tgs, total in weights:
        if total <= 0:
            continue
        out.extend(
            Forward(tg.name, tg.arn, w, tg.version.text) for tg, w in split_evenly(total, tgs)
        )
    return tuple(out)


def _condition(
    status: CellStatus,
    type_: str,
    ok: bool,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int,
) -> None:
    conds = {c.type: c for c in status.conditions or []}
    old = conds.get(type_)
    value: Literal["True", "False"] = "True" if ok else "False"
    changed = old is None or old.status != value
    conds[type_] = Condition(
        type=type_,
        status=value,
        reason=reason,
        message=message[:32000],
        last_transition_time=now if changed or old is None else old.last_transition_time,
        observed_generation=generation,
    )
    order = ["Progressing", "Healthy", "Paused", "Degraded"]
    status.conditions = sorted(
        conds.values(), key=lambda c: order.index(c.type) if c.type in order else 99
    )


def _set_phase(
    p: Plan,
    o: Observed,
    phase: Literal["Progressing", "Paused", "Healthy", "Degraded"],
    message: str,
) -> None:
    st = p.status
    st.phase = phase
    st.message = message
    g, now = o.generation, o.now
    _condition(st, "Progressing", phase in ("Progressing", "Paused"), phase, message, now, g)
    _condition(st, "Healthy", phase == "Healthy", phase, message, now, g)
    _condition(st, "Paused", phase == "Paused", st.paused_reason or phase, message, now, g)
    _condition(st, "Degraded", phase == "Degraded", phase, message, now, g)


def _serving_version(o: Observed) -> str | None:
    """The stable version: recorded in status if it still has target groups, else the
    version holding most weight in the config."""
    by_version = o.grouped.by_version
    if o.status.stable_version in by_version:
        return o.status.stable_version
    if not o.forward:
        return None
    totals: dict[str, int] = {}
    for f in o.forward:
        if f.version in by_version:
            totals[f.version] = totals.get(f.version, 0) + f.weight
    return max(totals, key=lambda v: (totals[v], v)) if totals else None


def _desired(o: Observed) -> tuple[Version | None, str]:
    g, spec = o.grouped, o.spec
    if spec.version:
        match = next(
            (
                v
                for v in g.versions
                if v.text == spec.version or str(v.parsed) == spec.version.lstrip("vV")
            ),
            None,
        )
        if match is None:
            return None, f"spec.version {spec.version} has no target groups"
        if match.text in o.blocked:
            return None, (
                f"spec.version {spec.version} is blocked ({o.blocked[match.text]}); "
                "remove it from the VersionBlocklist (okra retry) to use it"
            )
        return match, ""
    eligible = [
        v
        for v in g.versions
        if len(g.by_version[v.text]) >= spec.replicas and v.text not in o.blocked
    ]
    if eligible:
        return max(eligible, key=lambda v: v.parsed), ""
    if not g.versions:
        return None, "no AWSTargetGroups match the target group selector"
    return None, (
        f"waiting for a version with at least {spec.replicas} target group(s) "
        f"(have: {', '.join(f'{v.text}={len(g.by_version[v.text])}' for v in g.versions)})"
    )


def plan(o: Observed) -> Plan:
    """What to do next: the rollout's plan, then the gates that may hold it back."""
    p = _plan(o)
    _report_waiting(p, o)
    problem = _limit_problem(o, p.forward)
    if problem is not None:
        reason, message = problem
        return _hold(p, o, "Degraded", message, Event("Warning", reason, message))
    return _health_gate(p, o)


def _plan(o: Observed) -> Plan:
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
    desired, why = _desired(o)
    stable = _serving_version(o)
    if desired is None:
        if stable is None:
            _set_phase(p, o, "Progressing", why)
            return p
        desired = next(v for v in g.versions if v.text == stable)
    by_version = g.by_version
    if stable is None or o.forward is None:
        return _switch(p, o, desired, "first rollout", first=True)
    stable_v = next(v for v in g.versions if v.text == stable)
    if desired.parsed == stable_v.parsed:
        return _steady(p, o, stable_v, why)
    if desired.parsed < stable_v.parsed:
        return _switch(p, o, desired, f"rollback from {stable}", first=False)
    steps = o.spec.update_strategy.canary.steps if o.spec.update_strategy.canary else []
    if not steps and not (o.spec.update_strategy.canary and o.spec.update_strategy.canary.analysis):
        return _switch(p, o, desired, f"update from {stable} (no canary steps)", first=False)
    return _canary(p, o, stable_v, desired, list(steps), by_version)


def _waiting(o: Observed) -> tuple[Version, int] | None:
    """The newest version above every other that waits for `replicas` target groups
    (not pinned, not blocked), with how many it has."""
    if o.spec.version:
        return None
    g = o.grouped
    if not g.versions:
        return None
    newest = max(g.versions, key=lambda v: v.parsed)
    have = len(g.by_version[newest.text])
    if have >= o.spec.replicas or newest.text in o.blocked:
        return None
    return newest, have


def _report_waiting(p: Plan, o: Observed) -> None:
    """Condition `ReplicasReady` (and an Event when it turns False or its message
    changes): a newer version exists but has fewer target groups than `replicas`."""
    waiting = _waiting(o)
    old = next((c for c in p.status.conditions or [] if c.type == "ReplicasReady"), None)
    if waiting is None:
        if old is not None and old.status == "False":
            _condition(
                p.status,
                "ReplicasReady",
                True,
                "Ready",
                "no version waits for replicas",
                o.now,
                o.generation,
            )
        return
    version, have = waiting
    message = f"waiting for {version.text}: {have} of {o.spec.replicas} target groups"
    _condition(p.status, "ReplicasReady", False, "WaitingForReplicas", message, o.now, o.generation)
    if old is None or old.status != "False" or old.message != message:
        p.events.append(Event("Normal", "WaitingForReplicas", message))
    if p.status.message and message not in p.status.message:
        p.status.message = f"{p.status.message}; {message}"
    elif not p.status.message:
        p.status.message = message


def _limit_problem(o: Observed, forward: tuple[Forward, ...] | None) -> tuple[str, str] | None:
    """ALB limits the config would break, as (Event reason, what to fix)."""
    alb = o.spec.ingress.aws_application_load_balancer
    if alb is not None and alb.listener_rule is not None and not alb.listener_rule.has_condition():
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
            f"cannot route to {len(forward)} target groups ({names}): an ALB forward "
            f"action holds at most {MAX_FORWARD}; lower the number of target groups "
            "per version"
        )
    bad = [f for f in forward if not 0 <= f.weight <= MAX_WEIGHT]
    if bad:
        return "InvalidWeight", (
            f"weights out of range for {', '.join(f.name for f in bad)}: an ALB target "
            f"group weight is 0..{MAX_WEIGHT}"
        )
    return None


def _hold(
    p: Plan,
    o: Observed,
    phase: Literal["Progressing", "Degraded"],
    message: str,
    event: Event | None,
    condition: tuple[str, str] | None = None,
) -> Plan:
    """Hold the plan back: the status stays as observed but says why (phase, message,
    optional condition); nothing is created, no weight written. A failure's blocklist
    entry and the ending of runs and pauses that goes with it are kept (they only stop
    things)."""
    st = o.status.model_copy(deep=True)
    st.observed_generation = o.generation
    st.conditions = [c.model_copy() for c in p.status.conditions or []] or None
    held = Plan(forward=None, status=st, block=p.block, held=True)
    if p.block is not None:
        held.terminate_runs = list(p.terminate_runs)
        held.cancel_pauses = list(p.cancel_pauses)
    held.events = [e for e in p.events if e.reason in ("UnparsableVersion", "WaitingForReplicas")]
    if condition is not None:
        type_, reason = condition
        _condition(st, type_, False, reason, message, o.now, o.generation)
    _set_phase(held, o, phase, message)
    if event is not None and (o.status.message != message or o.status.phase != phase):
        held.events.append(event)
    return held


def _health_gate(p: Plan, o: Observed) -> Plan:
    """Hold weights back from a target group that never had weight until it has a
    healthy target. Health is observed input; unknown health asks for a look."""
    if p.forward is None:
        return p
    weighted = {f.arn for f in o.forward or () if f.weight > 0}
    new = sorted({f.arn for f in p.forward if f.weight > 0} - weighted)
    unknown = tuple(arn for arn in new if arn not in o.health)
    if unknown:
        names = ", ".join(f.name for f in p.forward if f.arn in unknown)
        held = _hold(
            p,
            o,
            "Progressing",
            f"checking for a healthy target in {names}",
            None,
        )
        held.needs_health = unknown
        return held
    unhealthy = [arn for arn in new if not o.health[arn]]
    if unhealthy:
        names = ", ".join(f.name for f in p.forward if f.arn in unhealthy)
        message = f"waiting for a healthy target in {names} before sending it traffic"
        return _hold(
            p,
            o,
            "Progressing",
            message,
            Event("Warning", "TargetGroupUnhealthy", message),
            ("TargetGroupsHealthy", "NoHealthyTargets"),
        )
    if any(c.type == "TargetGroupsHealthy" for c in p.status.conditions or []):
        _condition(
            p.status,
            "TargetGroupsHealthy",
            True,
            "HealthyTargets",
            "every target group given weight has a healthy target",
            o.now,
            o.generation,
        )
    return p


def _end_leftovers(p: Plan, o: Observed, keep: str | None = None) -> None:
    """Terminate the Cell's runs and cancel its Pauses still going, except those of the
    rollout `keep` (their names carry its ID)."""

    def stale(name: str) -> bool:
        return keep is None or f"-{keep}-" not in name

    for name, phase in sorted(o.runs.items()):
        if phase not in DONE_RUN and stale(name) and name not in p.terminate_runs:
            p.terminate_runs.append(name)
    for name, phase in sorted(o.pauses.items()):
        if phase not in DONE_PAUSE and stale(name) and name not in p.cancel_pauses:
            p.cancel_pauses.append(name)


def _end_rollout(p: Plan, o: Observed) -> None:
    st = p.status
    for name in sorted((st.analysis_runs or {}).values()):
        if name not in p.terminate_runs:
            p.terminate_runs.append(name)
    _end_leftovers(p, o)
    st.canary_version = None
    st.canary_weight = None
    st.current_step_index = None
    st.current_step_hash = None
    st.rollout_id = None
    st.step_started_at = None
    st.analysis_runs = None
    st.paused_reason = None
    st.aborted = None


def _weights_status(p: Plan) -> None:
    assert p.forward is not None
    p.status.target_groups = [
        TargetGroupWeight(name=f.name, arn=f.arn, weight=f.weight, version=f.version)
        for f in p.forward
    ]


def _applied(o: Observed, forward: tuple[Forward, ...]) -> bool:
    return (
        o.synced
        and o.forward is not None
        and sorted((f.arn, f.weight) for f in o.forward)
        == sorted((f.arn, f.weight) for f in forward)
    )


def _switch(p: Plan, o: Observed, to: Version, why: str, first: bool) -> Plan:
    """All weight to `to` at once (first rollout, rollback, step-less update)."""
    p.forward = forward_for([(o.grouped.by_version[to.text], 100)])
    _weights_status(p)
    if p.status.stable_version != to.text or p.status.canary_version:
        p.events.append(
            Event(
                "Normal", "RolledOut" if first else "Switched", f"{why}: all traffic to {to.text}"
            )
        )
    _end_rollout(p, o)
    p.status.stable_version = to.text
    if _applied(o, p.forward):
        _set_phase(p, o, "Healthy", f"{to.text} serves 100%")
    else:
        _set_phase(p, o, "Progressing", f"{why}: shifting all traffic to {to.text}")
    return p


def _steady(p: Plan, o: Observed, stable: Version, why: str) -> Plan:
    canary = p.status.canary_version
    if canary and canary in o.blocked and canary != stable.text:
        # The canary was blocked (by this controller in a pass whose status write was
        # lost, or by hand): this is the failure, reported as such.
        v = next((v for v in o.grouped.versions if v.text == canary), None)
        if v is not None:
            p.status.analysis_runs = p.status.analysis_runs or {}
            return _fail(p, o, stable, v, o.blocked[canary])
    p.forward = forward_for([(o.grouped.by_version[stable.text], 100)])
    _weights_status(p)
    if canary:
        _end_rollout(p, o)
    else:
        _end_leftovers(p, o)
    p.status.stable_version = stable.text
    if p.status.phase == "Degraded" and any(v in o.blocked for v in o.grouped.by_version):
        # A failure stays visible until a new rollout starts or the version is retried.
        _set_phase(p, o, "Degraded", p.status.message or "a version failed and is blocked")
    elif not _applied(o, p.forward):
        _set_phase(p, o, "Progressing", f"applying weights for {stable.text}")
    else:
        _set_phase(p, o, "Healthy", f"{stable.text} serves 100%" + (f"; {why}" if why else ""))
    return p


def _fail(p: Plan, o: Observed, stable: Version, canary: Version, cause: str) -> Plan:
    p.forward = forward_for([(o.grouped.by_version[stable.text], 100)])
    _weights_status(p)
    p.block = (canary.text, cause)
    _end_rollout(p, o)
    message = f"version {canary.text} failed: {cause}; all traffic back to {stable.text}"
    p.events.append(Event("Warning", "RolloutFailed", message))
    _set_phase(p, o, "Degraded", message)
    return p


def _canary(
    p: Plan,
    o: Observed,
    stable: Version,
    canary: Version,
    steps: list[CanaryStep],
    by_version: dict[str, list[TargetGroup]],
) -> Plan:
    st = p.status
    h = step_hash(canary.text, o.spec)
    resumed = bool(st.aborted) and o.abort != st.rollout_id  # retry after abort: start over
    if (
        st.canary_version != canary.text
        or st.current_step_hash != h
        or resumed
        or st.rollout_id is None
    ):
        _end_rollout(p, o)
        st.canary_version, st.current_step_hash = canary.text, h
        st.current_step_index, st.step_started_at = 0, o.now
        st.rollout_id = rollout_id(h, o.now)
        st.analysis_runs, st.paused_reason, st.aborted = {}, None, None
        p.events.append(
            Event("Normal", "RolloutStarted", f"canary {canary.text} from {stable.text}")
        )
    rid = st.rollout_id
    assert rid is not None
    _end_leftovers(p, o, keep=rid)
    runs = dict(st.analysis_runs or {})
    stable_tgs, canary_tgs = by_version[stable.text], by_version[canary.text]

    def at(weight: int) -> tuple[Forward, ...]:
        return forward_for([(stable_tgs, 100 - weight), (canary_tgs, weight)])

    if o.abort == rid:
        p.forward = forward_for([(stable_tgs, 100)])
        _weights_status(p)
        if not st.aborted:
            p.events.append(
                Event(
                    "Warning",
                    "RolloutAborted",
                    f"rollout of {canary.text} aborted; all traffic on {stable.text}",
                )
            )
        st.aborted = True
        st.canary_weight = 0
        p.terminate_runs.extend(sorted(runs.values()))
        _end_leftovers(p, o)
        _set_phase(
            p,
            o,
            "Degraded",
            f"rollout of {canary.text} aborted; all traffic on {stable.text} (okra retry resumes)",
        )
        return p
    i = st.current_step_index or 0
    if o.promote == f"{rid}/full":
        i = len(steps)
    background = o.spec.update_strategy.canary.analysis if o.spec.update_strategy.canary else None
    paused: str | None = None
    requested: set[str] = set()

    def ensure_run(name: str, analysis: StepAnalysis, bg: bool) -> str:
        if name not in o.runs and name not in requested:
            requested.add(name)
            p.create_runs.append(RunRequest(name, analysis, bg))
        return o.runs.get(name, "")

    while True:
        # Background analysis from its starting step (0 by default) until the end.
        if background is not None and i >= (background.starting_step or 0) and i < len(steps):
            name = runs.setdefault("background", run_name(o.cell_name, canary.text, rid, "bg"))
            phase = ensure_run(name, background, True)
            if phase in FAILED_RUN:
                st.analysis_runs = runs
                return _fail(p, o, stable, canary, f"background analysis {name} {phase}")
            if phase == "Inconclusive" and o.promote != f"{rid}/{i}":
                paused = f"background analysis {name} is inconclusive"
        if i >= len(steps):
            break
        step = steps[i]
        if step.set_weight is not None or step.step_weight is not None:
            target = at(weight_before(steps, i + 1))
            if _applied(o, target):
                i += 1
                continue
            p.forward = target
            break
        if step.pause is not None:
            name = run_name(o.cell_name, canary.text, rid, f"pause-{i}")
            pause_phase = o.pauses.get(name)
            if pause_phase is None:
                expire = _expiry(step, o.now)
                p.create_pause = PauseRequest(name, expire)
                paused = paused or (
                    f"paused at step {i + 1} until {expire.isoformat()}"
                    if expire
                    else f"paused at step {i + 1} until promoted"
                )
                break
            if pause_phase in DONE_PAUSE or o.promote == f"{rid}/{i}":
                i += 1
                continue
            paused = paused or (
                f"paused at step {i + 1} for {step.pause.duration}"
                if step.pause.duration not in (None, "")
                else f"paused at step {i + 1} until promoted"
            )
            break
        if step.analysis is not None:
            name = runs.setdefault(
                f"step-{i}", run_name(o.cell_name, canary.text, rid, f"step-{i}")
            )
            phase = ensure_run(name, step.analysis, False)
            if phase == "Successful" or (phase == "Inconclusive" and o.promote == f"{rid}/{i}"):
                i += 1
                continue
            if phase in FAILED_RUN:
                st.analysis_runs = runs
                return _fail(p, o, stable, canary, f"analysis {name} {phase}")
            if phase == "Inconclusive":
                paused = (
                    f"analysis {name} at step {i + 1} is inconclusive: okra promote to "
                    "continue, okra abort to roll back"
                )
            break
        i += 1  # a step kind okra does not know (the CRD rejects these)
    if i != (st.current_step_index or 0):
        st.step_started_at = o.now
    st.current_step_index = i
    st.analysis_runs = runs
    if i >= len(steps):
        p.forward = at(100)
        if _applied(o, p.forward):
            _weights_status(p)
            _end_rollout(p, o)
            st.stable_version = canary.text
            p.events.append(Event("Normal", "RolloutCompleted", f"{canary.text} serves 100%"))
            _set_phase(p, o, "Healthy", f"{canary.text} serves 100%")
            return p
    elif p.forward is None:
        p.forward = at(weight_before(steps, i))
    _weights_status(p)
    st.canary_weight = sum(f.weight for f in p.forward if f.version == canary.text)
    st.stable_version = stable.text
    if paused:
        st.paused_reason = "Inconclusive" if "inconclusive" in paused else "Pause"
        _set_phase(p, o, "Paused", f"canary {canary.text} at {st.canary_weight}%: {paused}")
    else:
        st.paused_reason = None
        step_text = f"step {i + 1}/{len(steps)}" if i < len(steps) else "final step"
        _set_phase(
            p, o, "Progressing", f"canary {canary.text} at {st.canary_weight}% ({step_text})"
        )
    return p


def _expiry(step: CanaryStep, now: datetime.datetime) -> datetime.datetime | None:
    assert step.pause is not None
    d = step.pause.duration
    if d is None or d == "":
        return None
    seconds = float(d) if isinstance(d, int) or d.isdigit() else parse_duration(d)
    return now + datetime.timedelta(seconds=seconds)
