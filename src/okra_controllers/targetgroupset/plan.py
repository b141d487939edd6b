"""From what the set's clusters hold to the AWSTargetGroups (and AWSTargetGroupBindings) that
should exist: a pure function.

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
- With `bindingTemplate`, each group has an AWSTargetGroupBinding beside it: named by the
  template (variables substituted; default: the group's name), with the bindingTemplate's labels
  and annotations (plus the set label and the cluster and binding annotations), its spec the
  template's with every string substituted and `targetGroupARN` the discovered binding's unless
  the template gives one. It is written, kept and pruned by the same rules as the groups. A name
  that is not a valid object name, one used twice, or a spec the AWSTargetGroupBinding API
  rejects is a template error of that cluster.

One binding per cluster, that creates its target group (no AWS Load Balancer Controller
needed):
- A reachable cluster is planned this way when `bindingTemplate` is given without
  `targetGroupARN`, and either the template gives `targetGroup` or the cluster is an EKS
  cluster (`awseks`; its VPC is known) in which no TargetGroupBinding with an ARN was found.
  Its TargetGroupBindings, if any, are then not read for groups.
- The binding: named by the template (default `<set>-<cluster>`), labels and annotations as
  above (no binding annotation: it comes from no TargetGroupBinding), its spec the template's
  with `targetGroup` filled in: `name` defaults to the binding's name (at most 32 characters of
  `[A-Za-z0-9-]`; a longer one is cut and ends in a hash of the full name), `vpcID` to the
  cluster's VPC (a cluster whose VPC is not known and a template without `vpcID` is a template
  error of that cluster).
- The AWSTargetGroup: named `<set>-<cluster>`, `spec.arn` the ARN the binding reports in its
  status (`okra.mumo.co/awstargetgroupbinding` names the binding). Until the binding reports
  one, no group is made, and one that exists is kept as it is.
- An EKS cluster's `okra.mumo.co/version` tag becomes the version label (`okra.mumo.co/version`)
  of the cluster's AWSTargetGroups, in both ways, when the template sets no such label and the
  tag is a valid label value.

Target groups found by AWS tags (`awsTargetGroups` generators), with no cluster in between:
- A target group matches the first generator all of whose `matchTags` it carries. One
  AWSTargetGroup per matching group, named `<set>-<target group name>` (made DNS-safe as
  above), `spec.arn` its ARN, annotated `okra.mumo.co/target-group` with its name (and
  `okra.mumo.co/cluster` with the EKS cluster its `eksClusterTag` names, if any).
- Its labels: the template's, then `versionLabel` set to the version, then the set label.
  The version is the value of the generator's `versionTag` on the target group, or with
  `eksClusterTag` on the EKS cluster that tag names. It must read as a version the way a Cell
  reads one (semver, a leading `v` tolerated, minor and patch optional) and be a valid label
  value. A group whose version is missing or invalid, whose EKS cluster is unknown, or whose
  template cannot be rendered is a problem of that group: reported, never guessed; no new
  AWSTargetGroup is made for it and an existing one is kept as it is.
- Pruned when its target group is gone from AWS's answer or no longer matches, or when the
  set has no `awsTargetGroups` generator any more. When AWS could not be read, every one of
  them is kept as it is: nothing is known, so nothing changes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import semver
from pydantic import ValidationError

from okra_controllers.api.kinds import AWS_TARGET_GROUP_BINDING, TARGET_GROUP, TARGET_GROUP_SET
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBindingSpec
from okra_controllers.api.v1alpha1.targetgroupset import (
    AWSTargetGroupSetSpec,
    AWSTargetGroupsGenerator,
    TargetGroupBindingTemplate,
    unquoted_name,
)
from okra_controllers.api.validation import field_path
from okra_controllers.aws.elbv2 import TaggedTargetGroup
from okra_controllers.templating import TemplateError, render, render_labels, render_strings
from okra_runtime.labels import valid_label_value

SET_LABEL = "okra.mumo.co/targetgroupset"
CLUSTER_ANNOTATION = "okra.mumo.co/cluster"
BINDING_ANNOTATION = "okra.mumo.co/targetgroupbinding"
HASH_ANNOTATION = "okra.mumo.co/template-hash"
GENERATED_BINDING_ANNOTATION = "okra.mumo.co/awstargetgroupbinding"
"""On an AWSTargetGroup of a cluster's own group: the AWSTargetGroupBinding that created it."""
VERSION_KEY = "okra.mumo.co/version"
"""The EKS cluster tag copied, as this label, onto the cluster's AWSTargetGroups."""
MAX_TARGET_GROUP_NAME = 32
TARGET_GROUP_ANNOTATION = "okra.mumo.co/target-group"
"""On an AWSTargetGroup found by AWS tags: the target group's name in AWS."""
MAX_PROBLEMS = 20
"""Target group problems listed in status (all are counted)."""
MAX_NAME = 63
_OBJECT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
    vpc_id: str | None = None
    """For an EKS cluster (`awseks`): its VPC, "" when it could not be learnt (`vpc_message`
    says why); None for a cluster that is not one."""
    vpc_message: str = ""
    version: str | None = None
    """For an EKS cluster: its `okra.mumo.co/version` tag."""


