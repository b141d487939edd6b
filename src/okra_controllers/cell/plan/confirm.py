"""A weight step confirmed by traffic (`spec.trafficConfirmation`), once AWS shows it.

The canary's weight step asks `confirm` once AWS shows its weights: it times the step
from the first pass that saw them (`status.traffic.since`, so a restart keeps the
time), asks `traffic.decide`, and turns the decision into the walk's outcome: the next
step, a hold with the reason in the status, or the Cell's failure policy. `okra promote`
at a held step accepts the traffic as it is. What the reading showed stays in
`status.traffic` after the step, for `okra get cell` and the dashboard.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.traffic import TrafficStatus
from okra_controllers.cell.plan.canary_walk import Outcome, Walk
from okra_controllers.cell.plan.failure import check_failed
from okra_controllers.cell.plan.model import Event, Forward
from okra_controllers.cell.plan.traffic import Share, decide


def confirm(w: Walk, target: tuple[Forward, ...]) -> Outcome:
    """The weight step `w.i`, whose weights (`target`) AWS shows: "next" once the
    traffic confirms them, else "stop" (held, `w.traffic` says why) or the failed Plan."""
    tc = w.o.spec.traffic_confirmation
    assert tc is not None
    o, p = w.o, w.p
    key = f"{w.rid}/{w.i}"
    before = o.status.traffic if o.status.traffic and o.status.traffic.step == key else None
    # to the microsecond, not the second status times are written to: a window begun up
    # to a second early would read requests served at the step before
    now = o.exact_now or o.now
    since = before.since if before is not None else now
    if o.promote == key:
        # `okra promote` at this step: the person accepts the traffic as it is
        said = f": {before.message}" if before is not None and before.message else ""
        p.events.append(
            Event("Normal", "TrafficAccepted", f"okra promote: step {w.i + 1} goes on{said}")
        )
        return "next"
    by_version = o.grouped.by_version
    shares = [
        Share(
            v.text,
            sum(f.weight for f in target if f.version == v.text),
            tuple(tg.arn for tg in by_version.get(v.text, [])),
        )
        for v in (w.stable, w.canary)
    ]
    d = decide(tc, shares, since, now, o.traffic, w.canary.text)
    if d.query is not None:
        p.needs_traffic = d.query
    p.status.traffic = TrafficStatus(
        step=key,
        since=since,
        verdict=d.verdict,
        message=d.message,
        window_start=d.window[0] if d.window else None,
        window_end=d.window[1] if d.window else None,
        requests=d.requests,
        versions=list(d.versions),
    )
    if d.query is not None and before is not None:
        # asking for a reading: until it comes, the status keeps the last one
        p.status.traffic = before
    changed = before is None or before.verdict != d.verdict
    if d.verdict == "Confirmed":
        if changed:
            p.events.append(Event("Normal", "TrafficConfirmed", d.message))
        p.status.rollback_at = None  # a rollback the traffic had set waiting is off
        return "next"
    if d.verdict == "Failed":
        cause = f"traffic at step {w.i + 1} not as planned: {d.message}"
        return check_failed(p, o, "traffic", cause, lambda: w.fail(cause))
    if d.verdict == "Diverged" and changed:
        p.events.append(Event("Warning", "TrafficDiverged", d.message))
    if d.recheck_after is not None:
        p.wake_after = min(p.wake_after or d.recheck_after, d.recheck_after)
    p.forward = target
    w.traffic = d.message
    return "stop"
