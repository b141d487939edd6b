"""What a ClusterSet's Secrets should be, from what was observed: a pure function.

Why pure: every decision (which clusters count, what each Secret holds, what to create,
update, delete or leave alone) is made here from plain data, so it is tested exhaustively
without an API server or AWS; the controller only observes and carries the plan out.

Ownership is by ownerReference, not by label: a Secret carrying the ClusterSet's label but
no controller reference to this ClusterSet (its uid) was made by someone else and is never
changed or deleted, only reported. Clusters whose state is unknown (DescribeCluster failed)
keep their Secrets untouched: a failed read is not a deleted cluster.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.api.kinds import CLUSTERSET, SECRET
from okra_controllers.api.v1alpha1.clusterset import ClusterSetSpec
from okra_controllers.api.v1alpha1.common import API_VERSION, CELL_LABELS_ANNOTATION
from okra_controllers.aws.eks import EksCluster as EksCluster
from okra_controllers.templating import Syntax, render_labels
from okra_controllers.templating import TemplateError as TemplateError
from okra_controllers.templating import render as render_template

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
"""Argo CD reads every Secret with this label set to `cluster` as a cluster."""
CLUSTERSET_LABEL = "okra.mumo.co/clusterset"
"""Names the ClusterSet that wrote a Secret, so its Secrets are listed by label."""

_SYNTAX = Syntax(roots=frozenset({"awseks"}))
"""`{{.awseks.…}}` is the ClusterSet's; any other `{{…}}` is left for whoever reads the Secret."""
_DNS_LABEL_CHARS = re.compile(r"[^a-z0-9-]+")

Obj = dict[str, Any]


@dataclass(frozen=True)
class Owner:
    """The ClusterSet: what the Secrets' ownerReference and label point at."""

    name: str
    namespace: str
    uid: str


@dataclass
class Plan:
    clusters: list[str] = field(default_factory=list)
    """Selected clusters, by name."""
    create: list[Obj] = field(default_factory=list)
    update: list[Obj] = field(default_factory=list)
    """Existing owned Secrets with the desired content put in (resourceVersion kept)."""
    delete: list[Obj] = field(default_factory=list)
    """Owned Secrets whose cluster is gone."""
    in_sync: list[str] = field(default_factory=list)
    """Secret names already as desired."""
    foreign: list[str] = field(default_factory=list)
    """Secrets with this ClusterSet's label or a wanted name, not owned by it: left alone."""
    blocked: list[str] = field(default_factory=list)
    """Wanted Secret names held by a Secret this ClusterSet does not own (also in foreign)."""
    errors: list[str] = field(default_factory=list)


def selects(spec: ClusterSetSpec, cluster: EksCluster) -> bool:
    """ACTIVE, and some generator's matchTags are all among the cluster's tags."""
    if cluster.status != "ACTIVE":
        return False
    return any(
        all(cluster.tags.get(k) == v for k, v in g.awseks.cluster_selector.match_tags.items())
        for g in spec.generators
    )


def role_arn(spec: ClusterSetSpec, cluster: EksCluster) -> str | None:
    """The roleARN of the first generator selecting the cluster."""
    for g in spec.generators:
        tags = g.awseks.cluster_selector.match_tags
        if all(cluster.tags.get(k) == v for k, v in tags.items()):
            return g.awseks.role_arn
    return None


def variables(cluster: EksCluster) -> dict[str, Any]:
    """What a ClusterSet template can use: `{{.awseks.cluster.name}}`, `….tags.KEY}}`."""
    return {"awseks": {"cluster": {"name": cluster.name, "tags": dict(cluster.tags)}}}


def render(text: str, cluster: EksCluster) -> str:
    """`text` with the cluster's name and tags substituted (see okra_controllers.templating).

    A tag the cluster lacks is an error, not an empty string: a label silently emptied would
    make an ApplicationSet selector miss (or match) the cluster without anyone noticing."""
    try:
        return render_template(text, variables(cluster), _SYNTAX)
    except TemplateError as e:
        raise TemplateError(f"cluster {cluster.name}: {e}", placeholder=e.placeholder) from None


def secret_name(clusterset: str, cluster: str) -> str:
    """`<clusterset>-<cluster>`, made a DNS-1123 subdomain.

    EKS names allow upper case and `_`; when a name has to change, a short hash of the
    original is appended so `Web_1` and `web-1` never share a Secret."""
    raw = f"{clusterset}-{cluster}"
    safe = _DNS_LABEL_CHARS.sub("-", raw.lower()).strip("-")
    if safe != raw:
        digest = hashlib.sha256(cluster.encode()).hexdigest()[:8]
        safe = f"{safe[:244].rstrip('-')}-{digest}"
    return safe[:253]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def argocd_config(cluster: EksCluster, role: str | None) -> str:
    """The `config` field of an Argo CD cluster Secret for an EKS cluster (IAM auth)."""
    aws: dict[str, str] = {"clusterName": cluster.name}
    if role:
        aws["roleARN"] = role
    return json.dumps(
        {"awsAuthConfig": aws, "tlsClientConfig": {"insecure": False, "caData": cluster.ca_data}},
        sort_keys=True,
    )


