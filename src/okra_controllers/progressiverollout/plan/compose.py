"""`plan`: the preconditions (ApplicationSet found and ours, automated sync off, single
source, a resolved revision), the phases in order, then the report (conditions Ready,
Progressing, Stalled).
"""

from __future__ import annotations

from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.failure import roll_back
from okra_controllers.progressiverollout.plan.freeze import report_freeze
from okra_controllers.progressiverollout.plan.members import target_revision
from okra_controllers.progressiverollout.plan.model import POLL, Observed, Plan
from okra_controllers.progressiverollout.plan.projects import report_projects
from okra_controllers.progressiverollout.plan.requests import handle_requests
from okra_controllers.progressiverollout.plan.revision import align_stages, restart
from okra_controllers.progressiverollout.plan.stages import progress


def plan(o: Observed) -> Plan:
    """What to do next for one ProgressiveRollout; see the package docstring."""
    d = Draft(o)
    spec = o.spec
    name = spec.source_ref.name
    if not o.source_found:
        return d.error(
            "SourceNotFound",
            f"ApplicationSet {name!r} not found in this namespace: create it, or set "
            "spec.sourceRef.name to an existing ApplicationSet",
        )
    if o.owner is not None:
        return d.error(
            "SourceTaken",
            f"ApplicationSet {name!r} is already rolled out by ProgressiveRollout "
            f"{o.owner!r}: only one ProgressiveRollout may reference an ApplicationSet; "
            "delete this one or point it at another ApplicationSet",
        )
    automated = sorted(a.name for a in o.apps if a.automated)
    if automated:
        d.cond(
            "AutomatedSyncDisabled",
            False,
            "AutomatedSyncEnabled",
            f"automated sync is on for {', '.join(automated)}: remove "
            "syncPolicy.automated from the ApplicationSet's template; okra syncs them",
        )
        return d.error(
            "AutomatedSyncEnabled",
            f"automated sync is on for Applications {', '.join(automated)}: Argo CD "
            "would update every cluster at once; remove syncPolicy.automated from the "
            f"template of ApplicationSet {name!r}",
        )
    d.cond("AutomatedSyncDisabled", True, "AutomatedSyncOff", "okra syncs every Application")
    multi = sorted(a.name for a in o.apps if a.multi_source)
    if multi:
        return d.error(
            "MultiSourceUnsupported",
            f"Applications {', '.join(multi)} have several sources (spec.sources): okra "
            "rolls out single-source Applications only; use spec.source in the template",
        )
    if not o.apps:
        d.st.phase = "Pending"
        d.st.message = f"ApplicationSet {name!r} has no Applications yet"
        d.cond("Ready", False, "NoApplications", d.st.message)
        return d.p
    revision = target_revision(o.apps)
    if revision is None:
        d.st.phase = "Pending"
        d.st.message = "waiting for Argo CD to resolve the ApplicationSet's revision"
        d.cond("Ready", False, "RevisionUnknown", d.st.message)
        d.p.wake(POLL)
        return d.p
    handle_requests(d)
    if d.st.phase in ("RollingBack",):
        roll_back(d)
        return finish(d)
    if revision != d.st.revision and revision != d.st.failed_revision:
        restart(d, revision)
    elif revision != d.st.revision:
        return finish(d)  # the failed revision: hold until a newer one
    align_stages(d)
    if d.st.phase in ("Completed", "RolledBack") or (d.st.phase == "Failed" and not d.st.aborted):
        return finish(d)
    if d.st.aborted:
        return finish(d)
    progress(d)
    return finish(d)


def finish(d: Draft) -> Plan:
    st = d.st
    report_freeze(d)
    report_projects(d)
    if d.stalls:
        d.cond("Stalled", True, "Waiting", "; ".join(d.stalls))
    else:
        d.cond("Stalled", False, "NotStalled", "")
    ready = st.phase == "Completed"
    reason = {
        "Completed": "RolloutCompleted",
        "Failed": "StageFailed",
        "RollingBack": "RollingBack",
        "RolledBack": "RolledBack",
        "Paused": "Paused",
    }.get(st.phase, "Progressing")
    if d.no_clusters:
        reason = "NoClusters"
    d.cond("Ready", ready, reason, st.message or "")
    progressing = st.phase in ("Progressing", "RollingBack")
    d.cond("Progressing", progressing, reason, st.message or "")
    if st.phase in ("Completed", "RolledBack"):
        d.p.requeue_after = None if not d.p.syncs else d.p.requeue_after
    return d.p
