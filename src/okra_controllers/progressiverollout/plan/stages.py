"""The stages, strictly in order: a stage's clusters, its PreStage webhooks, its clusters'
progress, then its analysis and PostStage webhooks; a stage completes only when all pass.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.progressiverollout import ClusterStatus, Stage, StageStatus
from okra_controllers.progressiverollout.plan.clusters import run_cluster, start_syncs
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.failure import fail_stage
from okra_controllers.progressiverollout.plan.freeze import frozen, hold
from okra_controllers.progressiverollout.plan.members import (
    at_revision,
    completed,
    matches,
    select_members,
    short,
)
from okra_controllers.progressiverollout.plan.projects import forbidden, refusal
from okra_controllers.progressiverollout.plan.verify import run_analysis, run_webhooks

DONE = ("Completed", "Forbidden")
"""A stage waits for none of its clusters in these phases."""


def progress(d: Draft) -> None:
    st, spec = d.st, d.o.spec
    assert st.stages is not None
    assert st.revision is not None
    managed: set[str] = set()
    for i, (stage, ss) in enumerate(zip(spec.stages, st.stages, strict=True)):
        open_ = ss.phase != "Completed"
        ss.clusters = select_members(stage, list(ss.clusters or []), d.apps, open_=open_) or None
        managed.update(c.application for c in ss.clusters or [])
        managed.update(a.name for a in d.o.apps if matches(stage.clusters.selector, a.labels))
        if ss.phase == "Completed":
            continue
        st.current_stage = i
        run_stage(d, i, stage, ss, st.revision)
        if not completed(ss):
            break
    unmanaged = sorted(a.cluster for a in d.o.apps if a.name not in managed)
    st.unmanaged_clusters = unmanaged or None
    done = all(ss.phase == "Completed" for ss in st.stages)
    if done and st.phase not in ("Failed", "Completed"):
        st.phase = "Completed"
        st.finished = d.now
        st.current_stage = len(st.stages) - 1
        st.message = f"every stage is at {short(st.revision)}"
        refused = forbidden(st.stages)
        if refused:
            st.message += (
                f" but {', '.join(refused)}, which their AppProject does not permit (never synced)"
            )
        d.event("Normal", "RolloutCompleted", st.message)


def run_stage(d: Draft, i: int, stage: Stage, ss: StageStatus, revision: str) -> None:
    st, spec = d.st, d.o.spec
    paused = spec.paused
    members = ss.clusters or []
    if ss.phase == "Pending":
        if paused:
            st.phase, st.message = "Paused", f"paused before stage {stage.name!r}"
            return
        if not members:
            nothing_selected(d, stage)
            return
        if frozen(d):
            hold(d, f"stage {stage.name!r}")
            return
        ss.phase, ss.started = "Progressing", d.now
        d.event("Normal", "StageStarted", f"stage {stage.name!r}: {len(members)} clusters")
    if ss.phase == "Failed":
        return
    if not members:
        nothing_selected(d, stage)
        return
    if needs_sync(d, members, revision) and not run_webhooks(d, i, stage, ss, "PreStage", revision):
        return
    st.phase = "Paused" if paused else "Progressing"
    for c in members:
        run_cluster(d, i, stage, ss, c, revision)
    failed = [c for c in members if c.phase == "Failed"]
    if failed:
        fail_stage(
            d,
            ss,
            "; ".join(f"{c.name}: {c.message}" for c in failed),
        )
        return
    start_syncs(d, stage, members, revision, paused or frozen(d))
    if paused:
        st.message = f"paused in stage {stage.name!r}"
    elif frozen(d) and any(c.phase == "Pending" for c in members):
        hold(d, f"the next syncs of stage {stage.name!r}")
    if any(c.phase not in DONE for c in members):
        if not paused and not d.held:
            progress_message(d, stage, members)
        return
    if all(c.sync_id is None for c in members):
        # Nothing changed in this stage (every cluster was already there, e.g. the first
        # look at an ApplicationSet already rolled out): there is nothing to verify.
        ss.phase, ss.finished = "Completed", d.now
        ss.message = done_message(members, f"already at {short(revision)}")
        return
    ss.phase = "Verifying"
    if not run_analysis(d, i, stage, ss, revision):
        return
    if not run_webhooks(d, i, stage, ss, "PostStage", revision):
        return
    ss.phase, ss.finished = "Completed", d.now
    ss.message = done_message(members, f"at {short(revision)}")
    d.event("Normal", "StageCompleted", f"stage {stage.name!r}: {ss.message}")


def needs_sync(d: Draft, members: list[ClusterStatus], revision: str) -> bool:
    """Whether okra has synced or will sync a cluster of the stage (PreStage webhooks
    run only then): not for a cluster its project does not permit."""
    for c in members:
        if c.sync_id is not None:
            return True
        app = d.apps.get(c.application)
        if (
            c.phase != "Completed"
            and app is not None
            and not at_revision(app, revision)
            and refusal(d, app) is None
        ):
            return True
    return False


def nothing_selected(d: Draft, stage: Stage) -> None:
    sel = stage.clusters.selector.model_dump(by_alias=True, exclude_none=True)
    message = (
        f"stage {stage.name!r}: no cluster of the ApplicationSet matches selector {sel}: "
        "label the Argo CD cluster Secrets or fix the stage's clusters.selector"
    )
    if d.st.message != message:
        d.event("Warning", "NoClusters", message)
    d.st.phase, d.st.message = "Progressing", message
    d.no_clusters = message


def progress_message(d: Draft, stage: Stage, members: list[ClusterStatus]) -> None:
    counts: dict[str, int] = {}
    for c in members:
        counts[c.phase] = counts.get(c.phase, 0) + 1
    parts = ", ".join(f"{n} {phase}" for phase, n in sorted(counts.items()))
    d.st.message = f"stage {stage.name!r}: {parts}"
    held = sorted(c.name for c in members if c.application in d.window_held)
    if held:
        d.st.message += f"; {', '.join(held)} held by a sync window of its AppProject"


def done_message(members: list[ClusterStatus], where: str) -> str:
    """A completed stage's message: its clusters at the revision, and those their
    AppProject did not permit."""
    refused = [c.name for c in members if c.phase == "Forbidden"]
    said = f"{len(members) - len(refused)} clusters {where}"
    if refused:
        said += f"; not permitted by their AppProject, never synced: {', '.join(refused)}"
    return said
