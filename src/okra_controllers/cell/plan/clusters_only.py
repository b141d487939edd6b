"""A Cell with no load balancer (background jobs, say): a rollout moves app labels.

Its versions are its Argo CD clusters (`grouped` holds one entry per cluster Secret),
and there is no weight to shift: a rollout goes Init (prechecks) → Migrating (labels
moved by the strategy, waiting for Argo CD) → Completing (postchecks) → Completed, or
Error, with the same desired version, checks and blocklist as a Cell with traffic.
"""

from __future__ import annotations

import hashlib
import json

from okra_controllers.cell.argocd import ClusterView
from okra_controllers.cell.plan.checks import precheck_gate, run_checks
from okra_controllers.cell.plan.cluster_labels import argocd_gate, relabel
from okra_controllers.cell.plan.ending import end_leftovers, end_rollout
from okra_controllers.cell.plan.failure import check_failed
from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.names import rollout_id
from okra_controllers.cell.plan.status import set_phase
from okra_controllers.cell.plan.strategy import step_hash
from okra_controllers.cell.plan.waiting import desired
from okra_controllers.cell.versions import Version


def clusters_hash(o: Observed, version: str) -> str:
    """What a check of a Cell with no load balancer runs for: the version's clusters."""
    names = sorted(tg.name for tg in o.grouped.by_version.get(version, []))
    raw = json.dumps([version, names])
    return hashlib.sha256(raw.encode()).hexdigest()[:10]


def clusters_only(o: Observed) -> Plan:
    """The plan of a Cell with no load balancer."""
    st = o.status.model_copy(deep=True)
    st.observed_generation = o.generation
    p = Plan(forward=None, status=st)
    view, argo = o.clusters, o.spec.argocd
    if argo is None or view is None:  # the CRD requires ingress or argocd
        set_phase(p, o, "Degraded", "a Cell needs spec.ingress or spec.argocd")
        return p
    if not view.served:
        held = argocd_gate(p, o)
        assert held is not None
        return held
    for name, value in o.grouped.unparsable:
        p.events.append(
            Event(
                "Warning",
                "UnparsableVersion",
                f"cluster Secret {name}: version label {value!r} is not a version; ignored",
            )
        )
    g = o.grouped
    to, why = desired(o)
    stable = st.stable_version if st.stable_version in g.by_version else None
    if to is None:
        if stable is None:
            st.phase = "Init"
            set_phase(p, o, "Progressing", why.replace("AWSTargetGroups", "cluster Secrets"))
            return p
        to = next(v for v in g.versions if v.text == stable)
    if to.text == stable:
        return clusters_steady(p, o, view, to.text, len(g.by_version[to.text]))
    return clusters_rollout(p, o, view, stable, to)


def clusters_rollout(
    p: Plan, o: Observed, view: ClusterView, stable: str | None, to: Version
) -> Plan:
    """From `stable` (None: nothing runs yet) to `to`: prechecks, labels, postchecks."""
    st = p.status
    n = len(o.grouped.by_version[to.text])
    if st.canary_version != to.text or st.rollout_id is None:
        end_rollout(p, o)
        st.canary_version, st.current_step_hash = to.text, step_hash(to.text, o.spec)
        st.step_started_at = st.last_progress_time = o.now
        st.rollout_id = rollout_id(o.cell_uid, st.current_step_hash, o.now)
        p.events.append(
            Event(
                "Normal",
                "RolloutStarted",
                f"{to.text} onto {n} cluster(s)" + (f", from {stable}" if stable else ""),
            )
        )
    rid = st.rollout_id
    assert rid is not None
    end_leftovers(p, o, keep=rid)
    fhash = clusters_hash(o, to.text)

    def prechecking(said: str) -> Plan:
        st.phase = "Init"
        relabel(p, o, {stable or ""})
        set_phase(p, o, "Progressing", f"Init: {said}; the app stays where it is")
        return p

    held = precheck_gate(
        p,
        o,
        fhash,
        rid,
        to.text,
        lambda cause: clusters_fail(p, o, stable, to.text, cause),
        prechecking,
    )
    if held is not None:
        return held
    st.phase = "Migrating"
    migrating = clusters_migrate(p, o, view, stable, to.text)
    if migrating is not None:
        return migrating
    return clusters_complete(p, o, stable, to.text, fhash, n)


