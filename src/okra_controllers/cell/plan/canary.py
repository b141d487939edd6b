"""The canary: the desired version above the stable one, walked step by step.

Steps run in order and each completes only on evidence: a weight step when AWS shows
the planned weights, a pause when its Pause expires or is cancelled (or `okra
promote`), an analysis when its run succeeds. Background analysis runs alongside from
its `startingStep`. After the last step the canary gets 100 and, once its postchecks
pass, becomes the stable version. The step reached is in the Cell's status and the
runs and Pauses are found by name, so each pass walks again from the status, and a
restarted manager carries on at the same step.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.strategy import BackgroundAnalysis, CanaryStep, StepAnalysis
from okra_controllers.cell.plan.bluegreen import background
from okra_controllers.cell.plan.canary_walk import Outcome, Walk
from okra_controllers.cell.plan.checks import precheck_gate, run_checks
from okra_controllers.cell.plan.confirm import confirm
from okra_controllers.cell.plan.ending import end_leftovers, end_rollout, pause_over
from okra_controllers.cell.plan.failure import check_failed, fail
from okra_controllers.cell.plan.freeze import FROZEN, frozen_note, hold_start, started
from okra_controllers.cell.plan.model import (
    FAILED_RUN,
    Event,
    Forward,
    Observed,
    PauseRequest,
    Plan,
)
from okra_controllers.cell.plan.names import rollout_id, run_name
from okra_controllers.cell.plan.status import hold, set_phase
from okra_controllers.cell.plan.strategy import pause_expiry, step_hash, weight_before
from okra_controllers.cell.plan.weights import (
    applied,
    forward_for,
    forward_hash,
    overlap,
    same_weights,
    weights_status,
)
from okra_controllers.cell.versions import Version


def canary(p: Plan, o: Observed, stable: Version, to: Version, steps: list[CanaryStep]) -> Plan:
    """The canary from `stable` to `to`: prechecks, the steps, then the end."""
    st = p.status
    if o.freeze is not None and not under_way(p, o, to):
        return hold_start(p, o, to, stable)
    start_if_new(p, o, stable, to)
    rid = st.rollout_id
    assert rid is not None
    end_leftovers(p, o, keep=rid)
    w = Walk(p, o, stable, to, steps, rid, dict(st.analysis_runs or {}))
    if o.abort == rid:
        return aborted(w)
    refused = traffic_refusal(o, stable, to)
    if refused is not None:
        return hold(p, o, "Degraded", refused, Event("Warning", "InvalidSpec", refused))
    w.i = st.current_step_index or 0
    fhash = forward_hash(w.at(100))
    held = precheck_gate(
        p,
        o,
        fhash,
        rid,
        to.text,
        lambda cause: fail(p, o, stable, to, cause),
        lambda said: prechecking(w, said),
    )
    if held is not None:
        return held
    st.phase = "Migrating"
    if o.promote == f"{rid}/full":
        w.i = len(steps)
    failed = walk(w)
    if failed is not None:
        return failed
    return after_walk(w, fhash)


def traffic_refusal(o: Observed, stable: Version, to: Version) -> str | None:
    """`trafficConfirmation` on a walk whose versions share a target group: refused (the
    requests one target group served cannot be told apart by version)."""
    shared = overlap(o.grouped.by_version[stable.text], o.grouped.by_version[to.text])
    if o.spec.traffic_confirmation is None or not shared:
        return None
    return (
        f"spec.trafficConfirmation: target group(s) {', '.join(shared)} are in both "
        f"{stable.text} and {to.text}, and the requests one target group served cannot "
        "be told apart by version: remove trafficConfirmation, or give the versions "
        "no target group in common"
    )


def under_way(p: Plan, o: Observed, to: Version) -> bool:
    """Whether the rollout to `to` is the one in the status: not a new canary version, not
    changed steps, not `okra retry` after an abort."""
    st = p.status
    resumed = bool(st.aborted) and o.abort != st.rollout_id  # retry after abort: start over
    return (
        st.canary_version == to.text
        and st.current_step_hash == step_hash(to.text, o.spec)
        and not resumed
        and st.rollout_id is not None
    )


def start_if_new(p: Plan, o: Observed, stable: Version, to: Version) -> None:
    """Start a rollout unless this one is under way: a new canary version, changed
    steps, `okra retry` after an abort, or no rollout yet each start over at step 0."""
    st = p.status
    if under_way(p, o, to):
        return
    h = step_hash(to.text, o.spec)
    end_rollout(p, o)
    st.canary_version, st.current_step_hash = to.text, h
    st.current_step_index, st.step_started_at = 0, o.now
    st.last_progress_time = o.now
    st.rollout_id = rollout_id(o.cell_uid, h, o.now)
    st.analysis_runs, st.paused_reason, st.aborted = {}, None, None
    p.events.append(Event("Normal", "RolloutStarted", f"canary {to.text} from {stable.text}"))


def aborted(w: Walk) -> Plan:
    """`okra abort`: all traffic on stable, the rollout's runs stopped, held until retry."""
    p, o, st = w.p, w.o, w.p.status
    p.forward = forward_for([(o.grouped.by_version[w.stable.text], 100)])
    weights_status(p)
    said = f"rollout of {w.canary.text} aborted; all traffic on {w.stable.text}"
    if not st.aborted:
        p.events.append(Event("Warning", "RolloutAborted", said))
    st.aborted = True
    st.canary_weight = 0
    p.terminate_runs.extend(sorted(w.runs.values()))
    end_leftovers(p, o)
    set_phase(p, o, "Degraded", f"{said} (okra retry resumes)")
    return p


