"""The system Cell's plan, a pure function of what okra observed.

In order:
1. Every cluster is ready (EKS ACTIVE, reachable, an Argo CD cluster Secret where an
   application needs one) or left out by its own settings; until then no application is
   given a new cluster set, so no weight moves towards a half-built system.
2. Per application, the clusters its `clusterSelector` picks are a version (`v<N>`, a new
   number for a new set). The application's Cell (a single-application Cell) is pinned
   to it: Init (prechecks, results paired with the forward config's hash), Migrating (the
   steps of `stepWeight`; at each step the checks must pass, and the system Cell promotes
   the step), Completing (postchecks; then the old clusters lose the Argo CD labels),
   Completed.
3. A failed check: `failurePolicy` Rollback (after `delaySeconds`, the application's Cell
   is aborted: its traffic goes back to the clusters that served it) or Stop.
4. While an application waits for Argo CD to deploy it onto its new clusters, the others
   that have not moved traffic yet are held (paused), so the system moves together.

Everything the plan decides that must survive a restart is in the status it returns
(the version of each cluster set, when a cluster began to be waited for, when a rollback
starts); the objects it asks for are desired state, applied idempotently.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.api.v1alpha1.system import (
    ApplicationStatus,
    CheckTries,
    FailurePolicy,
    SystemApplication,
    SystemCluster,
)
from okra_controllers.cell.plan.loadbalancer import MAX_FORWARD
from okra_controllers.cell.plan.model import Event
from okra_controllers.cell.system.children import (
    check_objects,
    child_cell,
    hold_annotations,
    kept_cell,
    steps,
    target_group,
)
from okra_controllers.cell.system.clusters import (
    Readiness,
    arn_for,
    readiness,
    select,
    target_group_arns,
)
from okra_controllers.cell.system.model import (
    ChildSeen,
    ClusterSeen,
    Obj,
    SystemObserved,
    SystemPlan,
)
from okra_controllers.cell.system.names import (
    CHECK_LABEL,
    child_name,
    dns,
    member_key,
    version_key,
    version_number,
)

FAILED = ("CheckFailed", "Reverting", "FailedReverting", "Reverted", "Stopped")
"""Application phases a failed check leads to; they stick for that version."""


@dataclass
class AppWork:
    """One application's part of the plan while it is being made."""

    app: SystemApplication
    status: ApplicationStatus
    child: ChildSeen | None
    problem: str = ""
    waiting_for_clusters: bool = False
    moved: bool = False  # its Cell has given the new clusters traffic (or labels) already
    promote: str | None = None
    abort: str | None = None
    argo_waiting: str = ""  # Argo CD has not deployed it onto its new clusters yet
    checks: list[Obj] = field(default_factory=list)


def plan(o: SystemObserved) -> SystemPlan:
    st = o.status.model_copy(deep=True)
    p = SystemPlan(status=st)
    apps = o.spec.applications or []
    ready = readiness(o, {})
    extra = _secret_problems(o, apps, ready)
    if extra:
        ready = readiness(o, extra)
    st.clusters = ready.status
    p.events += ready.events
    prior = {a.name: a for a in o.status.applications or []}
    works = [_app(o, p, app, ready, prior.get(app.name)) for app in apps]
    # `okra pause` on the system holds every application; one waiting for Argo CD holds
    # those that have not moved traffic yet, so that the system moves together
    waiting_for_argo = any(w.argo_waiting for w in works)
    for w in works:
        _emit(o, p, w, o.paused or (waiting_for_argo and not w.moved))
    st.applications = [w.status for w in works]
    _system_status(o, p, works, ready)
    if ready.wake_after is not None:
        p.requeue_after = _min(p.requeue_after, ready.wake_after + 0.5)
    return p


def _secret_problems(
    o: SystemObserved, apps: list[SystemApplication], ready: Readiness
) -> dict[str, str]:
    """Clusters an Argo CD application needs that have no Argo CD cluster Secret."""
    out: dict[str, str] = {}
    for app in apps:
        if app.argocd is None:
            continue
        clusters, problem = select(app, o, ready.left_out)
        for c in clusters if not problem else []:
            if (o.clusters.get(c.name) or ClusterSeen()).secret is None:
                out[c.name] = (
                    f"no Argo CD cluster Secret in {o.namespace} names it (application "
                    f"{app.name} needs one: a ClusterSet makes it)"
                )
    return out


