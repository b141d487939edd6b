"""One cluster of a stage: waiting (already there, requeued), syncing (Argo CD's operation,
its deadline, stalls), baking, verifying (PerCluster webhooks); and starting syncs within
`maxUnavailable` and one per topology value.
"""

from __future__ import annotations

import datetime
import math

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.progressiverollout import (
    ClusterSelector,
    ClusterStatus,
    Stage,
    StageStatus,
)
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.members import (
    at_revision,
    matches,
    max_unavailable,
    short,
)
from okra_controllers.progressiverollout.plan.model import (
    IN_FLIGHT,
    POLL,
    STALL_AFTER,
    App,
    Sync,
    WebhookCall,
)
from okra_controllers.progressiverollout.plan.projects import check_project, held_by_argo_cd
from okra_controllers.progressiverollout.plan.verify import webhook_payload


def run_cluster(
    d: Draft, i: int, stage: Stage, ss: StageStatus, c: ClusterStatus, revision: str
) -> None:
    app = d.apps.get(c.application)
    if app is None:
        return
    if c.phase in ("Pending", "Requeued", "Forbidden"):
        wait_cluster(d, stage, c, app, revision)
    elif c.phase == "Syncing":
        sync_cluster(d, c, app, revision)
    if c.phase == "Baking":
        bake_cluster(d, stage, c, app, revision)
    if c.phase == "Verifying":
        verify_cluster(d, i, stage, ss, c, revision)


def wait_cluster(d: Draft, stage: Stage, c: ClusterStatus, app: App, revision: str) -> None:
    if at_revision(app, revision):
        c.phase, c.revision, c.finished = "Completed", revision, d.now
        c.message = f"already at {short(revision)}"
        return
    rq = stage.requeue
    if rq is not None and rq.selector != ClusterSelector() and matches(rq.selector, app.labels):
        if c.next_attempt is not None and d.now < c.next_attempt:
            d.p.wake((c.next_attempt - d.now).total_seconds())
            return
        attempts = (c.attempts or 0) + 1
        c.attempts = attempts
        if attempts >= rq.attempts:
            c.phase = "Failed"
            c.message = (
                f"still matches the requeue selector after {attempts} attempts: remove "
                "the label from its Argo CD cluster Secret and resume"
            )
            return
        interval = parse_duration(rq.interval)
        c.phase = "Requeued"
        c.next_attempt = d.now + datetime.timedelta(seconds=interval)
        c.message = f"requeued (attempt {attempts} of {rq.attempts}): matches the requeue selector"
        d.event("Normal", "ClusterRequeued", f"cluster {c.name}: {c.message}")
        d.p.wake(interval)
        return
    if c.phase == "Requeued":
        c.phase, c.next_attempt = "Pending", None
        c.message = "no longer matches the requeue selector"
    check_project(d, c, app)


def sync_cluster(d: Draft, c: ClusterStatus, app: App, revision: str) -> None:
    if c.started is None:  # a sync Argo CD held for a window runs: its deadline starts now
        c.started = d.now
    started = c.started
    elapsed = (d.now - started).total_seconds()
    deadline = float(d.o.spec.progress_deadline_seconds)
    if app.op_sync_id == c.sync_id and c.sync_id is not None:
        # The deadline runs from when Argo CD started the sync: time spent waiting for a
        # stopped Argo CD is a stall, not a failure of the revision.
        if app.op_started_at is not None:
            elapsed = (d.now - max(started, app.op_started_at)).total_seconds()
        if app.op_phase in ("Failed", "Error"):
            c.phase = "Failed"
            c.message = f"sync {app.op_phase.lower()}: {app.op_message}".rstrip(": ")
            return
        if app.op_phase == "Succeeded" and app.op_revision == revision and app.fresh_at(revision):
            c.phase, c.healthy_since = "Baking", d.now
            c.message = f"Synced and Healthy at {short(revision)}"
            return
        if held_by_argo_cd(d, c, app):
            return
        if app.unreachable:
            d.stall(c, f"cluster {c.name} unreachable: {app.unreachable}")
            return
        if elapsed > deadline:
            c.phase = "Failed"
            c.message = (
                f"not Synced and Healthy at {short(revision)} within "
                f"{d.o.spec.progress_deadline_seconds}s (sync {app.op_phase or 'pending'}, "
                f"{app.sync_status or 'Unknown'}, {app.health or 'Unknown'})"
            )
            return
        c.message = f"sync {app.op_phase or 'started'}; {app.sync_status}/{app.health}"
        d.p.wake(min(POLL, max(deadline - elapsed, 1.0)))
        return
    if app.pending_sync_id == c.sync_id and c.sync_id is not None:
        if elapsed > STALL_AFTER:
            d.stall(
                c,
                f"Argo CD has not started the sync of {app.name} for {int(elapsed)}s: is its "
                "application-controller running?",
            )
        else:
            d.p.wake(POLL)
        return
    # The operation was never written (the write was lost) or was replaced: write it,
    # unless another operation is running, which Argo CD must finish first.
    if app.operation_running:
        d.stall(c, f"waiting for another operation on {app.name} to finish")
        return
    assert c.sync_id is not None
    d.p.syncs.append(Sync(app.name, revision, c.sync_id, "rollout"))
    d.p.wake(POLL)