def prechecking(w: Walk, said: str) -> Plan:
    """Prechecks still running: the weights stay where the steps left them."""
    p, st = w.p, w.p.status
    st.phase = "Init"
    p.forward = w.at(weight_before(w.steps, w.i))
    weights_status(p)
    st.canary_weight = w.share(p.forward)
    set_phase(p, w.o, "Progressing", f"Init: {said}; no traffic moves to {w.canary.text}")
    return p


def walk(w: Walk) -> Plan | None:
    """Walk from step `w.i` past every step that has completed, to the one that holds
    the rollout (or past the last); a Plan when the rollout failed on the way."""
    bg = background(w.o.spec)
    while True:
        if bg is not None and (bg.starting_step or 0) <= w.i < len(w.steps):
            failed = background_step(w, bg)
            if failed is not None:
                return failed
        if w.i >= len(w.steps):
            return None
        outcome = step(w, w.steps[w.i])
        if isinstance(outcome, Plan):
            return outcome
        if outcome == "stop":
            return None
        w.i += 1


def background_step(w: Walk, bg: BackgroundAnalysis) -> Plan | None:
    """Background analysis, from its starting step until the end: a failure fails the
    rollout, an inconclusive result pauses it (until promoted past this step)."""
    name = w.runs.setdefault("background", run_name(w.o.cell_name, w.canary.text, w.rid, "bg"))
    phase = w.ensure_run(name, bg, True)
    if phase in FAILED_RUN:
        return w.fail(f"background analysis {name} {phase}")
    if phase == "Inconclusive" and w.o.promote != f"{w.rid}/{w.i}":
        w.paused = f"background analysis {name} is inconclusive"
    return None


def step(w: Walk, s: CanaryStep) -> Outcome:
    """Step `w.i`: completed ("next"), holding the walk ("stop"), or ending the rollout."""
    weight_step = s.set_weight is not None or s.step_weight is not None
    if w.o.paused and not (weight_step and applied(w.o, w.at(weight_before(w.steps, w.i + 1)))):
        return held_by_user(w, weight_step)
    if w.o.freeze is not None and not step_started(w, s):
        return held_by_freeze(w, f"step {w.i + 1}")
    if weight_step:
        return weight(w)
    if s.pause is not None:
        return pause(w, s)
    if s.analysis is not None:
        return analysis(w, s.analysis)
    return "next"  # a step kind okra does not know (the CRD rejects these)


def held_by_user(w: Walk, weight_step: bool) -> Outcome:
    """`okra pause`: held before this step; a weight step already written is kept, not
    undone."""
    w.paused = w.paused or f"paused by okra pause before step {w.i + 1} (okra promote resumes)"
    target = w.at(weight_before(w.steps, w.i + 1))
    if weight_step and w.o.forward is not None and same_weights(w.o.forward, target):
        w.p.forward = target
    return "stop"


def step_started(w: Walk, s: CanaryStep) -> bool:
    """Whether step `w.i` has begun (its weights written, its Pause or run created)."""
    o, i = w.o, w.i
    run = w.runs.get(f"step-{i}") or run_name(o.cell_name, w.canary.text, w.rid, f"step-{i}")
    pause = run_name(o.cell_name, w.canary.text, w.rid, f"pause-{i}")
    return started(o, s, w.at(weight_before(w.steps, i + 1)), run, pause)


def held_by_freeze(w: Walk, what: str) -> Outcome:
    """A freeze: held before this step (nothing of it is started)."""
    if w.paused is None:
        w.paused = frozen_note(w.o, f"{what} of canary {w.canary.text}")
        w.frozen = True
    return "stop"


def weight(w: Walk) -> Outcome:
    """`setWeight`/`stepWeight`: complete once AWS shows the weights (and, with
    `trafficConfirmation`, the traffic confirms them), else write them."""
    target = w.at(weight_before(w.steps, w.i + 1))
    if applied(w.o, target):
        return "next" if w.o.spec.traffic_confirmation is None else confirm(w, target)
    w.p.forward = target
    return "stop"