def clusters_migrate(
    p: Plan, o: Observed, view: ClusterView, stable: str | None, to: str
) -> Plan | None:
    """Labels moved by the strategy; the plan while Argo CD has not finished, else None."""
    argo = o.spec.argocd
    assert argo is not None
    if argo.delete_first:
        relabel(p, o, {to})
        gone = [ok_why for v in sorted({stable or ""} - {""}) if not (ok_why := view.gone(v))[0]]
        if gone:
            set_phase(
                p,
                o,
                "Progressing",
                f"Migrating: removing the app from the clusters of {stable} first "
                f"(DeleteBeforeCreate): {gone[0][1]}",
            )
            return p
    else:
        relabel(p, o, {stable or "", to})
    ok, waiting = view.ready(to)
    if not ok:
        set_phase(
            p,
            o,
            "Progressing",
            f"Migrating: waiting for Argo CD to deploy onto the clusters of {to}: {waiting}",
        )
        return p
    return None


def clusters_complete(
    p: Plan, o: Observed, stable: str | None, to: str, fhash: str, n: int
) -> Plan:
    """`to` deployed: postchecks, then it is the stable version and the old loses the app."""
    st = p.status
    rid = st.rollout_id
    assert rid is not None
    if o.spec.postchecks:
        verdict, said = run_checks(p, o, "postcheck", o.spec.postchecks, fhash, rid, to)
        if verdict == "failed":
            return check_failed(
                p,
                o,
                "postcheck",
                said,
                lambda: clusters_fail(p, o, stable, to, f"{said}. Rolling back"),
            )
        if verdict == "pending":
            st.phase = "Completing"
            set_phase(p, o, "Progressing", f"Completing: {to} deployed; {said}")
            return p
    end_rollout(p, o)
    st.stable_version = to
    st.phase = "Completed"
    p.events.append(Event("Normal", "RolloutCompleted", f"{to} runs on {n} cluster(s)"))
    relabel(p, o, {to})
    set_phase(p, o, "Healthy", f"{to} runs on {n} cluster(s)")
    return p


def clusters_steady(p: Plan, o: Observed, view: ClusterView, stable: str, n: int) -> Plan:
    """The desired version runs: its clusters keep the app, the others lose it."""
    st = p.status
    canary = st.canary_version
    if canary and canary in o.blocked and canary != stable:
        return clusters_fail(p, o, stable, canary, o.blocked[canary])
    if canary:
        end_rollout(p, o)
    else:
        end_leftovers(p, o)
    relabel(p, o, {stable})
    ok, waiting = view.ready(stable)
    if st.health == "Degraded" and any(v in o.blocked for v in o.grouped.by_version):
        set_phase(p, o, "Degraded", st.message or "a version failed and is blocked")
    elif p.label or p.unlabel or not ok:
        st.phase = "Migrating"
        set_phase(p, o, "Progressing", f"moving the app to the clusters of {stable}: {waiting}")
    else:
        set_phase(p, o, "Healthy", f"{stable} runs on {n} cluster(s)")
    return p


def clusters_fail(p: Plan, o: Observed, stable: str | None, version: str, cause: str) -> Plan:
    """`version` failed: blocked, and the app goes back to the clusters of `stable`."""
    p.block = (version, cause)
    end_rollout(p, o)
    back = f"; the app goes back to the clusters of {stable}" if stable else ""
    message = f"version {version} failed: {cause}{back}"
    p.events.append(Event("Warning", "RolloutFailed", message))
    p.status.phase = "Error"
    relabel(p, o, {stable or ""})
    set_phase(p, o, "Degraded", message)
    return p