def bake_cluster(d: Draft, stage: Stage, c: ClusterStatus, app: App, revision: str) -> None:
    if app.health == "Degraded" or (
        app.sync_revision == revision and app.sync_status == "OutOfSync"
    ):
        c.phase = "Failed"
        c.message = f"{app.health}/{app.sync_status} while baking"
        return
    bake = parse_duration(stage.bake_time) if stage.bake_time else 0.0
    since = c.healthy_since or d.now
    left = bake - (d.now - since).total_seconds()
    if left > 0 and not d.promoted:
        c.message = f"baking, {math.ceil(left)}s left"
        d.p.wake(left)
        return
    c.phase = "Verifying"


def verify_cluster(
    d: Draft, i: int, stage: Stage, ss: StageStatus, c: ClusterStatus, revision: str
) -> None:
    hooks = [w for w in stage.webhooks or [] if w.type == "PerCluster"]
    results = {r.name: r for r in ss.webhooks or []}
    waiting = False
    for w in hooks:
        key = f"{w.name}/{c.name}"
        r = results.get(key)
        if r is None:
            d.p.webhooks.append(
                WebhookCall(key, i, w, webhook_payload(d, stage, revision, [c.name]))
            )
            waiting = True
        elif not r.succeeded:
            c.phase, c.message = "Failed", f"webhook {w.name}: {r.message}"
            return
    if waiting:
        c.message = "calling webhooks"
        d.p.wake(POLL)
        return
    c.phase, c.finished = "Completed", d.now
    c.message = f"at {short(revision)}"
    d.event("Normal", "ClusterCompleted", f"cluster {c.name} at {short(revision)}")


def start_syncs(
    d: Draft, stage: Stage, members: list[ClusterStatus], revision: str, paused: bool
) -> None:
    if paused:
        return
    limit = max_unavailable(stage, len(members))
    key = stage.topology_key
    in_flight = [c for c in members if c.phase in IN_FLIGHT]
    busy = {
        d.apps[c.application].labels.get(key) for c in in_flight if key and c.application in d.apps
    }
    for c in members:
        if len(in_flight) >= limit:
            break
        if c.phase != "Pending":
            continue
        app = d.apps.get(c.application)
        if app is None or app.operation_running or app.name in d.window_held:
            continue
        domain = app.labels.get(key) if key else None
        if key and domain in busy:
            continue
        c.phase, c.started = "Syncing", d.now
        c.revision = revision
        c.previous_revision = app.deployed_revision or None
        c.healthy_since, c.finished, c.next_attempt = None, None, None
        c.sync_id = d.sync_id(revision)
        c.message = f"syncing to {short(revision)}"
        d.p.syncs.append(Sync(app.name, revision, c.sync_id, "rollout"))
        d.event(
            "Normal",
            "SyncStarted",
            f"cluster {c.name}: syncing {app.name} to {short(revision)}",
        )
        in_flight.append(c)
        if key:
            busy.add(domain)
    if in_flight:
        d.p.wake(POLL)