def pause(w: Walk, s: CanaryStep) -> Outcome:
    """`pause`: a Pause (timed, or until promoted) created, then waited for."""
    assert s.pause is not None
    o, p, i = w.o, w.p, w.i
    name = run_name(o.cell_name, w.canary.text, w.rid, f"pause-{i}")
    if o.pauses.get(name) is None:
        expire = pause_expiry(s, o.pause_clock)
        p.create_pause = PauseRequest(name, expire)
        if expire is not None:
            p.wake_after = (expire - o.pause_clock).total_seconds()
        w.paused = w.paused or (
            f"paused at step {i + 1} until {expire.isoformat(timespec='milliseconds')}"
            if expire
            else f"paused at step {i + 1} until promoted"
        )
        return "stop"
    if pause_over(o, name) or o.promote == f"{w.rid}/{i}":
        return "next"
    expiry = o.pause_expiry.get(name)
    if expiry is not None:
        p.wake_after = (expiry - o.pause_clock).total_seconds()
    w.paused = w.paused or (
        f"paused at step {i + 1} for {s.pause.duration}"
        if s.pause.duration not in (None, "")
        else f"paused at step {i + 1} until promoted"
    )
    return "stop"


def analysis(w: Walk, a: StepAnalysis) -> Outcome:
    """`analysis`: its run created, then waited for; Successful completes the step,
    Failed or Error fails the rollout, Inconclusive pauses it until promoted."""
    i = w.i
    name = w.runs.setdefault(
        f"step-{i}", run_name(w.o.cell_name, w.canary.text, w.rid, f"step-{i}")
    )
    phase = w.ensure_run(name, a, False)
    if phase == "Successful" or (phase == "Inconclusive" and w.o.promote == f"{w.rid}/{i}"):
        return "next"
    if phase in FAILED_RUN:
        return w.fail(f"analysis {name} {phase}")
    if phase == "Inconclusive":
        w.paused = (
            f"analysis {name} at step {i + 1} is inconclusive: okra promote to "
            "continue, okra abort to roll back"
        )
    return "stop"


def after_walk(w: Walk, fhash: str) -> Plan:
    """Record the step reached; past the last step, the canary gets 100 and the rollout
    ends once AWS shows it (and its postchecks pass)."""
    p, o, st = w.p, w.o, w.p.status
    if w.i != (st.current_step_index or 0):
        st.step_started_at = o.now
        st.last_progress_time = o.now
    st.current_step_index = w.i
    st.analysis_runs = w.runs
    if w.i >= len(w.steps) and o.freeze is not None and not applied_or_written(o, w.at(100)):
        held_by_freeze(w, "the final 100%")
        p.forward = o.forward or w.at(weight_before(w.steps, w.i))  # as it is
    elif w.i >= len(w.steps):
        p.forward = w.at(100)
        done = finish(w, p.forward, fhash)
        if done is not None:
            return done
    elif p.forward is None:
        p.forward = w.at(weight_before(w.steps, w.i))
    return report(w)


def applied_or_written(o: Observed, target: tuple[Forward, ...]) -> bool:
    """Whether the config holds `target`'s weights (written, whether or not AWS shows them)."""
    return o.forward is not None and same_weights(o.forward, target)


def finish(w: Walk, full: tuple[Forward, ...], fhash: str) -> Plan | None:
    """The canary at 100 (`full`): postchecks once AWS shows it, then the canary becomes
    stable; None while AWS does not show it yet."""
    p, o, st, to = w.p, w.o, w.p.status, w.canary
    if applied(o, full) and o.spec.postchecks:
        verdict, said = run_checks(p, o, "postcheck", o.spec.postchecks, fhash, w.rid, to.text)
        if verdict == "failed":
            weights_status(p)
            st.canary_weight = 100
            return check_failed(
                p, o, "postcheck", said, lambda: fail(p, o, w.stable, to, f"{said}. Rolling back")
            )
        if verdict == "pending":
            st.phase = "Completing"
            weights_status(p)
            st.canary_weight = 100
            set_phase(p, o, "Progressing", f"Completing: {to.text} serves 100%; {said}")
            return p
    if applied(o, full):
        weights_status(p)
        end_rollout(p, o)
        st.stable_version = to.text
        p.events.append(Event("Normal", "RolloutCompleted", f"{to.text} serves 100%"))
        set_phase(p, o, "Healthy", f"{to.text} serves 100%")
        return p
    return None


def report(w: Walk) -> Plan:
    """The canary's weights and where it is: Paused (and why) or Progressing at a step."""
    p, st, to = w.p, w.p.status, w.canary
    assert p.forward is not None
    weights_status(p)
    st.canary_weight = w.share(p.forward)
    st.stable_version = w.stable.text
    if w.paused:
        st.paused_reason = (
            FROZEN
            if w.frozen
            else "Inconclusive"
            if "inconclusive" in w.paused
            else "PausedByUser"
            if w.paused.startswith("paused by okra pause")
            else "Pause"
        )
        set_phase(p, w.o, "Paused", f"canary {to.text} at {st.canary_weight}%: {w.paused}")
    else:
        st.paused_reason = None
        where = f"step {w.i + 1}/{len(w.steps)}" if w.i < len(w.steps) else "final step"
        said = f": {w.traffic}" if w.traffic else ""
        set_phase(p, w.o, "Progressing", f"canary {to.text} at {st.canary_weight}% ({where}){said}")
    return p