@dataclass(frozen=True)
class ObservedTargetGroups:
    """What the `awsTargetGroups` generators read from AWS in one reconcile.

    `groups`: every target group of the account and region with its tags; None when AWS
    could not be read (`message` says why). `eks_tags`: EKS cluster name -> its tags, read
    only when a generator names `eksClusterTag`; None when it was not or could not be read
    (`eks_message` says why)."""

    groups: tuple[TaggedTargetGroup, ...] | None
    message: str = ""
    eks_tags: Mapping[str, Mapping[str, str]] | None = None
    eks_message: str = ""


@dataclass(frozen=True)
class Existing:
    name: str
    cluster: str
    template_hash: str
    target_group: str = ""
    """Set on those found by AWS tags: the target group's name (`okra.mumo.co/target-group`)."""
    arn: str = ""
    """Of a generated AWSTargetGroupBinding: the ARN its status reports."""
    problem: str = ""
    """Of a generated AWSTargetGroupBinding: its `Synced` condition's message when False."""


@dataclass(frozen=True)
class ClusterResult:
    name: str
    reachable: bool
    message: str
    target_groups: int
    binding_problem: bool = False
    """Its own group's binding reports it is not Synced (the message says what it says)."""


@dataclass(frozen=True)
class TaggedResult:
    """The `awsTargetGroups` generators' part of the plan, for status."""

    read: bool
    message: str
    matched: int
    target_groups: int
    problems: tuple[tuple[str, str], ...]
    """(target group name, why), at most `MAX_PROBLEMS`, by name."""
    problem_count: int = 0


@dataclass(frozen=True)
class Plan:
    apply: tuple[dict[str, Any], ...]
    """Desired objects whose template hash differs from what exists (created or updated)."""
    delete: tuple[str, ...]
    clusters: tuple[ClusterResult, ...]
    desired: int
    apply_bindings: tuple[dict[str, Any], ...] = ()
    """Desired AWSTargetGroupBindings whose template hash differs from what exists."""
    delete_bindings: tuple[str, ...] = ()
    desired_bindings: int = 0
    tagged: TaggedResult | None = None
    """None when the set has no `awsTargetGroups` generator."""


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


