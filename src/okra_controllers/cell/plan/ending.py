"""Ending a rollout: its AnalysisRuns terminated, its Pauses cancelled, its status cleared.

Every way a rollout ends (completion, rollback, failure, abort, a restart toward
another version) goes through here, so none leaves a run measuring or a Pause
waiting for a rollout that no longer exists. Runs and Pauses are found by name (they
carry the rollout ID), so a restarted manager ends the same ones.
"""

from __future__ import annotations

from okra_controllers.cell.plan.model import DONE_PAUSE, DONE_RUN, Observed, Plan


def pause_over(o: Observed, name: str) -> bool:
    """The Pause has expired or been cancelled: by its status, or by its `expireTime`
    having passed before the Pause controller said so."""
    expiry = o.pause_expiry.get(name)
    return o.pauses.get(name) in DONE_PAUSE or (expiry is not None and expiry <= o.pause_clock)


def end_leftovers(p: Plan, o: Observed, keep: str | None = None) -> None:
    """Terminate the Cell's runs and cancel its Pauses still going, except those of the
    rollout `keep` (their names carry its ID)."""

    def stale(name: str) -> bool:
        return keep is None or f"-{keep}-" not in name

    for name, phase in sorted(o.runs.items()):
        if phase not in DONE_RUN and stale(name) and name not in p.terminate_runs:
            p.terminate_runs.append(name)
    for name in sorted(o.pauses):
        if not pause_over(o, name) and stale(name) and name not in p.cancel_pauses:
            p.cancel_pauses.append(name)


def end_rollout(p: Plan, o: Observed) -> None:
    """End the rollout in progress: its runs and Pauses stop, its status fields clear."""
    st = p.status
    for name in sorted((st.analysis_runs or {}).values()):
        if name not in p.terminate_runs:
            p.terminate_runs.append(name)
    end_leftovers(p, o)
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
