"""Each Application's AppProject, before okra syncs its cluster (`appproject` has Argo CD's
rules): okra starts no sync Argo CD would refuse.

- A cluster whose destination (cluster and namespace) the project does not permit, or whose
  project does not exist, is `Forbidden`: never synced, said in its status, a Warning Event,
  and condition `AppProjects`. It does not hold its stage back (the stage completes with
  the clusters the project permits, and says how many it left out); if the project permits it
  again while the stage runs, it is synced as any other.
- A cluster whose project's sync windows refuse a manual sync now (an active deny window
  without `manualSync`, or allow windows of which none is open) waits in its stage: no sync
  starts, the other clusters go on within `maxUnavailable`, the stage completes only after
  it, and the rollout is looked at again when the window lets it through. Its status, a
  Normal Event and condition `AppProjects` say which window holds it and until when.
- A sync okra started that Argo CD holds later (a deny window that opened meanwhile; Argo CD
  marks the running operation "blocked by sync window") waits too: the progress deadline
  counts from when Argo CD lets it run.
- Without Argo CD's AppProject kind (`Observed.projects` None) nothing is checked, and
  condition `AppProjects` says so.
"""

from __future__ import annotations

from okra_controllers.api.v1alpha1.progressiverollout import ClusterStatus, StageStatus
from okra_controllers.freeze import when
from okra_controllers.progressiverollout.plan.appproject import (
    can_sync,
    destination_permitted,
    matching_windows,
)
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.model import App

CONDITION = "AppProjects"
HELD = "held by"
BLOCKED = "blocked by sync window"
"""What Argo CD's application-controller writes into a running operation a window holds."""


def refusal(d: Draft, app: App) -> str | None:
    """Why the Application's project does not permit it at all (None: it does, or projects
    are not checked)."""
    projects = d.o.projects
    if projects is None:
        return None
    proj = projects.get(app.project)
    if proj is None:
        return (
            f"AppProject {app.project!r} not found: Argo CD refuses to sync {app.name}; "
            "create the project or set spec.project in the ApplicationSet's template"
        )
    if not destination_permitted(
        proj, app.cluster_server, app.cluster, app.dest_namespace, app.cluster_project
    ):
        return (
            f"AppProject {proj.name!r} does not permit destination {app.cluster} "
            f"({app.cluster_server or 'no server'}) namespace {app.dest_namespace!r}: never "
            "synced; add it to the project's spec.destinations"
        )
    return None


def check_project(d: Draft, c: ClusterStatus, app: App) -> None:
    """A Pending or Forbidden cluster against its project: Forbidden, held by a sync window
    (`d.window_held`), or free to sync."""
    if d.o.projects is None:
        return
    refused = refusal(d, app)
    if refused is not None:
        forbid(d, c, refused)
        return
    proj = d.o.projects[app.project]
    if c.phase == "Forbidden":
        c.phase, c.message = "Pending", f"AppProject {proj.name!r} permits it now"
        d.event("Normal", "DestinationPermitted", f"cluster {c.name}: {c.message}")
    windows = matching_windows(
        proj.windows, app.name, app.dest_server, app.dest_name, app.dest_namespace
    )
    verdict = can_sync(windows, d.now, manual=True)
    if verdict.allowed:
        if (c.message or "").startswith(HELD):
            c.message = f"sync window of AppProject {proj.name!r} lets it sync"
        return
    said = "; ".join(w.describe() for w in verdict.windows)
    message = f"{HELD} AppProject {proj.name!r} {verdict.reason} ({said})"
    if verdict.until is not None:
        message += f" until {when(verdict.until)}"
        d.p.wake((verdict.until - d.now).total_seconds() + 0.01)
    if not (c.message or "").startswith(HELD):
        d.event("Normal", "SyncWindowHeld", f"cluster {c.name}: {message}")
    c.message = message
    d.window_held[app.name] = c.name


def forbid(d: Draft, c: ClusterStatus, message: str) -> None:
    if c.phase != "Forbidden" or c.message != message:
        d.event("Warning", "DestinationNotPermitted", f"cluster {c.name}: {message}")
    c.phase, c.message = "Forbidden", message
    c.next_attempt = None


def held_by_argo_cd(d: Draft, c: ClusterStatus, app: App) -> bool:
    """Argo CD holds okra's running sync for a sync window: it waits, and its progress
    deadline starts again when Argo CD lets it run (`started` is cleared while it is held,
    and set again the first time it is not: the status is not rewritten while it waits)."""
    if app.op_phase != "Running" or BLOCKED not in app.op_message.lower():
        return False
    c.started = None
    c.message = f"{HELD} a sync window: Argo CD holds the sync ({app.op_message})"
    d.window_held[app.name] = c.name
    d.p.wake(5.0)
    return True


def forbidden(stages: list[StageStatus]) -> list[str]:
    return sorted({c.name for ss in stages for c in ss.clusters or [] if c.phase == "Forbidden"})


def report_projects(d: Draft) -> None:
    """Condition `AppProjects`."""
    if d.o.projects is None:
        d.cond(
            CONDITION,
            False,
            "NotChecked",
            "Argo CD's AppProject kind is not served: sync windows and destinations of "
            "Argo CD projects are not checked (install appproject-crd.yaml and restart "
            "okra-manager)",
        )
        return
    refused = forbidden(d.st.stages or [])
    held = sorted(d.window_held.values())
    parts = []
    if refused:
        parts.append(f"not permitted by their AppProject, never synced: {', '.join(refused)}")
    if held:
        parts.append(f"held by a sync window: {', '.join(held)}")
    if not parts:
        d.cond(CONDITION, True, "Permitted", "every cluster's AppProject lets okra sync it")
        return
    d.cond(CONDITION, False, "Forbidden" if refused else "SyncWindow", "; ".join(parts))