def _app(
    o: SystemObserved,
    p: SystemPlan,
    app: SystemApplication,
    ready: Readiness,
    prev: ApplicationStatus | None,
) -> AppWork:
    a = ApplicationStatus(name=app.name, cell=child_name(o.name, app.name))
    if prev is not None:
        a = prev.model_copy(deep=True)
        a.cell = child_name(o.name, app.name)
    w = AppWork(app, a, o.children.get(app.name))
    cst = w.child.status if w.child is not None else RolloutCellStatus()
    if cst.stable_version and cst.stable_version == a.version != a.serving_version:
        a.serving_version, a.serving = a.version, list(a.clusters)
        a.rollback_at = None
    clusters, problem = select(app, o, ready.left_out)
    arns, arn_problem = target_group_arns(app, clusters, o) if not problem else ({}, "")
    problem = problem or arn_problem
    want = [c.name for c in clusters]
    if not problem and want != a.clusters:
        problem = _overlap_problem(o, app, want, a.serving, arns)
        if not problem and not ready.ready:
            w.waiting_for_clusters = True
            a.message = f"waiting for clusters before moving: {'; '.join(ready.waiting)}"
        elif not problem:
            _new_version(o, p, a, want, cst)
    w.problem = problem
    if a.version and a.serving_version and a.version != a.serving_version and not problem:
        # checks gate the steps between two sets; a first rollout has none
        w.checks, w.problem = check_objects(o, app, _clusters(o, a.clusters), arns)
    _progress(o, p, w, cst)
    a.weight = _weight(app, a, cst)
    return w


def _overlap_problem(
    o: SystemObserved,
    app: SystemApplication,
    want: list[str],
    serving: list[str],
    arns: dict[str, str],
) -> str:
    """What keeps the application from walking from the `serving` clusters to `want`
    (clusters in both keep their share, docs/system-cells.md): the load balancer's limit
    on the target groups one forward action holds, and what okra cannot do yet with a
    cluster in both sets."""
    if want == serving:
        return ""
    kept = sorted(set(want) & set(serving))
    if app.alb is not None or app.nlb is not None:  # Route 53 takes 100 records
        # a serving cluster no longer in spec.clusters: its own target group
        by_name = {c.name: c for c in o.spec.clusters or []}
        union = set(arns.values()) | {
            arn_for(app, by_name[n], o)[0] or n if n in by_name else n for n in serving
        }
        if len(union) > MAX_FORWARD:
            return (
                f"moving from {', '.join(serving)} to {', '.join(want)} routes to "
                f"{len(union)} target groups at once, but an {'ALB' if app.alb else 'NLB'} "
                "forward action holds at "
                f"most {MAX_FORWARD}: move in two changes of spec.clusters"
            )
    if not kept:
        return ""
    if app.argocd is not None:
        return (
            f"cluster(s) {', '.join(kept)} serve the application now and are in its new "
            "set too: with argocd, okra moves an application between sets of clusters "
            "that do not share one (without argocd, a kept cluster keeps its share)"
        )
    if app.traffic_confirmation is not None:
        return (
            f"trafficConfirmation: cluster(s) {', '.join(kept)} serve the application "
            "now and are in its new set too, and the requests one target group served "
            "cannot be told apart by set: remove trafficConfirmation for this move"
        )
    return ""


def _weight(app: SystemApplication, a: ApplicationStatus, cst: RolloutCellStatus) -> int | None:
    """The share of the application's traffic on the clusters it is going to, as its Cell
    last reported it (None: no load balancer, or no Cell yet)."""
    if app.traffic is None or not a.version or cst.observed_generation is None:
        return None
    if cst.canary_version == a.version:
        return cst.canary_weight or 0
    return 100 if cst.stable_version == a.version else 0


def _new_version(
    o: SystemObserved, p: SystemPlan, a: ApplicationStatus, want: list[str], cst: RolloutCellStatus
) -> None:
    """The application is given the cluster set `want`: the version serving it when that
    is the set (going back), else a new number."""
    if a.serving_version and want == a.serving:
        version = a.serving_version
    else:
        n = max(version_number(v) for v in (a.version, a.serving_version, cst.stable_version))
        version = f"v{n + 1}"
    a.version, a.clusters, a.rollback_at = version, list(want), None
    a.phase, a.message = "Syncing", f"{version}: {', '.join(want)}"
    p.events.append(
        Event(
            "Normal",
            "MigrationStarted",
            f"application {a.name}: {version} on {', '.join(want)}"
            + (f" (from {a.serving_version} on {', '.join(a.serving)})" if a.serving else ""),
        )
    )


