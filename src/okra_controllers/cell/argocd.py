"""Argo CD cluster Secret strategies, the pure part: which of a Cell's clusters
carry the labels its ApplicationSet selects on, and whether Argo CD has deployed the app.

A Cell's clusters are Argo CD cluster Secrets (selected by `spec.argocd.clusterSecret.selector`,
versioned by the Cell's version labels). The ApplicationSet's cluster generator deploys the
app onto the clusters whose Secret carries `spec.argocd.clusterSecret.labels`, so okra moves
the app between versions by adding and removing those labels:

- `CreateBeforeDelete`: the new version's clusters get the labels first; no traffic moves
  (and no precheck runs) until every Application on them is Synced and Healthy; the old
  version's clusters lose the labels once the new version has completed.
- `DeleteBeforeCreate` (no load balancer): the old clusters lose the labels, then, once
  their Applications are gone, the new clusters get them; the rollout completes when the
  new clusters' Applications are Synced and Healthy.

`observe_clusters` turns Secrets and Applications into a `ClusterView`; the plan
(`okra_controllers.cell.plan`) decides with it which versions keep the labels.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from okra_controllers.api.kinds import APPLICATION_SET
from okra_controllers.api.v1alpha1.cell import CellArgoCD
from okra_controllers.api.v1alpha1.common import CELL_LABELS_ANNOTATION
from okra_controllers.cell.versions import parse_version

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
Obj = dict[str, Any]


@dataclass(frozen=True, order=True)
class Cluster:
    secret: str  # the Secret's name
    name: str  # Argo CD's cluster name (the Secret's `name`)
    server: str
    version: str  # the version label's value, normalised ("" if none parses)
    labelled: bool  # carries every label of `clusterSecret.labels`


@dataclass(frozen=True, order=True)
class App:
    name: str
    server: str  # spec.destination.server
    cluster: str  # spec.destination.name
    sync: str  # status.sync.status ("" unknown)
    health: str  # status.health.status


@dataclass(frozen=True)
class ClusterView:
    """The Cell's Argo CD clusters and the Applications sent to them. `served` False: Argo CD's
    Application kind is not served by this API server (Argo CD is not installed)."""

    clusters: tuple[Cluster, ...] = ()
    apps: tuple[App, ...] = ()
    served: bool = True

    def of(self, version: str | None) -> list[Cluster]:
        key = _normal(version or "")
        return sorted(c for c in self.clusters if key and c.version == key)

    def apps_on(self, cluster: Cluster) -> list[App]:
        return sorted(
            a
            for a in self.apps
            if (a.server and a.server == cluster.server)
            or (a.cluster and a.cluster == cluster.name)
        )

    def ready(self, version: str) -> tuple[bool, str]:
        """Every cluster of `version` has the labels and at least one Application, all
        Synced and Healthy. Otherwise False and what is being waited for."""
        clusters = self.of(version)
        if not clusters:
            return False, f"no Argo CD cluster Secret of version {version}"
        for c in clusters:
            if not c.labelled:
                return False, f"cluster {c.name} of {version} has not got the app labels yet"
            apps = self.apps_on(c)
            if not apps:
                return False, f"no Argo CD Application on cluster {c.name} ({version}) yet"
            for a in apps:
                if a.sync != "Synced" or a.health != "Healthy":
                    state = f"{a.sync or 'Unknown'}/{a.health or 'Unknown'}"
                    return False, f"Application {a.name} on {c.name} ({version}) is {state}"
        return True, ""

    def gone(self, version: str) -> tuple[bool, str]:
        """No cluster of `version` carries the labels or still has an Application."""
        for c in self.of(version):
            if c.labelled:
                return False, f"cluster {c.name} of {version} still has the app labels"
            apps = self.apps_on(c)
            if apps:
                return False, f"Application {apps[0].name} on {c.name} ({version}) not removed yet"
        return True, ""

    def relabel(self, keep: Iterable[str]) -> tuple[list[str], list[str]]:
        """(Secrets to label, Secrets to unlabel) so that exactly the clusters of the
        versions in `keep` carry the labels."""
        wanted = {_normal(v) for v in keep if v}
        label = sorted(c.secret for c in self.clusters if c.version in wanted and not c.labelled)
        unlabel = sorted(c.secret for c in self.clusters if c.version not in wanted and c.labelled)
        return label, unlabel

    def labelled_versions(self) -> set[str]:
        return {c.version for c in self.clusters if c.labelled}


def _normal(version: str) -> str:
    v = parse_version(version)
    return str(v.parsed) if v is not None else ""


def _decoded(secret: Obj, key: str) -> str:
    data = secret.get("data") or {}
    if key in data:
        try:
            return base64.b64decode(data[key]).decode()
        except (ValueError, UnicodeDecodeError):
            return ""
    return str((secret.get("stringData") or {}).get(key) or "")


def selected(spec: CellArgoCD, labels: Mapping[str, str]) -> bool:
    """A cluster Secret with these labels is one of the Cell's clusters."""
    sel = spec.cluster_secret.selector.match_labels
    return labels.get(SECRET_TYPE_LABEL) == "cluster" and all(
        labels.get(k) == v for k, v in sel.items()
    )


def observe_clusters(
    spec: CellArgoCD,
    version_labels: list[str],
    secrets: Iterable[Obj],
    apps: Iterable[Obj] | None,
) -> ClusterView:
    """The view from the Secrets in the Cell's namespace and its Applications (`apps` None:
    the Application kind is not served)."""
    clusters = []
    want = spec.cluster_secret.labels
    for s in secrets:
        meta = s.get("metadata") or {}
        labels = meta.get("labels") or {}
        if not selected(spec, labels):
            continue
        value = next((labels[k] for k in version_labels if k in labels), "")
        clusters.append(
            Cluster(
                secret=meta["name"],
                name=_decoded(s, "name") or meta["name"],
                server=_decoded(s, "server"),
                version=_normal(value),
                labelled=all(labels.get(k) == v for k, v in want.items()),
            )
        )
    appset = spec.application_set
    out = []
    for a in apps or ():
        meta = a.get("metadata") or {}
        if (
            appset is not None
            and appset.name
            and not any(
                o.get("kind") == APPLICATION_SET.kind and o.get("name") == appset.name
                for o in meta.get("ownerReferences") or []
            )
        ):
            continue
        if appset is not None and appset.selector is not None:
            labels = meta.get("labels") or {}
            if not all(labels.get(k) == v for k, v in appset.selector.match_labels.items()):
                continue
        dest = (a.get("spec") or {}).get("destination") or {}
        st = a.get("status") or {}
        out.append(
            App(
                name=meta["name"],
                server=str(dest.get("server") or ""),
                cluster=str(dest.get("name") or ""),
                sync=str((st.get("sync") or {}).get("status") or ""),
                health=str((st.get("health") or {}).get("status") or ""),
            )
        )
    return ClusterView(tuple(sorted(clusters)), tuple(sorted(out)), served=apps is not None)


def label_patch(spec: CellArgoCD, add: bool) -> Obj:
    """The merge patch that adds (or removes) the app labels on a cluster Secret, and the
    annotation naming them (a ClusterSet that writes the Secret keeps them)."""
    labels: dict[str, str | None] = {
        k: (v if add else None) for k, v in spec.cluster_secret.labels.items()
    }
    keys = ",".join(sorted(spec.cluster_secret.labels)) if add else None
    return {"metadata": {"labels": labels, "annotations": {CELL_LABELS_ANNOTATION: keys}}}
