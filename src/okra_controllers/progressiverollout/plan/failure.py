"""A failed stage: `Pause` holds the rollout, `Rollback` syncs every updated cluster back
to its previous revision, the most recently updated first, one at a time.
"""

from __future__ import annotations

import datetime

from okra_controllers.api.v1alpha1.progressiverollout import (
    ClusterStatus,
    ProgressiveRolloutStatus,
    StageStatus,
)
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.members import short
from okra_controllers.progressiverollout.plan.model import POLL, UPDATED, Sync


def fail_stage(d: Draft, ss: StageStatus, message: str) -> None:
    st = d.st
    ss.phase, ss.finished, ss.message = "Failed", d.now, message
    text = f"stage {ss.name!r} failed: {message}"
    d.event("Warning", "StageFailed", text)
    if d.o.spec.failure_policy == "Rollback":
        start_rollback(d, text)
    else:
        st.phase = "Failed"
        st.message = f"{text}; fix it and `okra resume` to retry the stage, or push a new revision"


def start_rollback(d: Draft, cause: str) -> None:
    st = d.st
    st.failed_revision = st.revision
    st.phase = "RollingBack"
    st.message = f"rolling back: {cause}"
    d.event("Warning", "RollbackStarted", st.message)
    roll_back(d)


def roll_back(d: Draft) -> None:
    st = d.st
    order = rollback_order(st)
    for c in order:
        if c.phase == "RolledBack":
            continue
        app = d.apps.get(c.application)
        if app is None:
            c.phase, c.message = "RolledBack", "Application gone"
            continue
        prev = c.previous_revision
        assert prev is not None
        if c.phase != "RollingBack":
            if app.operation_running and app.op_sync_id != c.sync_id:
                d.stall(c, f"waiting for the running operation on {app.name} to finish")
                return
            if app.operation_running:
                c.message = "waiting for the rollout's sync to finish before rolling back"
                d.p.wake(POLL)
                return
            c.phase = "RollingBack"
            c.sync_id = d.sync_id(prev, rollback=True)
            c.started = d.now
            c.message = f"rolling back to {short(prev)}"
            d.p.syncs.append(Sync(app.name, prev, c.sync_id, "rollback"))
            d.event("Warning", "ClusterRollingBack", f"cluster {c.name}: {c.message}")
            d.p.wake(POLL)
            return
        if app.op_sync_id == c.sync_id:
            if app.op_phase == "Succeeded":
                c.phase, c.finished = "RolledBack", d.now
                c.message = f"rolled back to {short(prev)}"
                d.event("Normal", "ClusterRolledBack", f"cluster {c.name}: {c.message}")
                continue
            if app.op_phase in ("Failed", "Error"):
                c.phase, c.finished = "RolledBack", d.now
                c.message = f"rollback to {short(prev)} {app.op_phase.lower()}: {app.op_message}"
                d.event("Warning", "RollbackFailed", f"cluster {c.name}: {c.message}")
                continue
            d.p.wake(POLL)
            return
        if app.pending_sync_id != c.sync_id and not app.operation_running:
            assert c.sync_id is not None
            d.p.syncs.append(Sync(app.name, prev, c.sync_id, "rollback"))
        d.p.wake(POLL)
        return
    st.phase = "RolledBack"
    st.finished = d.now
    done = [c.name for c in order]
    st.message = (
        f"rolled back {', '.join(done) or 'nothing'} after {short(st.failed_revision)} failed; "
        "a new revision starts a new rollout"
    )
    d.event("Normal", "RolledBack", st.message)


def rollback_order(status: ProgressiveRolloutStatus) -> list[ClusterStatus]:
    """Clusters this rollout updated, the most recently updated first; a cluster in several
    stages counts once (the stage that synced it)."""
    seen: dict[str, tuple[int, ClusterStatus]] = {}
    for i, ss in enumerate(status.stages or []):
        for c in ss.clusters or []:
            if c.sync_id is None or c.previous_revision is None:
                continue
            if c.previous_revision == c.revision:
                continue
            if c.phase in (*UPDATED, "RollingBack", "RolledBack") and c.application not in seen:
                seen[c.application] = (i, c)
    epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    ordered = sorted(
        seen.values(), key=lambda t: (t[0], t[1].started or epoch, t[1].name), reverse=True
    )
    return [c for _, c in ordered]