def _clusters(o: SystemObserved, names: list[str]) -> list[SystemCluster]:
    by_name = {c.name: c for c in o.spec.clusters or []}
    return [by_name[n] for n in names if n in by_name]


def _progress(o: SystemObserved, p: SystemPlan, w: AppWork, cst: RolloutCellStatus) -> None:
    """The application's phase from its Cell, and what the system Cell does for it at a
    step that waits for checks."""
    a, app = w.status, w.app
    migrating = bool(a.version) and a.version != a.serving_version
    w.moved = cst.canary_version == a.version and bool(cst.canary_weight)
    if (
        migrating
        and app.argocd is not None
        and not app.argocd.update_strategy.type.startswith("Delete")
    ):
        seen = o.argocd.get((app.name, a.version))
        if app.argocd.application_set is not None and seen is not None and not seen.ready:
            w.argo_waiting = seen.waiting
    if w.problem:
        a.phase, a.message = "Error", w.problem
        return
    if w.waiting_for_clusters:
        a.phase = "Pending"
        return
    if not a.version:
        a.phase, a.message = "Pending", "no cluster serves it yet"
        return
    if w.child is None or cst.observed_generation != w.child.generation:
        a.phase, a.message = "Syncing", f"{a.version}: its Cell {a.cell} is being updated"
        return
    if not migrating:
        if cst.health == "Degraded":
            a.phase, a.message = "Error", cst.message or ""
        elif cst.health == "Progressing":  # its weights written, not yet shown by AWS
            a.phase, a.message = "Syncing", f"{a.version}: {cst.message or cst.phase}"
        else:
            a.phase, a.message = "Synced", cst.message or ""
        return
    if (a.phase in FAILED and a.rollback_at is not None) or a.phase == "Stopped":
        _failed(o, p, w, cst, "")
        return
    _at_step(o, p, w, cst)


def _at_step(o: SystemObserved, p: SystemPlan, w: AppWork, cst: RolloutCellStatus) -> None:
    a = w.status
    if cst.phase == "Error" and cst.health == "Degraded":
        stages = {c.stage for c in cst.checks or [] if c.phase == "Failed"}
        a.phase = (
            "PrecheckFailed"
            if "precheck" in stages
            else "PostcheckFailed"
            if "postcheck" in stages
            else "Reverted"
            if cst.aborted
            else "Error"
        )
        a.message = cst.message or ""
        return
    a.phase, a.message = "Syncing", f"{a.version}: {cst.message or cst.phase or 'starting'}"
    plan_steps = steps(w.app)
    i = cst.current_step_index or 0
    if (
        not w.app.checks
        or cst.canary_version != a.version
        or cst.rollout_id is None
        or i >= len(plan_steps)
        or "pause" not in plan_steps[i]
        or cst.health != "Paused"
    ):
        return
    verdict, said = _verdict(o, w, cst.step_started_at)
    where = f"step {i + 1}/{len(plan_steps)}"
    if verdict == "passed":
        w.promote = f"{cst.rollout_id}/{i}"
        a.message = f"{a.version}: {where}: checks passed"
    elif verdict == "failed":
        _failed(o, p, w, cst, said)
    else:
        a.message = f"{a.version} at {cst.canary_weight or 0}%: {where}: {said}"


def _verdict(o: SystemObserved, w: AppWork, since: datetime.datetime | None) -> tuple[str, str]:
    """passed (every Check ran its current spec since the step began, and its last run
    passed), failed (one of them failed more runs in a row than its `retries`), or pending,
    with what is waited for. Failed runs are counted in the application's status, each run
    once, so a restart counts on."""
    retries = {c.name: c.retries for c in w.app.checks}
    tries = {t.name: t for t in w.status.check_tries or [] if t.since == since}
    waiting, retrying = [], []
    verdict = ""
    for obj in w.checks:
        name = obj["metadata"]["name"]
        seen = o.checks.get(name)
        digest = obj["metadata"]["annotations"]["analysis-hash"]
        if (
            seen is None
            or seen.observed_hash != digest
            or seen.last_run_time is None
            or (since is not None and seen.last_run_time <= since)
        ):
            waiting.append(name)
            continue
        if seen.last_passed is not False:
            tries.pop(name, None)
            continue
        t = tries.setdefault(name, CheckTries(name=name, since=since))
        if t.last_run_time != seen.last_run_time:
            t.failed, t.last_run_time = t.failed + 1, seen.last_run_time
        allowed = retries.get(obj["metadata"]["labels"].get(CHECK_LABEL, ""), 0)
        said = f" ({seen.message})" if seen.message else ""
        if t.failed > allowed and not verdict:
            verdict = f"check {name} failed {t.failed} tries in a row (retries: {allowed}){said}"
        retrying.append(f"{name} failed {t.failed} of {allowed + 1} tries{said}")
    w.status.check_tries = [tries[n] for n in sorted(tries)] or None
    if verdict:
        return "failed", verdict
    if waiting or retrying:
        runs = f"waiting for checks {', '.join(waiting)} to run" if waiting else ""
        again = f"retrying: {'; '.join(retrying)}" if retrying else ""
        return "pending", "; ".join(x for x in (runs, again) if x)
    return "passed", ""


