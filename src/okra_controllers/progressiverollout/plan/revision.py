"""A new target revision restarts the rollout at the first stage; status stages follow
the spec's by name.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.progressiverollout import StageStatus
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.members import short
from okra_controllers.progressiverollout.plan.model import FAILED_RUN


def restart(d: Draft, revision: str) -> None:
    st = d.st
    old = st.revision
    for ss in st.stages or []:
        if ss.analysis_run and ss.analysis_phase not in ("Successful", *FAILED_RUN):
            d.p.terminate_runs.append(ss.analysis_run)
    st.revision = revision
    st.failed_revision = None
    st.aborted = None
    st.stages = [StageStatus(name=s.name) for s in d.o.spec.stages]
    st.current_stage = 0
    st.started, st.finished = d.now, None
    st.phase = "Progressing"
    st.message = f"rolling out {short(revision)}"
    if old:
        d.event(
            "Normal",
            "RevisionChanged",
            f"new revision {short(revision)} (was {short(old)}): restarting at the first stage",
        )
    else:
        d.event("Normal", "RolloutStarted", f"rolling out {short(revision)}")


def align_stages(d: Draft) -> None:
    """Status stages follow spec stages by name (the spec may change mid-rollout)."""
    by_name = {s.name: s for s in d.st.stages or []}
    d.st.stages = [by_name.get(s.name) or StageStatus(name=s.name) for s in d.o.spec.stages]
