"""Operator requests (annotations, each token acted on once): promote, abort, retry."""

from __future__ import annotations

from okra_controllers.api.v1alpha1.progressiverollout import Handled
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.failure import start_rollback


def handle_requests(d: Draft) -> None:
    r, st = d.o.requests, d.st
    handled = st.handled or Handled()
    if r.promote and r.promote != handled.promote:
        handled.promote = r.promote
        d.promoted = True
        d.event("Normal", "Promoted", "bake time and inconclusive analysis skipped")
    if r.abort and r.abort != handled.abort:
        handled.abort = r.abort
        if st.phase not in ("Completed", "RolledBack", "RollingBack", ""):
            st.aborted = True
            d.event("Warning", "Aborted", "rollout aborted by the operator")
            if d.o.spec.failure_policy == "Rollback":
                start_rollback(d, "aborted by the operator")
            else:
                st.phase = "Failed"
                st.message = "aborted: no further syncs; `okra resume` to continue"
    if r.retry and r.retry != handled.retry:
        handled.retry = r.retry
        retry_rollout(d)
    st.handled = handled if (handled.promote or handled.abort or handled.retry) else None


def retry_rollout(d: Draft) -> None:
    st = d.st
    if st.phase == "RolledBack" or (st.phase == "Failed" and st.failed_revision):
        st.failed_revision = None
        st.revision = None  # restarts from the first stage
        st.aborted = None
        d.event("Normal", "Retried", "rollout retried from the first stage")
        return
    if st.phase != "Failed" and not st.aborted:
        return
    st.aborted = None
    for ss in st.stages or []:
        if ss.phase == "Failed":
            ss.phase, ss.message = "Progressing", None
            ss.analysis_run, ss.analysis_phase = None, None
            ss.webhooks = [w for w in ss.webhooks or [] if w.succeeded] or None
            for c in ss.clusters or []:
                if c.phase == "Failed":
                    c.phase, c.message, c.sync_id = "Pending", None, None
                    c.attempts, c.next_attempt = None, None
    st.phase, st.message = "Progressing", "retrying"
    d.event("Normal", "Retried", "failed stage retried")