def _failed(
    o: SystemObserved, p: SystemPlan, w: AppWork, cst: RolloutCellStatus, said: str
) -> None:
    """A check failed at a step: as the failure policy says. The decision sticks for the
    version (a later passing run does not undo it)."""
    a = w.status
    policy = (
        w.app.failure_policy
        or o.spec.failure_policy
        or FailurePolicy(delay_seconds=o.spec.rollback_delay_seconds)
    )
    said = said or cause_of(a.message)
    if policy.type == "Stop" and cst.aborted:
        # `okra abort` on a stopped application: its Cell sends the traffic back
        back = f"back to {', '.join(a.serving)}" if a.serving else "off its new clusters"
        done = "rolled back" if not cst.canary_weight else "rolling back"
        a.phase = "Reverted" if not cst.canary_weight else "Reverting"
        a.message, a.rollback_at = f"{said}; okra abort: {done}: traffic {back}", None
        return
    if policy.type == "Stop":
        message = f"{said}; failurePolicy Stop: it stays where it is"
        if a.phase != "Stopped":
            p.events.append(Event("Warning", "CheckFailed", f"application {a.name}: {message}"))
        a.phase, a.message, a.rollback_at = "Stopped", message, None
        return
    if a.rollback_at is None:
        a.rollback_at = o.now + datetime.timedelta(seconds=policy.delay_seconds)
        p.events.append(
            Event(
                "Warning",
                "CheckFailed",
                f"application {a.name}: {said}. Waiting {policy.delay_seconds} seconds "
                "before starting a rollback",
            )
        )
    if o.now < a.rollback_at:
        a.phase = "CheckFailed"
        a.message = f"{said}. Waiting {policy.delay_seconds} seconds before starting a rollback"
        p.requeue_after = _min(p.requeue_after, (a.rollback_at - o.now).total_seconds() + 0.1)
        return
    w.abort = cst.rollout_id
    back = f"back to {', '.join(a.serving)}" if a.serving else "off its new clusters"
    stuck = next(
        (c for c in cst.conditions or [] if c.type == "LoadBalancerSynced" and c.status == "False"),
        None,
    )
    if cst.aborted and stuck is not None:
        a.phase = "FailedReverting"
        a.message = f"{said}; rolling back failed: traffic not yet {back}: {stuck.message}"
    elif cst.aborted and not cst.canary_weight:
        a.phase, a.message = "Reverted", f"{said}; rolled back: traffic {back}"
    else:
        a.phase, a.message = "Reverting", f"{said}; rolling back: traffic {back}"


WHAT_FOLLOWED = (
    ". Waiting ",
    "; failurePolicy ",
    "; rolling back: ",
    "; rolled back: ",
    "; okra abort: ",
)
"""What `_failed` writes after a failed check's cause, in the application's message."""


def cause_of(message: str) -> str:
    """The failed check's cause, read back from a message `_failed` wrote: without what
    followed it, so that writing the message again gives the same message (a suffix kept
    here would be appended on every pass, and the status rewritten without end)."""
    for marker in WHAT_FOLLOWED:
        message = message.split(marker)[0]
    return message