def _hash(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _variables(cluster: ObservedCluster) -> dict[str, Any]:
    return {"cluster": {"name": cluster.name}, **cluster.vars}


def _owned_metadata(
    name: str,
    set_name: str,
    set_uid: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    cluster: ObservedCluster,
    binding: Binding | None,
) -> dict[str, Any]:
    """`binding`: the TargetGroupBinding the object comes from (None for a cluster's own)."""
    source = {BINDING_ANNOTATION: f"{binding.namespace}/{binding.name}"} if binding else {}
    return {
        "name": name,
        "namespace": namespace,
        "labels": {**labels, SET_LABEL: set_name},
        "annotations": {**annotations, CLUSTER_ANNOTATION: cluster.name, **source},
        "ownerReferences": [
            {
                "apiVersion": API_VERSION,
                "kind": TARGET_GROUP_SET.kind,
                "name": set_name,
                "uid": set_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


def _group_labels(spec: AWSTargetGroupSetSpec, cluster: ObservedCluster) -> dict[str, str]:
    """The template's labels, and the EKS cluster's version tag when they give no version."""
    labels = render_labels(spec.template.metadata.labels, _variables(cluster))
    version = cluster.version
    if VERSION_KEY not in labels and version and valid_label_value(version):
        labels[VERSION_KEY] = version
    return labels


def desired_target_group(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    cluster: ObservedCluster,
    binding: Binding | None,
    arn: str = "",
    generated_binding: str = "",
) -> dict[str, Any]:
    """The AWSTargetGroup for `binding` of `cluster`; with `binding` None, the cluster's own
    group, `arn` reported by its generated binding `generated_binding`."""
    variables = _variables(cluster)
    meta = spec.template.metadata
    name = (
        dns_name(set_name, cluster.name, binding.namespace, binding.name)
        if binding
        else dns_name(set_name, cluster.name)
    )
    annotations = {k: render(v, variables) for k, v in meta.annotations.items()}
    if binding is None:
        annotations[GENERATED_BINDING_ANNOTATION] = generated_binding
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": TARGET_GROUP.kind,
        "metadata": _owned_metadata(
            name,
            set_name,
            set_uid,
            namespace,
            _group_labels(spec, cluster),
            annotations,
            cluster,
            binding,
        ),
        "spec": {"arn": binding.arn if binding else arn},
    }
    obj["metadata"]["annotations"][HASH_ANNOTATION] = _hash(obj)
    return obj


def target_group_name(name: str) -> str:
    """An ELBv2 target group name from `name`: `[A-Za-z0-9-]`, at most 32 characters, no
    hyphen at either end (a longer one is cut and ends in 8 hex characters of the full name's
    SHA-256)."""
    clean = re.sub(r"[^A-Za-z0-9-]+", "-", name)
    clean = re.sub(r"-{2,}", "-", clean).strip("-") or "x"
    if len(clean) <= MAX_TARGET_GROUP_NAME:
        return clean
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{clean[: MAX_TARGET_GROUP_NAME - 9].rstrip('-')}-{digest}"


def owns_group(template: TargetGroupBindingTemplate | None, cluster: ObservedCluster) -> bool:
    """Whether `cluster` (reachable) gets one binding that creates its own target group."""
    if template is None or template.spec.target_group_arn or cluster.bindings is None:
        return False
    if template.spec.target_group is not None:
        return True
    return cluster.vpc_id is not None and not any(b.arn for b in cluster.bindings)


def desired_binding(
    set_name: str,
    set_uid: str,
    namespace: str,
    template: TargetGroupBindingTemplate,
    cluster: ObservedCluster,
    binding: Binding | None,
    group_name: str,
) -> dict[str, Any]:
    """The AWSTargetGroupBinding generated beside the AWSTargetGroup `group_name`: for
    `binding` of `cluster`, or (None) the cluster's own, which creates its target group."""
    variables = _variables(cluster)
    meta = template.metadata
    name = render(unquoted_name(meta.name), variables) if meta.name else group_name
    if len(name) > 253 or not _OBJECT_NAME.match(name):
        raise TemplateError(
            f"bindingTemplate name {name!r} (from {meta.name!r}) is not a valid object name"
        )
    body = render_strings(
        template.spec.model_dump(mode="json", by_alias=True, exclude_unset=True), variables
    )
    if binding is None:
        group = body.setdefault("targetGroup", {})
        group.setdefault("name", target_group_name(name))
        if "vpcID" not in group:
            if not cluster.vpc_id:
                why = cluster.vpc_message or f"cluster {cluster.name} is not an EKS cluster"
                raise TemplateError(
                    f"the VPC to create the target group in is not known ({why}): write "
                    "bindingTemplate.spec.targetGroup.vpcID"
                )
            group["vpcID"] = cluster.vpc_id
    elif not body.get("targetGroupARN"):
        body["targetGroupARN"] = binding.arn
    try:
        AWSTargetGroupBindingSpec.model_validate(body)
    except ValidationError as e:
        where = field_path(e.errors()[0]["loc"])
        raise TemplateError(
            f"bindingTemplate spec{'.' + where if where else ''}: {e.errors()[0]['msg']}"
        ) from None
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": AWS_TARGET_GROUP_BINDING.kind,
        "metadata": _owned_metadata(
            name,
            set_name,
            set_uid,
            namespace,
            render_labels(meta.labels, variables),
            {k: render(v, variables) for k, v in meta.annotations.items()},
            cluster,
            binding,
        ),
        "spec": body,
    }
    obj["metadata"]["annotations"][HASH_ANNOTATION] = _hash(obj)
    return obj


def _to_apply(
    desired: Mapping[str, dict[str, Any]], existing: Sequence[Existing]
) -> tuple[dict[str, Any], ...]:
    have = {e.name: e for e in existing}
    return tuple(
        o
        for name, o in sorted(desired.items())
        if name not in have
        or have[name].template_hash != o["metadata"]["annotations"][HASH_ANNOTATION]
    )


def _to_delete(
    desired: Mapping[str, Any], existing: Sequence[Existing], kept_clusters: set[str]
) -> tuple[str, ...]:
    return tuple(
        sorted(e.name for e in existing if e.name not in desired and e.cluster not in kept_clusters)
    )


def _plan_cluster(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    c: ObservedCluster,
    existing_bindings: Sequence[Existing],
    binding_owner: Mapping[str, str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """The AWSTargetGroups and AWSTargetGroupBindings of reachable cluster `c`, and why its
    own group is not made yet ("" when it is, or it has none); `TemplateError` if the
    templates cannot be rendered for it."""
    assert c.bindings is not None
    waiting = ""
    groups: list[dict[str, Any]] = []
    bindings: list[dict[str, Any]] = []
    found = sorted((b for b in c.bindings if b.arn), key=lambda b: (b.namespace, b.name))
    sources: list[Binding | None] = [None] if owns_group(spec.binding_template, c) else list(found)
    for b in sources:
        if b is None:
            group_name = dns_name(set_name, c.name)
        else:
            group = desired_target_group(set_name, set_uid, namespace, spec, c, b)
            groups.append(group)
            group_name = group["metadata"]["name"]
        if spec.binding_template is None:
            continue
        tgb = desired_binding(set_name, set_uid, namespace, spec.binding_template, c, b, group_name)
        tgb_name = tgb["metadata"]["name"]
        if tgb_name in binding_owner or any(o["metadata"]["name"] == tgb_name for o in bindings):
            other = binding_owner.get(tgb_name)
            where = f"also for cluster {other}" if other else f"in cluster {c.name}"
            raise TemplateError(
                f"bindingTemplate name {tgb_name!r} is generated twice ({where});"
                " make it unique per TargetGroupBinding"
            )
        bindings.append(tgb)
        if b is not None:
            continue
        have = next((e for e in existing_bindings if e.name == tgb_name), None)
        if have is not None and have.arn:
            groups.append(
                desired_target_group(
                    set_name, set_uid, namespace, spec, c, None, have.arn, tgb_name
                )
            )
        else:
            waiting = f"waiting for AWSTargetGroupBinding {tgb_name} to report its target group"
            if have is not None and have.problem:
                waiting += f" (it says: {have.problem})"
    return groups, bindings, waiting


def plan(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    clusters: Sequence[ObservedCluster],
    existing: Sequence[Existing],
    existing_bindings: Sequence[Existing] = (),
    tagged: ObservedTargetGroups | None = None,
) -> Plan:
    from_tags = [e for e in existing if e.target_group]
    existing = [e for e in existing if not e.target_group]
    desired: dict[str, dict[str, Any]] = {}
    desired_bindings: dict[str, dict[str, Any]] = {}
    # Binding names are the template's, so two clusters may ask for the same one: the first
    # (by cluster name) has it, and so does an unreachable cluster that holds it already.
    binding_owner = {
        e.name: e.cluster
        for e in existing_bindings
        if any(c.bindings is None and c.name == e.cluster for c in clusters)
    }
    results: list[ClusterResult] = []
    kept_clusters: set[str] = set()
    kept_groups: set[str] = set()
    """Own groups whose binding has not reported an ARN yet: kept as they are."""
    for c in sorted(clusters, key=lambda c: c.name):
        if c.bindings is None:
            kept_clusters.add(c.name)
            kept = sum(1 for e in existing if e.cluster == c.name)
            results.append(ClusterResult(c.name, False, c.message, kept))
            continue
        try:
            groups, bindings, waiting = _plan_cluster(
                set_name, set_uid, namespace, spec, c, existing_bindings, binding_owner
            )
        except TemplateError as e:
            kept_clusters.add(c.name)
            kept = sum(1 for e2 in existing if e2.cluster == c.name)
            results.append(ClusterResult(c.name, True, f"template: {e}", kept))
            continue
        for o in groups:
            desired[o["metadata"]["name"]] = o
        for o in bindings:
            desired_bindings[o["metadata"]["name"]] = o
            binding_owner[o["metadata"]["name"]] = c.name
        count = len(groups)
        if waiting:
            kept_groups.add(dns_name(set_name, c.name))
            count += sum(1 for e in existing if e.name == dns_name(set_name, c.name))
            msg = waiting
        else:
            own = owns_group(spec.binding_template, c)
            skipped = 0 if own else sum(1 for b in c.bindings if not b.arn)
            msg = f"{skipped} binding(s) without spec.targetGroupARN skipped" if skipped else ""
        results.append(ClusterResult(c.name, True, msg, count, "(it says: " in waiting))
    tag_apply, tag_delete, tag_result = _plan_tagged(
        set_name, set_uid, namespace, spec, tagged, from_tags, set(desired)
    )
    return Plan(
        apply=_to_apply(desired, existing) + tag_apply,
        delete=tuple(
            sorted(
                n
                for n in _to_delete(desired, existing, kept_clusters) + tag_delete
                if n not in kept_groups
            )
        ),
        clusters=tuple(results),
        desired=len(desired) + (tag_result.target_groups if tag_result else 0),
        apply_bindings=_to_apply(desired_bindings, existing_bindings),
        delete_bindings=_to_delete(desired_bindings, existing_bindings, kept_clusters),
        desired_bindings=len(desired_bindings),
        tagged=tag_result,
    )


# --- target groups found by AWS tags -------------------------------------------------------


class GroupProblemError(ValueError):
    """Why a matching target group gets no (new) AWSTargetGroup."""


def version_problem(value: str | None, tag: str, where: str) -> str | None:
    """Why `value` (the `tag` tag of `where`) cannot be a version label, or None if it can:
    read the way a Cell reads versions (semver, a leading `v`, minor and patch optional)."""
    if value is None:
        return f"{where} has no tag {tag!r}"
    body = value[1:] if value[:1] in ("v", "V") else value
    try:
        semver.Version.parse(body, optional_minor_and_patch=True)
    except (ValueError, TypeError):
        return f"{where} tag {tag}={value!r} is not a version (semver like 1.2.3 or v1.2)"
    if not valid_label_value(value):
        return f"{where} tag {tag}={value!r} is a version but not a valid label value"
    return None


def matches(generator: AWSTargetGroupsGenerator, group: TaggedTargetGroup) -> bool:
    want = generator.target_group_selector.match_tags
    return all(group.tags.get(k) == v for k, v in want.items())


def desired_tagged_group(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    generator: AWSTargetGroupsGenerator,
    group: TaggedTargetGroup,
    eks_tags: Mapping[str, Mapping[str, str]] | None,
    eks_message: str = "",
) -> dict[str, Any]:
    """The AWSTargetGroup for a matching target group; `GroupProblemError` says why there
    is none."""
    variables: dict[str, Any] = {
        "awsTargetGroup": {"name": group.name, "arn": group.arn, "tags": dict(group.tags)}
    }
    annotations: dict[str, str] = {TARGET_GROUP_ANNOTATION: group.name}
    source, where = group.tags, "target group"
    if generator.eks_cluster_tag is not None:
        cluster = group.tags.get(generator.eks_cluster_tag)
        if not cluster:
            raise GroupProblemError(
                f"target group has no tag {generator.eks_cluster_tag!r} naming its EKS cluster"
            )
        if eks_tags is None:
            unread = eks_message or "EKS could not be read"
            raise GroupProblemError(f"EKS cluster {cluster} not read: {unread}")
        if cluster not in eks_tags:
            raise GroupProblemError(
                f"EKS cluster {cluster!r} (tag {generator.eks_cluster_tag}) does not exist"
            )
        source, where = eks_tags[cluster], f"EKS cluster {cluster}"
        variables["cluster"] = {"name": cluster}
        variables["awseks"] = {"cluster": {"name": cluster, "tags": dict(source)}}
        annotations[CLUSTER_ANNOTATION] = cluster
    version = source.get(generator.version_tag)
    why = version_problem(version, generator.version_tag, where)
    if why is not None or version is None:
        raise GroupProblemError(why or "no version")
    meta = spec.template.metadata
    try:
        labels = render_labels(meta.labels, variables)
        rendered = {k: render(v, variables) for k, v in meta.annotations.items()}
    except TemplateError as e:
        raise GroupProblemError(f"template: {e}") from None
    obj: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": TARGET_GROUP.kind,
        "metadata": {
            "name": dns_name(set_name, group.name),
            "namespace": namespace,
            "labels": {**labels, generator.version_label: version, SET_LABEL: set_name},
            "annotations": {**rendered, **annotations},
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": TARGET_GROUP_SET.kind,
                    "name": set_name,
                    "uid": set_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"arn": group.arn},
    }
    obj["metadata"]["annotations"][HASH_ANNOTATION] = _hash(obj)
    return obj


def _plan_tagged(
    set_name: str,
    set_uid: str,
    namespace: str,
    spec: AWSTargetGroupSetSpec,
    observed: ObservedTargetGroups | None,
    existing: Sequence[Existing],
    taken: set[str],
) -> tuple[tuple[dict[str, Any], ...], tuple[str, ...], TaggedResult | None]:
    """(apply, delete, result) for the groups found by AWS tags; `taken`: names that groups
    of TargetGroupBindings have (they keep them)."""
    generators = [g.aws_target_groups for g in spec.generators if g.aws_target_groups]
    if not generators:
        return (), tuple(sorted(e.name for e in existing)), None
    if observed is None or observed.groups is None:
        message = observed.message if observed is not None else "not read"
        return (), (), TaggedResult(False, message or "not read", 0, len(existing), ())
    desired: dict[str, dict[str, Any]] = {}
    kept: set[str] = set()
    problems: list[tuple[str, str]] = []
    matched = 0
    for group in sorted(observed.groups, key=lambda g: (g.name, g.arn)):
        generator = next((g for g in generators if matches(g, group)), None)
        if generator is None:
            continue
        matched += 1
        name = dns_name(set_name, group.name)
        try:
            if name in desired or name in taken:
                raise GroupProblemError(f"AWSTargetGroup {name} is generated for another already")
            obj = desired_tagged_group(
                set_name,
                set_uid,
                namespace,
                spec,
                generator,
                group,
                observed.eks_tags,
                observed.eks_message,
            )
        except GroupProblemError as e:
            problems.append((group.name, str(e)))
            if name not in desired:
                kept.add(name)
            continue
        desired[name] = obj
    have = {e.name for e in existing}
    delete = tuple(sorted(n for n in have if n not in desired and n not in kept))
    count = len(desired) + len(kept & have)
    return (
        _to_apply(desired, existing),
        delete,
        TaggedResult(True, "", matched, count, tuple(problems[:MAX_PROBLEMS]), len(problems)),
    )
