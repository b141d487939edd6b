"""From what the set's clusters hold to the AWSTargetGroups that should exist: a pure function.

Rules:
- One AWSTargetGroup per TargetGroupBinding of a reachable cluster, named
  `<set>-<cluster>-<binding namespace>-<binding name>` made DNS-safe; names longer than 63
  characters are cut and end in a hash of the full name, so they stay unique and stable.
- Its labels are the template's (variables substituted) plus `okra.mumo.co/targetgroupset`;
  the cluster and the binding it came from are recorded in annotations.
- A generated group is pruned when its binding is gone from a cluster okra could read, or when
  its cluster is no longer selected. The groups of a cluster okra could not read (unreachable,
  or its template could not be rendered) are kept as they are: one broken cluster never empties
  the others' or its own.
- `okra.mumo.co/template-hash` on each group records what was applied; a group is rewritten only
  when that hash differs, so an idle set makes no writes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSetSpec

SET_LABEL = "okra.mumo.co/targetgroupset"
CLUSTER_ANNOTATION = "okra.mumo.co/cluster"
BINDING_ANNOTATION = "okra.mumo.co/targetgroupbinding"
HASH_ANNOTATION = "okra.mumo.co/template-hash"
MAX_NAME = 63
_VAR = re.compile(r"\{\{\s*\.([A-Za-z0-9_.\-/]+)\s*\}\}")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class TemplateError(ValueError):
    pass


@dataclass(frozen=True)
class Binding:
    namespace: str
    name: str
    arn: str


@dataclass(frozen=True)
class ObservedCluster:
    """A selected cluster. `bindings` is None when it could not be read (`message` says why)."""

    name: str
    bindings: tuple[Binding, ...] | None
    message: str = ""
    vars: Mapping[str, Any] = field(default_factory=dict)
    """Template variables: `{"cluster": {"name": ...}, "awseks": {"cluster": {...}}}`."""


@dataclass(frozen=True)
class Existing:
    name: str
    cluster: str
    template_hash: str


@dataclass(frozen=True)
class ClusterResult:
    name: str
    reachable: bool
    message: str
    target_groups: int


@dataclass(frozen=True)
class Plan:
    apply: tuple[dict[str, Any], ...]
    """Desired objects whose template hash differs from what exists (created or updated)."""
    delete: tuple[str, ...]
    clusters: tuple[ClusterResult, ...]
    desired: int


def dns_name(*parts: str) -> str:
    """A DNS-1123 label from `parts`: lowercase, `[a-z0-9-]`, at most 63 characters (cut names
    end in 8 hex characters of the full name's SHA-256)."""
    full = "-".join(parts)
    name = re.sub(r"[^a-z0-9-]+", "-", full.lower())
    name = re.sub(r"-{2,}", "-", name).strip("-") or "x"
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9].rstrip('-')}-{digest}"


def render(text: str, variables: Mapping[str, Any]) -> str:
    """Substitute `{{.a.b.c}}` from nested `variables`; an unknown path is an error."""

    def repl(m: re.Match[str]) -> str:
        value: Any = variables
        path = m.group(1)
        for part in path.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise TemplateError(f"template variable {{{{.{path}}}}} is not defined here")
            value = value[part]
        if isinstance(value, (Mapping, list)):
            raise TemplateError(f"template variable {{{{.{path}}}}} is not a single value")
        return str(value)

    return _VAR.sub(repl, text)


def render_labels(labels: Mapping[str, str], variables: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    for k, v in labels.items():
        value = render(v, variables)
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise TemplateError(
                f"label {k}={value!r} (from template {v!r}) is not a valid label value"
            )
        out[k] = value
    return out


def _hash(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def desired_target_group(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    cluster: ObservedCluster,
    binding: Binding,
) -> dict[str, Any]:
    variables = {"cluster": {"name": cluster.name}, **cluster.vars}
    labels = {**render_labels(spec.template.metadata.labels, variables), SET_LABEL: set_name}
    annotations = {
        **{k: render(v, variables) for k, v in spec.template.metadata.annotations.items()},
        CLUSTER_ANNOTATION: cluster.name,
        BINDING_ANNOTATION: f"{binding.namespace}/{binding.name}",
    }
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "AWSTargetGroup",
        "metadata": {
            "name": dns_name(set_name, cluster.name, binding.namespace, binding.name),
            "namespace": namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": "AWSTargetGroupSet",
                    "name": set_name,
                    "uid": set_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"arn": binding.arn},
    }
    annotations[HASH_ANNOTATION] = _hash(obj)
    return obj


def plan(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    clusters: Sequence[ObservedCluster],
    existing: Sequence[Existing],
) -> Plan:
    desired: dict[str, dict[str, Any]] = {}
    results: list[ClusterResult] = []
    kept_clusters: set[str] = set()
    for c in sorted(clusters, key=lambda c: c.name):
        if c.bindings is None:
            kept_clusters.add(c.name)
            kept = sum(1 for e in existing if e.cluster == c.name)
            results.append(ClusterResult(c.name, False, c.message, kept))
            continue
        try:
            objs = [
                desired_target_group(set_name, set_uid, namespace, spec, c, b)
                for b in sorted(c.bindings, key=lambda b: (b.namespace, b.name))
                if b.arn
            ]
        except TemplateError as e:
            kept_clusters.add(c.name)
            kept = sum(1 for e2 in existing if e2.cluster == c.name)
            results.append(ClusterResult(c.name, True, f"template: {e}", kept))
            continue
        for o in objs:
            desired[o["metadata"]["name"]] = o
        skipped = sum(1 for b in c.bindings if not b.arn)
        msg = f"{skipped} binding(s) without spec.targetGroupARN skipped" if skipped else ""
        results.append(ClusterResult(c.name, True, msg, len(objs)))
    have = {e.name: e for e in existing}
    apply = tuple(
        o
        for name, o in sorted(desired.items())
        if name not in have
        or have[name].template_hash != o["metadata"]["annotations"][HASH_ANNOTATION]
    )
    delete = tuple(
        sorted(e.name for e in existing if e.name not in desired and e.cluster not in kept_clusters)
    )
    return Plan(apply=apply, delete=delete, clusters=tuple(results), desired=len(desired))