def desired_secret(owner: Owner, spec: ClusterSetSpec, cluster: EksCluster) -> Obj:
    """The Argo CD cluster Secret for one cluster; TemplateError if the template cannot
    be rendered into valid labels for it."""
    try:
        labels = render_labels(spec.template.metadata.labels, variables(cluster), _SYNTAX)
    except TemplateError as e:
        raise TemplateError(f"cluster {cluster.name}: {e}", placeholder=e.placeholder) from None
    labels[SECRET_TYPE_LABEL] = "cluster"
    labels[CLUSTERSET_LABEL] = owner.name
    annotations = {k: render(v, cluster) for k, v in spec.template.metadata.annotations.items()}
    meta: Obj = {
        "name": secret_name(owner.name, cluster.name),
        "namespace": owner.namespace,
        "labels": labels,
        "ownerReferences": [
            {
                "apiVersion": API_VERSION,
                "kind": CLUSTERSET.kind,
                "name": owner.name,
                "uid": owner.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": SECRET.kind,
        "type": "Opaque",
        "metadata": meta,
        "data": {
            "name": _b64(cluster.name),
            "server": _b64(cluster.endpoint),
            "config": _b64(argocd_config(cluster, role_arn(spec, cluster))),
        },
    }


def owned_by(secret: Obj, owner: Owner) -> bool:
    return any(
        r.get("uid") == owner.uid and r.get("controller") is True
        for r in secret.get("metadata", {}).get("ownerReferences") or []
    )


def _cell_labels(existing: Obj) -> tuple[dict[str, str], dict[str, str]]:
    """The labels a Cell put on the Secret (its app labels, named by
    `CELL_LABELS_ANNOTATION`) and that annotation: a ClusterSet keeps both."""
    meta = existing.get("metadata", {})
    annotations = meta.get("annotations") or {}
    keys = {k for k in str(annotations.get(CELL_LABELS_ANNOTATION) or "").split(",") if k}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k in keys}
    kept = {CELL_LABELS_ANNOTATION: annotations[CELL_LABELS_ANNOTATION]} if keys else {}
    return labels, kept


def differs(existing: Obj, desired: Obj) -> bool:
    """Whether writing `desired` would change anything Argo CD or okra reads (a Cell's app
    labels and their annotation are kept, so they never count)."""
    em, dm = existing.get("metadata", {}), desired["metadata"]
    cell_labels, cell_annotation = _cell_labels(existing)
    return bool(
        (em.get("labels") or {}) != {**dm["labels"], **cell_labels}
        or (em.get("annotations") or {}) != {**dm.get("annotations", {}), **cell_annotation}
        or (existing.get("data") or {}) != desired["data"]
        or existing.get("type", "Opaque") != desired["type"]
        or (em.get("ownerReferences") or []) != dm["ownerReferences"]
    )


def merged(existing: Obj, desired: Obj) -> Obj:
    """The existing Secret with the desired content in it; other metadata (resourceVersion,
    finalizers, managedFields) kept so the update is a normal optimistic write."""
    out = {**existing, "type": desired["type"], "data": desired["data"]}
    out.pop("stringData", None)
    cell_labels, cell_annotation = _cell_labels(existing)
    meta = {**existing["metadata"], "labels": {**desired["metadata"]["labels"], **cell_labels}}
    annotations = {**desired["metadata"].get("annotations", {}), **cell_annotation}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    meta["ownerReferences"] = desired["metadata"]["ownerReferences"]
    out["metadata"] = meta
    return out


def not_owned_message(secret: str, clusterset: str) -> str:
    return (
        f"Secret {secret} exists and is not owned by ClusterSet {clusterset}: left alone; "
        f"delete it (or rename the ClusterSet) to let okra write it"
    )


def plan(
    owner: Owner,
    spec: ClusterSetSpec,
    clusters: Iterable[EksCluster],
    existing: Sequence[Obj],
    unknown: Iterable[str] = (),
) -> Plan:
    """Decide every write for one ClusterSet.

    `clusters`: every cluster described this round; `existing`: Secrets in the namespace
    with this ClusterSet's label, plus any Secret already holding a wanted name; `unknown`:
    clusters listed but not described (their Secrets are kept as they are)."""
    p = Plan()
    by_name = {s["metadata"]["name"]: s for s in existing}
    keep: set[str] = set()
    selected = sorted((c for c in clusters if selects(spec, c)), key=lambda c: c.name)
    for cluster in selected:
        p.clusters.append(cluster.name)
        name = secret_name(owner.name, cluster.name)
        keep.add(name)
        try:
            want = desired_secret(owner, spec, cluster)
        except TemplateError as e:
            p.errors.append(str(e))
            continue
        have = by_name.get(name)
        if have is None:
            p.create.append(want)
        elif not owned_by(have, owner):
            p.foreign.append(name)
            p.blocked.append(name)
            p.errors.append(not_owned_message(name, owner.name))
        elif differs(have, want):
            p.update.append(merged(have, want))
        else:
            p.in_sync.append(name)
    for name in unknown:
        keep.add(secret_name(owner.name, name))
    for name, secret in sorted(by_name.items()):
        if name in keep:
            continue
        if owned_by(secret, owner):
            p.delete.append(secret)
        elif secret["metadata"].get("labels", {}).get(CLUSTERSET_LABEL) == owner.name:
            p.foreign.append(name)
    return p