def _emit(o: SystemObserved, p: SystemPlan, w: AppWork, hold: bool) -> None:
    """The objects the application needs: its Cell, its target groups and Argo CD labels
    for the versions it is going to and coming from, and its Checks. With a problem (a
    change okra refuses), its Cell is the one the API server holds and the Argo CD labels
    stay as they are."""
    a, app = w.status, w.app
    if not a.version:
        return
    annotations = {**o.subscriptions, **hold_annotations(hold, w.promote, w.abort)}
    if not w.problem:
        p.cells.append(child_cell(o, app, a.version, len(a.clusters), annotations))
    elif w.child is not None and w.child.spec is not None:
        # a change okra refuses reaches nothing: the Cell keeps its last accepted spec
        p.cells.append(kept_cell(o, app.name, w.child, annotations))
    else:
        p.keep.add(("Cell", a.cell))
    if a.phase not in FAILED:  # a check failed: the decision sticks, nothing left to gate
        p.checks += w.checks
    by_name = {c.name: c for c in o.spec.clusters or []}
    sets = [(a.version, a.clusters)]
    if a.serving_version and a.serving_version != a.version:
        sets.append((a.serving_version, a.serving))
    wanted_secrets: dict[str, str] = {}
    for version, names in sets:
        for n in names:
            c = by_name.get(n)
            if app.traffic is not None:
                # a cluster kept from the serving set has a second object for the version
                # it is going to (the two versions' weights on it are planned as one)
                kept = version != a.serving_version and n in a.serving
                name = dns(o.name, app.name, n, version) if kept else dns(o.name, app.name, n)
                arn, _ = arn_for(app, c, o)
                if arn:
                    p.target_groups.append(target_group(o, app.name, name, arn, version))
                else:  # no longer in spec.clusters: the object keeps what it says
                    p.keep.add(("AWSTargetGroup", name))
            secret = (o.clusters.get(n) or ClusterSeen()).secret
            if app.argocd is not None and secret is not None:
                wanted_secrets[secret] = version
    if app.argocd is not None and not w.problem:
        _secret_labels(o, p, app, wanted_secrets, {a.version, a.serving_version} - {""})


def _secret_labels(
    o: SystemObserved,
    p: SystemPlan,
    app: SystemApplication,
    wanted: dict[str, str],
    versions: set[str],
) -> None:
    """The member and version labels on the clusters' Argo CD Secrets. A Secret that leaves
    the application keeps them while it still carries the application's Argo CD labels, so
    that its Cell sees it and takes those away first."""
    assert app.argocd is not None
    mk, vk = member_key(o.name, app.name), version_key(o.name, app.name)
    app_labels = app.argocd.cluster_secret.labels or {}
    for secret, version in wanted.items():
        have = o.secrets.get(secret, {})
        if have.get(mk) != "true" or have.get(vk) != version:
            p.secret_labels.setdefault(secret, {}).update({mk: "true", vk: version})
    for secret, have in o.secrets.items():
        if secret in wanted or have.get(mk) != "true":
            continue
        labelled = all(have.get(k) == v for k, v in app_labels.items())
        if labelled or have.get(vk) in versions:
            continue
        p.secret_labels.setdefault(secret, {}).update({mk: None, vk: None})


def _system_status(
    o: SystemObserved, p: SystemPlan, works: list[AppWork], ready: Readiness
) -> None:
    st = p.status
    phases = [w.status.phase for w in works]
    waiting = ", ".join(ready.waiting)
    if "FailedReverting" in phases:
        st.phase, st.health = "FailedReverting", "Degraded"
        st.message = _about(works, "FailedReverting")
    elif "Reverting" in phases:
        st.phase, st.health = "Reverting", "Progressing"
        st.message = _about(works, "Reverting")
    elif any(
        ph in ("Error", "PrecheckFailed", "PostcheckFailed", "CheckFailed", "Stopped", "Reverted")
        for ph in phases
    ):
        st.phase, st.health = "Failed", "Degraded"
        st.message = "; ".join(
            f"{w.status.name}: {w.status.message}"
            for w in works
            if w.status.phase not in ("Synced", "Syncing", "Pending")
        )
    elif any(w.waiting_for_clusters for w in works) or (
        not ready.ready and "Syncing" not in phases
    ):
        st.phase, st.health = "Pending", "Progressing"
        st.message = f"waiting for clusters: {waiting}"
    elif "Syncing" in phases or "Pending" in phases:
        st.phase, st.health = "Migrating", "Progressing"
        st.message = _about(works, "Syncing") or _about(works, "Pending")
    else:
        st.phase, st.health = "Completed", "Healthy"
        st.message = f"{len(works)} application(s) on {len(o.spec.clusters or [])} cluster(s)"
    st.observed_generation = o.generation


def _about(works: list[AppWork], phase: str) -> str:
    return "; ".join(
        f"{w.status.name}: {w.status.message}" for w in works if w.status.phase == phase
    )


def _min(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)
