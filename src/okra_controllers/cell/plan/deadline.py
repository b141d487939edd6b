"""The progress deadline (Argo Rollouts' `progressDeadlineSeconds`).

A rollout that stops making progress (a target group that never turns healthy, a
config AWS refuses, an analysis that never starts) would otherwise sit Progressing
for ever. The clock (`lastProgressTime`) runs while the Cell is Progressing and
restarts at each step; a Paused or settled Cell has none.
"""

from __future__ import annotations

from okra_controllers.cell.plan.failure import fail
from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.status import condition


def deadline(p: Plan, o: Observed) -> Plan:
    """Exceeded: condition `Progressing` False (reason `ProgressDeadlineExceeded`), one
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
        return fail(failed, o, versions[stable], versions[canary], message)
    condition(st, "Progressing", False, "ProgressDeadlineExceeded", message, o.now, o.generation)
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
