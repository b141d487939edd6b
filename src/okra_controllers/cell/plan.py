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
- A newer version with fewer than `replicas` target groups is reported as
  waiting (condition `ReplicasReady`, an Event when that changes, the message).
- Ending a rollout (completion, rollback, failure, abort, restart) terminates
  its AnalysisRuns and cancels its Pauses.
- Progress deadline (`progressDeadlineSeconds`, Argo Rollouts' meaning): a
  Progressing Cell that makes no progress that long is reported; with
  `progressDeadlineAbort` its canary fails (stable back to 100, version blocked).
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.cell import (
    BackgroundAnalysis,
    CanaryStep,
    CellSpec,
    CellStatus,
    CheckResult,
    RolloutCheck,
    StepAnalysis,
    TargetGroupWeight,
)
from okra_controllers.api.v1alpha1.common import Condition
from okra_controllers.cell.argocd import ClusterView
from okra_controllers.cell.versions import (
    Grouped,
    TargetGroup,
    Version,
    parse_version,
    split_evenly,
)

EventType = Literal["Normal", "Warning"]
Stage = Literal["precheck", "postcheck"]
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
    # target group ARN -> what AWS said refusing to describe it (it does not exist, a
    # permission is missing): such a group has no healthy target, and the status says why
    health_problems: Mapping[str, str] = field(default_factory=dict)
    paused: bool = False  # okra.mumo.co/pause annotation: hold before the next step
    # the Cell's check Jobs: name -> (Running | Succeeded | Failed, why it ended)
    jobs: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # the Cell's Argo CD clusters and their Applications (None: the Cell has no spec.argocd);
    # for a Cell with no load balancer `grouped` holds the clusters, one "target group" each.
    clusters: ClusterView | None = None
    # why the load balancer config cannot apply its spec ("AWSError: ...", from its
    # `Synced` condition for its current generation); "" when it can or has not said
    config_problem: str = ""
    # Pause name -> its `spec.expireTime`: a Pause past it is over, whether or not the
    # Pause controller has written `Expired` yet (its status write, and the Cell's
    # reaction to it, would add two API round trips to every timed pause).
    pause_expiry: Mapping[str, datetime.datetime] = field(default_factory=dict)
    # now to the microsecond (None: `now`, which is to the second, as status times are):
    # a timed Pause is given its expireTime and ended by it, so that it lasts its
    # duration, not up to a second less
    exact_now: datetime.datetime | None = None

    @property
    def pause_clock(self) -> datetime.datetime:
        """The time timed Pauses are set and ended by."""
        return self.exact_now or self.now


@dataclass(frozen=True)
class RunRequest:
    name: str
    analysis: StepAnalysis
    background: bool


@dataclass(frozen=True)
class JobRequest:
    name: str
    check: RolloutCheck
    stage: Stage
    forward_hash: str


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
    requeue_after: float | None = None  # seconds until the progress deadline passes
    wake_after: float | None = None  # seconds until the Pause the plan waits on expires
    create_jobs: list[JobRequest] = field(default_factory=list)
    label: list[str] = field(default_factory=list)  # cluster Secrets to give the app labels
    unlabel: list[str] = field(default_factory=list)  # cluster Secrets to take them from


def step_hash(version: str, spec: CellSpec) -> str:
    canary = spec.update_strategy.canary
    parts: list[object] = [
        version,
        canary.model_dump(mode="json", by_alias=True) if canary else None,
    ]
    blue_green = spec.update_strategy.blue_green
    if spec.update_strategy.type == "BlueGreen":
        parts.append(blue_green.model_dump(mode="json", by_alias=True) if blue_green else None)
    raw = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def _blue_green(spec: CellSpec) -> bool:
    return spec.update_strategy.type == "BlueGreen"


def steps_of(spec: CellSpec) -> list[CanaryStep]:
    """The strategy's steps as canary steps. BlueGreen is a canary whose only weights
    are 0 and 100: `analysis` runs while the new version has no traffic, `promote: {}`
    is `setWeight: 100` (everything moves at once, and only once AWS shows it does the
    step complete), and what follows runs with the new version serving."""
    strategy = spec.update_strategy
    if _blue_green(spec):
        return [
            CanaryStep(analysis=s.analysis)
            if s.analysis is not None
            else CanaryStep(set_weight=100)
            for s in (strategy.blue_green.steps if strategy.blue_green else [])
        ]
    return list(strategy.canary.steps) if strategy.canary else []


def _background(spec: CellSpec) -> BackgroundAnalysis | None:
    """Background analysis: a Canary's only."""
    canary = spec.update_strategy.canary
    return canary.analysis if canary is not None and not _blue_green(spec) else None


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
    """The Cell's health (and its conditions) and, from it, its lifecycle phase: Healthy
    is Completed, Degraded is Error; a Cell on its way is Migrating unless this pass put
    it in Init or Completing (set before this call)."""
    st = p.status
    st.health = phase
    if phase == "Healthy":
        st.phase = "Completed"
    elif phase == "Degraded":
        st.phase = "Error"
    elif st.phase not in ("Init", "Completing"):
        st.phase = "Migrating"
    st.message = message
    g, now = o.generation, o.now
    _condition(st, "Progressing", phase in ("Progressing", "Paused"), phase, message, now, g)
    _condition(st, "Healthy", phase == "Healthy", phase, message, now, g)
    _condition(st, "Paused", phase == "Paused", st.paused_reason or phase, message, now, g)
    _condition(st, "Degraded", phase == "Degraded", phase, message, now, g)


def _add_to_message(status: CellStatus, message: str) -> None:
    """Add `message` to what the status message already says (once): a condition that
    holds the rollout back is said beside the phase's own message, not instead of it."""
    if not status.message:
        status.message = message
    elif message not in status.message:
        status.message = f"{status.message}; {message}"


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
    if o.spec.ingress is None:
        p = _deadline(_clusters_only(o), o)
    else:
        p = _deadline(_gated(o), o)
        _relabel_serving(p, o)
    _report_load_balancer(p, o)
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


def _report_load_balancer(p: Plan, o: Observed) -> None:
    """Condition `LoadBalancerSynced` (and a Warning Event when it turns False or its
    message changes): the load balancer config this Cell writes cannot apply its spec
    (AWS refuses it: a listener or target group that does not exist, a permission
    missing), so no weight moves until the cause is fixed; the message says it."""
    old = next((c for c in p.status.conditions or [] if c.type == "LoadBalancerSynced"), None)
    if not o.config_problem or p.forward is None or _applied(o, p.forward):
        if old is not None and old.status == "False":
            message = "the load balancer config applies its spec"
            _condition(p.status, "LoadBalancerSynced", True, "Synced", message, o.now, o.generation)
        return
    reason, _, said = o.config_problem.partition(": ")
    message = f"the load balancer config cannot be applied ({reason}): {said}"
    _condition(
        p.status, "LoadBalancerSynced", False, reason or "NotSynced", message, o.now, o.generation
    )
    if old is None or old.status != "False" or old.message != message:
        p.events.append(Event("Warning", "LoadBalancerNotSynced", message))
    _add_to_message(p.status, message)


def _deadline(p: Plan, o: Observed) -> Plan:
    """Argo Rollouts' progress deadline. The clock (`lastProgressTime`) runs while the
    Cell is Progressing and restarts at each step; a Paused or settled Cell has none.
    Exceeded: condition `Progressing` False (reason `ProgressDeadlineExceeded`), one
    Event, a requeue at the deadline; with `progressDeadlineAbort`, a canary is failed
    (stable back to 100, the version blocked) as a failed analysis would."""
    st = p.status
    if st.health != "Progressing":
        st.last_progress_time = None
        return p
    since = st.last_progress_time or o.now
    st.last_progress_time = since
    limit = o.spec.progress_deadline_seconds
    if limit is None:
        return p
    waited = (o.now - since).total_seconds()
    if waited < limit:
        p.requeue_after = limit - waited
        return p
    stuck = f": {st.message}" if st.message else ""
    message = (
        f"no progress since {since.isoformat().replace('+00:00', 'Z')}, more than "
        f"progressDeadlineSeconds ({limit}s){stuck}"
    )
    before = next(
        (
            c
            for c in o.status.conditions or []
            if c.type == "Progressing" and c.reason == "ProgressDeadlineExceeded"
        ),
        None,
    )
    versions = {v.text: v for v in o.grouped.versions}
    canary, stable = st.canary_version, st.stable_version
    if (
        o.spec.progress_deadline_abort
        and canary in versions
        and stable in versions
        and canary != stable
        and canary is not None
        and stable is not None
    ):
        failed = Plan(forward=None, status=st)
        failed.events = [e for e in p.events if e.type == "Warning"]
        failed.events.append(Event("Warning", "ProgressDeadlineExceeded", message))
        st.last_progress_time = None
        return _fail(failed, o, versions[stable], versions[canary], message)
    _condition(st, "Progressing", False, "ProgressDeadlineExceeded", message, o.now, o.generation)
    st.message = message
    if before is None:
        p.events.append(Event("Warning", "ProgressDeadlineExceeded", message))
    else:  # still exceeded: the same condition, so an idle stuck Cell writes nothing new
        st.conditions = [
            c.model_copy(update={"last_transition_time": before.last_transition_time})
            if c.type == "Progressing"
            else c
            for c in st.conditions or []
        ]
    return p


def _gated(o: Observed) -> Plan:
    p = _plan(o)
    _report_waiting(p, o)
    problem = _limit_problem(o, p.forward)
    if problem is not None:
        reason, message = problem
        return _hold(p, o, "Degraded", message, Event("Warning", reason, message))
    held = _argocd_gate(p, o)
    if held is not None:
        return held
    held = _analysis_health_gate(p, o)
    if held is not None:
        return held
    return _health_gate(p, o)


def _analysis_health_gate(p: Plan, o: Observed) -> Plan | None:
    """BlueGreen: the new version's target groups need a healthy target before an
    analysis is started against them (they have no traffic yet, so the load balancer's
    health checks are the only sign they serve at all)."""
    canary = p.status.canary_version
    if not _blue_green(o.spec) or not canary or not p.create_runs:
        return None
    serving = {f.arn for f in p.forward or () if f.weight > 0}
    tgs = [(tg.name, tg.arn) for tg in o.grouped.by_version.get(canary, [])]
    return _wait_for_health(
        p, o, [t for t in tgs if t[1] not in serving], f"before analysing {canary}"
    )


def _wait_for_health(p: Plan, o: Observed, tgs: list[tuple[str, str]], before: str) -> Plan | None:
    """`p` held until each of these (name, ARN) target groups has a healthy target, saying
    which one it waits for `before` what; None when they all have one. Health is observed
    input; unknown health asks for a look (`needs_health`)."""
    unknown = tuple(arn for _, arn in tgs if arn not in o.health)
    if unknown:
        names = ", ".join(name for name, arn in tgs if arn in unknown)
        held = _hold(p, o, "Progressing", f"checking for a healthy target in {names}", None)
        held.needs_health = unknown
        return held
    unhealthy = [(name, arn) for name, arn in tgs if not o.health[arn]]
    if not unhealthy:
        return None
    message = f"waiting for a healthy target in {', '.join(n for n, _ in unhealthy)} {before}"
    problems = _refused(o, unhealthy)
    if problems:
        message = f"{message}; {problems}"
    return _hold(
        p,
        o,
        "Progressing",
        message,
        Event("Warning", "TargetGroupUnhealthy", message),
        ("TargetGroupsHealthy", "TargetGroupRefused" if problems else "NoHealthyTargets"),
    )


def _refused(o: Observed, tgs: list[tuple[str, str]]) -> str:
    """What AWS said refusing to describe these (name, ARN) target groups; "" if none."""
    said = [
        f"AWSTargetGroup {name}: {o.health_problems[arn]}"
        for name, arn in tgs
        if arn in o.health_problems
    ]
    return f"AWS refuses to describe it: {'; '.join(said)}" if said else ""


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
        if stable is None and o.status.health == "Degraded" and o.blocked:
            # A first rollout failed its checks: the failure stays visible (okra retry).
            _set_phase(p, o, "Degraded", o.status.message or "a version failed and is blocked")
            return p
        if stable is None:
            p.status.phase = "Init"
            _set_phase(p, o, "Progressing", why)
            return p
        desired = next(v for v in g.versions if v.text == stable)
    by_version = g.by_version
    if (
        _has_checks(o.spec)
        and o.status.stable_version is None
        and (stable is None or o.status.canary_version == desired.text)
    ):
        # The first rollout (its own config, once written, shows `desired` serving).
        return _first_with_checks(p, o, desired)
    if stable is None or o.forward is None:
        return _switch(p, o, desired, "first rollout", first=True)
    stable_v = next(v for v in g.versions if v.text == stable)
    if desired.parsed == stable_v.parsed:
        return _steady(p, o, stable_v, why)
    if desired.parsed < stable_v.parsed:
        return _switch(p, o, desired, f"rollback from {stable}", first=False)
    steps = steps_of(o.spec)
    if not steps and _background(o.spec) is None and not _has_checks(o.spec):
        return _switch(p, o, desired, f"update from {stable} (no steps)", first=False)
    return _canary(p, o, stable_v, desired, steps, by_version)


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
    _add_to_message(p.status, message)


def _limit_problem(o: Observed, forward: tuple[Forward, ...] | None) -> tuple[str, str] | None:
    """Load balancer limits the config would break, as (Event reason, what to fix). An
    NLB forward has the ALB's limits (5 target groups, weights 0..999) and no rule."""
    assert o.spec.ingress is not None
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
    if event is not None and (o.status.message != message or o.status.health != phase):
        held.events.append(event)
    return held


def _health_gate(p: Plan, o: Observed) -> Plan:
    """Hold weights back from a target group that never had weight until it has a
    healthy target."""
    if p.forward is None:
        return p
    weighted = {f.arn for f in o.forward or () if f.weight > 0}
    new = sorted({f.arn for f in p.forward if f.weight > 0} - weighted)
    names = {f.arn: f.name for f in reversed(p.forward)}  # an ARN's first name in forward
    held = _wait_for_health(p, o, [(names[arn], arn) for arn in new], "before sending it traffic")
    if held is not None:
        return held
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
    for name in sorted(o.pauses):
        if not _pause_over(o, name) and stale(name) and name not in p.cancel_pauses:
            p.cancel_pauses.append(name)


def _pause_over(o: Observed, name: str) -> bool:
    """The Pause has expired or been cancelled: by its status, or by its `expireTime`
    having passed before the Pause controller said so."""
    expiry = o.pause_expiry.get(name)
    return o.pauses.get(name) in DONE_PAUSE or (expiry is not None and expiry <= o.pause_clock)


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
    st.rollback_at = None


def _postcheck_failed(p: Plan, o: Observed, said: str, fail: Callable[[], Plan]) -> Plan:
    """A failed postcheck rolls back after `rollbackDelaySeconds` (seed 002: "run-test
    failed. Waiting 60 seconds before starting a rollback"). The time is in the status
    (`rollbackAt`), so a restarted manager waits out the same delay, not a new one."""
    st = p.status
    delay = o.spec.rollback_delay_seconds
    if st.rollback_at is None:
        st.rollback_at = o.now + datetime.timedelta(seconds=delay)
    if o.now >= st.rollback_at:
        return fail()
    message = f"{said}. Waiting {delay} seconds before starting a rollback"
    if o.status.rollback_at is None:
        p.events.append(Event("Warning", "PostcheckFailed", message))
    st.phase = "Error"
    _set_phase(p, o, "Degraded", message)
    p.requeue_after = (st.rollback_at - o.now).total_seconds()
    return p


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


def _first_with_checks(p: Plan, o: Observed, to: Version) -> Plan:
    """The first rollout (no version serves yet) of a Cell with checks: prechecks before
    the load balancer config is written, then all traffic to `to`, then postchecks. A
    failed precheck blocks the version with nothing written; a failed postcheck (after
    the rollback delay) blocks it and leaves it serving: there is nothing to go back to."""
    st = p.status
    if st.canary_version != to.text or st.rollout_id is None:
        _end_rollout(p, o)
        st.canary_version, st.current_step_hash = to.text, step_hash(to.text, o.spec)
        st.step_started_at = st.last_progress_time = o.now
        st.rollout_id = rollout_id(st.current_step_hash, o.now)
        p.events.append(Event("Normal", "RolloutStarted", f"first rollout: {to.text}"))
    rid = st.rollout_id
    assert rid is not None
    _end_leftovers(p, o, keep=rid)
    target = forward_for([(o.grouped.by_version[to.text], 100)])
    fhash = forward_hash(target)

    def failed(cause: str, serving: str) -> Plan:
        p.block = (to.text, cause)
        _end_rollout(p, o)
        message = f"version {to.text} failed: {cause}; {serving}"
        p.events.append(Event("Warning", "RolloutFailed", message))
        _set_phase(p, o, "Degraded", message)
        return p

    if o.spec.prechecks:
        verdict, said = _checks(p, o, "precheck", o.spec.prechecks, fhash, rid, to.text)
        if verdict == "failed":
            return failed(f"{said}; {to.text} is blocked", "nothing serves yet")
        if verdict == "pending":
            st.phase = "Init"
            _set_phase(p, o, "Progressing", f"Init: {said}; no traffic moves to {to.text}")
            return p
    p.forward = target
    _weights_status(p)
    st.canary_weight = 100
    if not _applied(o, target):
        st.phase = "Migrating"
        _set_phase(p, o, "Progressing", f"first rollout: shifting all traffic to {to.text}")
        return p
    if o.spec.postchecks:
        verdict, said = _checks(p, o, "postcheck", o.spec.postchecks, fhash, rid, to.text)
        if verdict == "failed":
            return _postcheck_failed(
                p,
                o,
                said,
                lambda: failed(
                    f"{said}; {to.text} is blocked",
                    f"{to.text} keeps serving: no earlier version to roll back to",
                ),
            )
        if verdict == "pending":
            st.phase = "Completing"
            _set_phase(p, o, "Progressing", f"Completing: {to.text} serves 100%; {said}")
            return p
    _end_rollout(p, o)
    st.stable_version = to.text
    p.events.append(Event("Normal", "RolledOut", f"first rollout: all traffic to {to.text}"))
    _set_phase(p, o, "Healthy", f"{to.text} serves 100%")
    return p


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
        p.status.phase = "Migrating"
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
    if p.status.health == "Degraded" and any(v in o.blocked for v in o.grouped.by_version):
        # A failure stays visible until a new rollout starts or the version is retried.
        _set_phase(p, o, "Degraded", p.status.message or "a version failed and is blocked")
    elif not _applied(o, p.forward):
        p.status.phase = "Migrating"
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


def _has_checks(spec: CellSpec) -> bool:
    return bool(spec.prechecks or spec.postchecks)


def forward_hash(forward: tuple[Forward, ...]) -> str:
    """The forward config a check runs for (seed 002: results are paired with it)."""
    raw = json.dumps(sorted((f.arn, f.weight) for f in forward))
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def job_name(cell: str, rollout: str, stage: Stage, check: str) -> str:
    """One Job per rollout and check: a restarted manager finds it by name."""
    return f"{_dns(cell)[:24]}-{rollout}-{stage[:4]}-{check}".strip("-")


def _checks(
    p: Plan,
    o: Observed,
    stage: Stage,
    checks: list[RolloutCheck],
    fhash: str,
    rollout: str,
    version: str,
) -> tuple[Literal["passed", "pending", "failed"], str]:
    """Run `checks` in order: a check with a recorded success for this forward config is
    not run again; otherwise its Job (one per rollout and check) is created if missing
    and its outcome recorded. Returns the verdict and, unless passed, what to say."""
    st = p.status
    recorded = {(r.stage, r.name): r for r in st.checks or []}
    for check in checks:
        old = recorded.get((stage, check.name))
        if old is not None and old.forward_hash == fhash and old.phase == "Succeeded":
            continue
        if check.analysis is not None:
            name = run_name(o.cell_name, version, rollout, f"{stage[:4]}-{check.name}")
            run = o.runs.get(name)
            if run is None and not any(r.name == name for r in p.create_runs):
                p.create_runs.append(RunRequest(name, check.analysis, False))
            seen = {"Successful": "Succeeded", None: "", "": "", "Running": "", "Pending": ""}.get(
                run, "Failed"
            )
            why = f"AnalysisRun {name} {run}" if seen == "Failed" else ""
        else:
            name = job_name(o.cell_name, rollout, stage, check.name)
            seen, why = o.jobs.get(name, ("", ""))
            if not seen:
                p.create_jobs.append(JobRequest(name, check, stage, fhash))
        phase: Literal["Running", "Succeeded", "Failed"] = (
            "Succeeded" if seen == "Succeeded" else "Failed" if seen == "Failed" else "Running"
        )
        recorded[(stage, check.name)] = CheckResult(
            name=check.name, stage=stage, forward_hash=fhash, job=name, phase=phase, message=why
        )
        st.checks = sorted(recorded.values(), key=lambda r: (r.stage != "precheck", r.name))
        if phase == "Succeeded":
            continue
        if phase == "Failed":
            kind = "Job" if check.analysis is None else "analysis"
            return "failed", f"{stage} {check.name} failed ({kind} {name}: {why or 'failed'})"
        kind = "Job" if check.analysis is None else "AnalysisRun"
        return "pending", f"{stage} {check.name} running ({kind} {name})"
    return "passed", ""


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
        st.last_progress_time = o.now
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
    fhash = forward_hash(at(100))
    if o.spec.prechecks:
        verdict, said = _checks(p, o, "precheck", o.spec.prechecks, fhash, rid, canary.text)
        if verdict == "failed":
            return _fail(p, o, stable, canary, f"{said}; {canary.text} is blocked")
        if verdict == "pending":
            st.phase = "Init"
            p.forward = at(weight_before(steps, i))
            _weights_status(p)
            st.canary_weight = sum(f.weight for f in p.forward if f.version == canary.text)
            _set_phase(p, o, "Progressing", f"Init: {said}; no traffic moves to {canary.text}")
            return p
    st.phase = "Migrating"
    if o.promote == f"{rid}/full":
        i = len(steps)
    background = _background(o.spec)
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
        weight_step = step.set_weight is not None or step.step_weight is not None
        if o.paused and not (weight_step and _applied(o, at(weight_before(steps, i + 1)))):
            # Held before this step; a weight step already written is kept, not undone.
            paused = paused or f"paused by okra pause before step {i + 1} (okra promote resumes)"
            target = at(weight_before(steps, i + 1))
            if (
                weight_step
                and o.forward is not None
                and sorted((f.arn, f.weight) for f in o.forward)
                == sorted((f.arn, f.weight) for f in target)
            ):
                p.forward = target
            break
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
                expire = _expiry(step, o.pause_clock)
                p.create_pause = PauseRequest(name, expire)
                if expire is not None:
                    p.wake_after = (expire - o.pause_clock).total_seconds()
                paused = paused or (
                    f"paused at step {i + 1} until {expire.isoformat(timespec='milliseconds')}"
                    if expire
                    else f"paused at step {i + 1} until promoted"
                )
                break
            if _pause_over(o, name) or o.promote == f"{rid}/{i}":
                i += 1
                continue
            expiry = o.pause_expiry.get(name)
            if expiry is not None:
                p.wake_after = (expiry - o.pause_clock).total_seconds()
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
        st.last_progress_time = o.now
    st.current_step_index = i
    st.analysis_runs = runs
    if i >= len(steps):
        p.forward = at(100)
        if _applied(o, p.forward) and o.spec.postchecks:
            verdict, said = _checks(p, o, "postcheck", o.spec.postchecks, fhash, rid, canary.text)
            if verdict == "failed":
                _weights_status(p)
                st.canary_weight = 100
                return _postcheck_failed(
                    p, o, said, lambda: _fail(p, o, stable, canary, f"{said}. Rolling back")
                )
            if verdict == "pending":
                st.phase = "Completing"
                _weights_status(p)
                st.canary_weight = 100
                if i != (st.current_step_index or 0):
                    st.step_started_at = st.last_progress_time = o.now
                st.current_step_index = i
                st.analysis_runs = runs
                _set_phase(p, o, "Progressing", f"Completing: {canary.text} serves 100%; {said}")
                return p
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
        st.paused_reason = (
            "Inconclusive"
            if "inconclusive" in paused
            else "PausedByUser"
            if paused.startswith("paused by okra pause")
            else "Pause"
        )
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


# -- Argo CD cluster Secret strategies (seed 002) -----------------------------------


def _incoming(o: Observed, view: ClusterView) -> str | None:
    """The version the Cell heads for, read from its clusters (a new version's target groups
    may only appear once the app runs on its clusters): `spec.version`, else the newest
    version with a cluster that is not blocked."""
    if o.spec.version:
        return o.spec.version
    blocked = {_norm(v) for v in o.blocked}
    versions = [
        v
        for v in (parse_version(c.version) for c in view.clusters)
        if v is not None and str(v.parsed) not in blocked
    ]
    return str(max(versions).parsed) if versions else None


def _norm(version: str) -> str:
    v = parse_version(version)
    return str(v.parsed) if v is not None else version


def _relabel(p: Plan, o: Observed, keep: set[str]) -> None:
    """Labels so that exactly the clusters of `keep` carry the app. DeleteBeforeCreate
    adds labels only once every other version's clusters have lost them and Argo CD has
    removed their Applications."""
    view, argo = o.clusters, o.spec.argocd
    if view is None or argo is None or not view.served:
        return
    keep = {v for v in keep if v}
    label, unlabel = view.relabel(keep)
    if argo.delete_first and label:
        wanted = {_norm(v) for v in keep}
        others = sorted({c.version for c in view.clusters} - wanted)
        if unlabel or any(not view.gone(v)[0] for v in others):
            label = []
    p.label, p.unlabel = label, unlabel


def _relabel_serving(p: Plan, o: Observed) -> None:
    """A Cell behind a load balancer (CreateBeforeDelete): the serving version, the canary
    and the incoming version keep the app; the others lose it. The old version leaves only
    once the new one is stable (completed, postchecks passed)."""
    if o.clusters is None or o.spec.argocd is None:
        return
    st = p.status
    _relabel(
        p, o, {st.stable_version or "", st.canary_version or "", _incoming(o, o.clusters) or ""}
    )


def _argocd_gate(p: Plan, o: Observed) -> Plan | None:
    """CreateBeforeDelete behind a load balancer: no traffic moves to a version (and no
    precheck runs against it) until every Application on its clusters is Synced and
    Healthy."""
    argo, view = o.spec.argocd, o.clusters
    if argo is None or view is None:
        return None
    if not view.served:
        message = (
            "spec.argocd needs Argo CD: the Application kind (argoproj.io/v1alpha1) is not "
            "served by this cluster; install Argo CD (and restart okra-manager) or remove "
            "spec.argocd"
        )
        return _hold(p, o, "Degraded", message, Event("Warning", "ArgoCDMissing", message))
    if argo.delete_first:  # the CRD refuses this; an object stored before the rule was not
        message = (
            "spec.argocd.updateStrategy.type DeleteBeforeCreate is for apps with no load "
            "balancer: remove spec.ingress, or use CreateBeforeDelete"
        )
        return _hold(p, o, "Degraded", message, Event("Warning", "InvalidStrategy", message))
    before: dict[str, int] = {}
    for f in o.forward or ():
        before[f.version] = before.get(f.version, 0) + f.weight
    after: dict[str, int] = {}
    for f in p.forward or ():
        after[f.version] = after.get(f.version, 0) + f.weight
    moving = {v for v, w in after.items() if w > before.get(v, 0)}
    if p.status.canary_version and p.status.canary_version != p.status.stable_version:
        moving.add(p.status.canary_version)
    for version in sorted(moving):
        ok, why = view.ready(version)
        if ok:
            continue
        message = f"Init: waiting for Argo CD to deploy onto the clusters of {version}: {why}"
        held = _hold(
            p,
            o,
            "Progressing",
            message,
            Event("Normal", "WaitingForApplications", message),
            ("ApplicationsReady", "WaitingForArgoCD"),
        )
        held.status.phase = "Init"
        return held
    if any(c.type == "ApplicationsReady" for c in p.status.conditions or []):
        _condition(
            p.status,
            "ApplicationsReady",
            True,
            "SyncedAndHealthy",
            "the Applications on the clusters given traffic are Synced and Healthy",
            o.now,
            o.generation,
        )
    return None


def _clusters_hash(o: Observed, version: str) -> str:
    """What a check of a Cell with no load balancer runs for: the version's clusters."""
    names = sorted(tg.name for tg in o.grouped.by_version.get(version, []))
    raw = json.dumps([version, names])
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def _clusters_only(o: Observed) -> Plan:
    """A Cell with no load balancer (seed 002's background jobs): its versions are its Argo
    CD clusters (`grouped` holds one entry per cluster Secret), and a rollout moves the app
    labels: Init (prechecks) → Migrating (labels moved by the strategy, waiting for Argo CD)
    → Completing (postchecks) → Completed, or Error."""
    st = o.status.model_copy(deep=True)
    st.observed_generation = o.generation
    p = Plan(forward=None, status=st)
    view, argo = o.clusters, o.spec.argocd
    if argo is None or view is None:  # the CRD requires ingress or argocd
        _set_phase(p, o, "Degraded", "a Cell needs spec.ingress or spec.argocd")
        return p
    if not view.served:
        held = _argocd_gate(p, o)
        assert held is not None
        return held
    for name, value in o.grouped.unparsable:
        p.events.append(
            Event(
                "Warning",
                "UnparsableVersion",
                f"cluster Secret {name}: version label {value!r} is not a version; ignored",
            )
        )
    g = o.grouped
    desired, why = _desired(o)
    stable = st.stable_version if st.stable_version in g.by_version else None
    if desired is None:
        if stable is None:
            st.phase = "Init"
            _set_phase(p, o, "Progressing", why.replace("AWSTargetGroups", "cluster Secrets"))
            return p
        desired = next(v for v in g.versions if v.text == stable)
    n = len(g.by_version[desired.text])
    if desired.text == stable:
        return _clusters_steady(p, o, view, stable, n)
    if st.canary_version != desired.text or st.rollout_id is None:
        _end_rollout(p, o)
        st.canary_version, st.current_step_hash = desired.text, step_hash(desired.text, o.spec)
        st.step_started_at = st.last_progress_time = o.now
        st.rollout_id = rollout_id(st.current_step_hash, o.now)
        p.events.append(
            Event(
                "Normal",
                "RolloutStarted",
                f"{desired.text} onto {n} cluster(s)" + (f", from {stable}" if stable else ""),
            )
        )
    rid = st.rollout_id
    assert rid is not None
    _end_leftovers(p, o, keep=rid)
    fhash = _clusters_hash(o, desired.text)
    if o.spec.prechecks:
        verdict, said = _checks(p, o, "precheck", o.spec.prechecks, fhash, rid, desired.text)
        if verdict == "failed":
            return _clusters_fail(p, o, stable, desired.text, f"{said}; {desired.text} is blocked")
        if verdict == "pending":
            st.phase = "Init"
            _relabel(p, o, {stable or ""})
            _set_phase(p, o, "Progressing", f"Init: {said}; the app stays where it is")
            return p
    st.phase = "Migrating"
    if argo.delete_first:
        _relabel(p, o, {desired.text})
        gone = [ok_why for v in sorted({stable or ""} - {""}) if not (ok_why := view.gone(v))[0]]
        if gone:
            _set_phase(
                p,
                o,
                "Progressing",
                f"Migrating: removing the app from the clusters of {stable} first "
                f"(DeleteBeforeCreate): {gone[0][1]}",
            )
            return p
    else:
        _relabel(p, o, {stable or "", desired.text})
    ok, waiting = view.ready(desired.text)
    if not ok:
        _set_phase(
            p,
            o,
            "Progressing",
            f"Migrating: waiting for Argo CD to deploy onto the clusters of {desired.text}: "
            f"{waiting}",
        )
        return p
    if o.spec.postchecks:
        verdict, said = _checks(p, o, "postcheck", o.spec.postchecks, fhash, rid, desired.text)
        if verdict == "failed":
            return _postcheck_failed(
                p,
                o,
                said,
                lambda: _clusters_fail(p, o, stable, desired.text, f"{said}. Rolling back"),
            )
        if verdict == "pending":
            st.phase = "Completing"
            _set_phase(p, o, "Progressing", f"Completing: {desired.text} deployed; {said}")
            return p
    _end_rollout(p, o)
    st.stable_version = desired.text
    st.phase = "Completed"
    p.events.append(Event("Normal", "RolloutCompleted", f"{desired.text} runs on {n} cluster(s)"))
    _relabel(p, o, {desired.text})
    _set_phase(p, o, "Healthy", f"{desired.text} runs on {n} cluster(s)")
    return p


def _clusters_steady(p: Plan, o: Observed, view: ClusterView, stable: str, n: int) -> Plan:
    st = p.status
    canary = st.canary_version
    if canary and canary in o.blocked and canary != stable:
        return _clusters_fail(p, o, stable, canary, o.blocked[canary])
    if canary:
        _end_rollout(p, o)
    else:
        _end_leftovers(p, o)
    _relabel(p, o, {stable})
    ok, waiting = view.ready(stable)
    if st.health == "Degraded" and any(v in o.blocked for v in o.grouped.by_version):
        _set_phase(p, o, "Degraded", st.message or "a version failed and is blocked")
    elif p.label or p.unlabel or not ok:
        st.phase = "Migrating"
        _set_phase(p, o, "Progressing", f"moving the app to the clusters of {stable}: {waiting}")
    else:
        _set_phase(p, o, "Healthy", f"{stable} runs on {n} cluster(s)")
    return p


def _clusters_fail(p: Plan, o: Observed, stable: str | None, version: str, cause: str) -> Plan:
    p.block = (version, cause)
    _end_rollout(p, o)
    back = f"; the app goes back to the clusters of {stable}" if stable else ""
    message = f"version {version} failed: {cause}{back}"
    p.events.append(Event("Warning", "RolloutFailed", message))
    p.status.phase = "Error"
    _relabel(p, o, {stable or ""})
    _set_phase(p, o, "Degraded", message)
    return p
