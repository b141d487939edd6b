"""Argo CD cluster Secret strategies: which clusters carry the app.

okra moves an app between clusters by moving labels on their Argo CD cluster Secrets
(an ApplicationSet selects clusters by them). CreateBeforeDelete, behind a load
balancer, keeps the serving, canary and incoming versions labelled and gives a version
no traffic until Argo CD has deployed it (`argocd_gate`); DeleteBeforeCreate, for an app
with no load balancer, adds the new labels only once the old Applications are gone.
"""

from __future__ import annotations

from okra_controllers.cell.argocd import ClusterView
from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.status import condition, hold
from okra_controllers.cell.versions import parse_version


def incoming(o: Observed, view: ClusterView) -> str | None:
    """The version the Cell heads for, read from its clusters (a new version's target groups
    may only appear once the app runs on its clusters): `spec.version`, else the newest
    version with a cluster that is not blocked."""
    if o.spec.version:
        return o.spec.version
    blocked = {norm(v) for v in o.blocked}
    versions = [
        v
        for v in (parse_version(c.version) for c in view.clusters)
        if v is not None and str(v.parsed) not in blocked
    ]
    return str(max(versions).parsed) if versions else None


def norm(version: str) -> str:
    v = parse_version(version)
    return str(v.parsed) if v is not None else version


def relabel(p: Plan, o: Observed, keep: set[str]) -> None:
    """Labels so that exactly the clusters of `keep` carry the app. DeleteBeforeCreate
    adds labels only once every other version's clusters have lost them and Argo CD has
    removed their Applications."""
    view, argo = o.clusters, o.spec.argocd
    if view is None or argo is None or not view.served:
        return
    keep = {v for v in keep if v}
    label, unlabel = view.relabel(keep)
    if argo.delete_first and label:
        wanted = {norm(v) for v in keep}
        others = sorted({c.version for c in view.clusters} - wanted)
        if unlabel or any(not view.gone(v)[0] for v in others):
            label = []
    p.label, p.unlabel = label, unlabel


def relabel_serving(p: Plan, o: Observed) -> None:
    """A Cell behind a load balancer (CreateBeforeDelete): the serving version, the canary
    and the incoming version keep the app; the others lose it. The old version leaves only
    once the new one is stable (completed, postchecks passed)."""
    if o.clusters is None or o.spec.argocd is None:
        return
    st = p.status
    relabel(p, o, {st.stable_version or "", st.canary_version or "", incoming(o, o.clusters) or ""})


def argocd_gate(p: Plan, o: Observed) -> Plan | None:
    """CreateBeforeDelete behind a load balancer: no traffic moves to a version (and no
    precheck runs against it) until every Application on its clusters is Synced and
    Healthy."""
    argo, view = o.spec.argocd, o.clusters
    if argo is None or view is None:
        return None
    if not view.served:
        message = (
            "spec.argocd needs Argo CD: the Application kind (argoproj.io/v1alpha1) is not "
            "served by this cluster; install Argo CD (and restart okra-manager) or remove "
            "spec.argocd"
        )
        return hold(p, o, "Degraded", message, Event("Warning", "ArgoCDMissing", message))
    if argo.delete_first:  # the CRD refuses this; an object stored before the rule was not
        message = (
            "spec.argocd.updateStrategy.type DeleteBeforeCreate is for apps with no load "
            "balancer: remove spec.ingress, or use CreateBeforeDelete"
        )
        return hold(p, o, "Degraded", message, Event("Warning", "InvalidStrategy", message))
    for version in sorted(moving(p, o)):
        ok, why = view.ready(version)
        if ok:
            continue
        message = f"Init: waiting for Argo CD to deploy onto the clusters of {version}: {why}"
        held = hold(
            p,
            o,
            "Progressing",
            message,
            Event("Normal", "WaitingForApplications", message),
            ("ApplicationsReady", "WaitingForArgoCD"),
        )
        held.status.phase = "Init"
        return held
    if any(c.type == "ApplicationsReady" for c in p.status.conditions or []):
        condition(
            p.status,
            "ApplicationsReady",
            True,
            "SyncedAndHealthy",
            "the Applications on the clusters given traffic are Synced and Healthy",
            o.now,
            o.generation,
        )
    return None


def moving(p: Plan, o: Observed) -> set[str]:
    """The versions the plan gives more weight than they have, and the canary."""
    before: dict[str, int] = {}
    for f in o.forward or ():
        before[f.version] = before.get(f.version, 0) + f.weight
    after: dict[str, int] = {}
    for f in p.forward or ():
        after[f.version] = after.get(f.version, 0) + f.weight
    out = {v for v, w in after.items() if w > before.get(v, 0)}
    if p.status.canary_version and p.status.canary_version != p.status.stable_version:
        out.add(p.status.canary_version)
    return out
