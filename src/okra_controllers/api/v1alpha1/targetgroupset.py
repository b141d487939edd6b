"""AWSTargetGroupSet: AWSTargetGroups generated from the TargetGroupBindings of many clusters,
or from ELBv2 target groups found by their AWS tags.

Field names follow the original okra: `generators` (`argocdClusters` selects Argo CD cluster
Secrets by label, `awseks` selects EKS clusters by tag), `bindingSelector` (which
TargetGroupBindings in each cluster count), and `template` (the metadata of every generated
AWSTargetGroup; `{{.cluster.name}}`, `{{.cluster.labels.KEY}}`, `{{.awseks.cluster.name}}` and
`{{.awseks.cluster.tags.KEY}}` are substituted, which is how a cluster's version tag becomes the
target group's version label). `bindingTemplate`, optional, is the metadata and spec of an
AWSTargetGroupBinding generated beside each AWSTargetGroup, with the same substitution in every
string; its `targetGroupARN` defaults to the discovered TargetGroupBinding's. A cluster of an
`awseks` generator that has no TargetGroupBinding (no AWS Load Balancer Controller in the
cluster) gets one binding from the template that creates a target group in the cluster's VPC
and registers the nodes its targets select, and one AWSTargetGroup with that group's ARN (as
does every cluster when the template gives `targetGroup`). An `awseks` cluster's tag
`okra.mumo.co/version` becomes the version label of its AWSTargetGroups when the template sets
none.

okra's own generator `awsTargetGroups` needs no cluster at all: it selects the account's
target groups by their tags (`targetGroupSelector.matchTags`), as Terraform or CloudFormation
made them and eksctl's `targetGroupARNs` attached them, with no AWS Load Balancer Controller
and no TargetGroupBinding anywhere. Each group's version is read from a tag (`versionTag`: on
the target group, or, with `eksClusterTag`, on the EKS cluster that tag names) and written,
checked as a version, to `versionLabel`; the template's labels and annotations are added, with
`{{.awsTargetGroup.name}}`, `{{.awsTargetGroup.arn}}`, `{{.awsTargetGroup.tags.KEY}}` (and, with
`eksClusterTag`, `{{.cluster.name}}`, `{{.awseks.cluster.name}}`,
`{{.awseks.cluster.tags.KEY}}`) substituted.

Other spellings the original documents use are accepted and normalised, with a warning
Event naming the preferred one (`spelling_warnings`): `awseks.clusterSelector.matchLabels`
(EKS tags written as labels) means `matchTags`; `awseks.bindingSelector` means the spec's
`bindingSelector`; a target's `nodeSelector` as `{labels: ...}` or a plain label map means
`{matchLabels: ...}`; a binding name with a quoted placeholder (`web-"{{.awseks.cluster.name}}"`)
means it without the quotes; the original's Go API has an `arn`, which nothing reads: ignored.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1 import spelling
from okra_controllers.api.v1alpha1.cell import LabelSelector
from okra_controllers.api.v1alpha1.common import (
    ARN_MAX_LENGTH,
    ApiModel,
    Condition,
    OkraObject,
    TemplateMetadata,
    condition_column,
    okra_crd,
    with_rules,
)
from okra_controllers.api.v1alpha1.targetgroupbinding import (
    TargetSpec,
    node_selector_warnings,
    one_group_config,
    refuse_both_groups,
)
from okra_runtime.crdgen import CRDInfo, PrinterColumn


class ArgoCDClustersGenerator(ApiModel):
    selector: LabelSelector = Field(default_factory=LabelSelector)
    """Argo CD cluster Secrets (in the set's namespace) whose labels match."""


class EKSClusterSelector(ApiModel):
    match_tags: dict[str, str] = Field(default_factory=dict)
    match_labels: dict[str, str] = Field(default_factory=dict)
    """Another spelling of `matchTags` (EKS tags): merged into it, with a warning."""

    @model_validator(mode="after")
    def _tags(self) -> EKSClusterSelector:
        if self.match_labels:
            self.match_tags = {**self.match_labels, **self.match_tags}
            self.match_labels = {}
        return self


class AWSEKSGenerator(ApiModel):
    cluster_selector: EKSClusterSelector = Field(default_factory=EKSClusterSelector)
    binding_selector: LabelSelector | None = None
    """Another place for the spec's `bindingSelector`: merged into it, with a warning."""


DEFAULT_VERSION_KEY = "okra.mumo.co/version"
"""The default `versionTag` and `versionLabel`: the same key on both sides."""


class TargetGroupTagSelector(ApiModel):
    match_tags: dict[str, str] = Field(min_length=1, max_length=10)
    """Every one of these tags, with exactly this value, is on the target group (AWS tags are
    case-sensitive). At least one: a generator never takes every target group of the account."""


class AWSTargetGroupsGenerator(ApiModel):
    """ELBv2 target groups of the manager's account and region, selected by their tags."""

    target_group_selector: TargetGroupTagSelector
    version_tag: str = Field(default=DEFAULT_VERSION_KEY, min_length=1, max_length=128)
    """The tag whose value is the version (semver; a leading `v` is fine): the target
    group's own, or with `eksClusterTag` the EKS cluster's. A group without it, or whose value
    is not a version, is reported, never guessed."""
    eks_cluster_tag: str | None = Field(default=None, min_length=1, max_length=128)
    """Optional: the target group tag naming the EKS cluster its targets belong to; the
    version is then read from that cluster's `versionTag` tag (EKS DescribeCluster)."""
    version_label: str = Field(
        default=DEFAULT_VERSION_KEY,
        min_length=1,
        max_length=317,
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$",
    )
    """The label of each generated AWSTargetGroup that carries the version (a Cell reads
    `okra.mumo.co/version` unless its `versionLabels` say otherwise)."""


class TargetGroupSetGenerator(ApiModel):
    """Exactly one generator kind."""

    model_config = with_rules(
        (
            "(has(self.argocdClusters) ? 1 : 0) + (has(self.awseks) ? 1 : 0)"
            " + (has(self.awsTargetGroups) ? 1 : 0) == 1",
            "a generator has exactly one of argocdClusters, awseks, awsTargetGroups",
        ),
    )
    argocd_clusters: ArgoCDClustersGenerator | None = Field(default=None, alias="argocdClusters")
    awseks: AWSEKSGenerator | None = None
    aws_target_groups: AWSTargetGroupsGenerator | None = None


class TargetGroupTemplate(ApiModel):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)


class BindingTemplateMetadata(TemplateMetadata):
    name: str | None = None
    """Defaults to the name of the AWSTargetGroup the binding is generated beside."""


class TargetGroupTemplateSpec(ApiModel):
    """An AWSTargetGroupBinding's `targetGroup`, before substitution (so no name pattern here:
    the generated binding is checked once rendered). Every field may be left out: `name`
    defaults to the generated binding's name (cut to 32 characters, with a hash, when longer),
    `vpcID` to the EKS cluster's VPC, `port` to the first target's."""

    name: str | None = Field(default=None, min_length=1)
    protocol: str = "HTTP"
    port: int | None = Field(default=None, ge=1, le=65535)
    vpc_id: str | None = Field(default=None, alias="vpcID", min_length=1)
    target_type: str = "instance"


_BOTH_GROUPS = (
    "bindingTemplate.spec.targetGroup (a group each binding creates) is not read beside "
    "bindingTemplate.spec.targetGroupARN (an existing group): remove one of them"
)


class BindingTemplateSpec(ApiModel):
    """An AWSTargetGroupBinding's spec, before substitution. Which target group each generated
    binding fills: `targetGroupARN` if given; else, beside each TargetGroupBinding found in a
    cluster, that binding's group; else (`targetGroup` given, or an `awseks` cluster with no
    TargetGroupBinding) one group per cluster that the binding creates (`targetGroup`, its
    fields defaulted from the cluster)."""

    model_config = one_group_config(_BOTH_GROUPS)

    target_group_arn: str | None = Field(
        default=None, alias="targetGroupARN", max_length=ARN_MAX_LENGTH
    )
    target_group: TargetGroupTemplateSpec | None = None
    targets: list[TargetSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_group(self) -> BindingTemplateSpec:
        refuse_both_groups(self.target_group_arn, self.target_group, _BOTH_GROUPS)
        return self


class TargetGroupBindingTemplate(ApiModel):
    metadata: BindingTemplateMetadata = Field(default_factory=BindingTemplateMetadata)
    spec: BindingTemplateSpec = Field(default_factory=BindingTemplateSpec)


class AWSTargetGroupSetSpec(ApiModel):
    model_config = with_rules(
        (
            "!has(self.bindingSelector) || self.generators.exists(g, !has(g.awsTargetGroups))",
            "spec.bindingSelector selects TargetGroupBindings inside "
            "clusters, and awsTargetGroups generators read none (they select target "
            "groups by AWS tags: targetGroupSelector.matchTags): remove "
            "spec.bindingSelector",
        ),
        (
            "!has(self.bindingTemplate) || self.generators.exists(g, !has(g.awsTargetGroups))",
            "spec.bindingTemplate makes a binding beside each target group "
            "found through a cluster's TargetGroupBinding, and awsTargetGroups "
            "generators find none that way (whatever made their groups registers the "
            "targets): remove spec.bindingTemplate",
        ),
    )
    generators: list[TargetGroupSetGenerator] = Field(min_length=1, max_length=16)
    binding_selector: LabelSelector = Field(default_factory=LabelSelector)
    """TargetGroupBindings (elbv2.k8s.aws/v1beta1, any namespace) whose labels match."""
    template: TargetGroupTemplate = Field(default_factory=TargetGroupTemplate)
    binding_template: TargetGroupBindingTemplate | None = None
    """When given, AWSTargetGroupBindings are generated: beside each AWSTargetGroup found
    through a TargetGroupBinding; and, for an `awseks` cluster with no TargetGroupBinding (no
    AWS Load Balancer Controller), or for every cluster when the template has `targetGroup`,
    one per cluster that creates its target group and registers the cluster's nodes, with an
    AWSTargetGroup for it (not for `awsTargetGroups`: whatever made those target groups
    registers their targets)."""
    arn: str | None = Field(default=None, max_length=ARN_MAX_LENGTH)
    """In the original okra's Go API, read by nothing; ignored."""

    @model_validator(mode="before")
    @classmethod
    def _original_spelling(cls, data: Any) -> Any:
        return spelling.normalise_target_group_set(data)

    @model_validator(mode="after")
    def _binding_selector(self) -> AWSTargetGroupSetSpec:
        merged = dict(self.binding_selector.match_labels)
        for g in self.generators:
            if g.awseks is None or g.awseks.binding_selector is None:
                continue
            for k, v in g.awseks.binding_selector.match_labels.items():
                if merged.get(k, v) != v:
                    raise ValueError(
                        f"bindingSelector: {k}={merged[k]} and awseks.bindingSelector "
                        f"{k}={v} disagree; write one spec.bindingSelector"
                    )
                merged[k] = v
            g.awseks.binding_selector = None
        self.binding_selector = LabelSelector(match_labels=merged)
        return self


_QUOTED = re.compile(r'"(\{\{[^{}]*\}\})"')


def unquoted_name(name: str) -> str:
    """A binding name template with each placeholder written in double quotes
    (`web-"{{.awseks.cluster.name}}"`, YAML quoting inside the value) read as meant:
    `web-{{.awseks.cluster.name}}`."""
    return _QUOTED.sub(r"\1", name)


def spelling_warnings(spec: dict[str, Any]) -> list[str]:
    """What an AWSTargetGroupSet spec (as written) spells another way than preferred."""
    out = []
    for i, g in enumerate(spec.get("generators") or []):
        eks = (g or {}).get("awseks") or {}
        if ((eks.get("clusterSelector") or {}).get("matchLabels")) is not None:
            out.append(
                f"spec.generators[{i}].awseks.clusterSelector.matchLabels: "
                "write matchTags (it selects EKS clusters by tag)"
            )
        if "bindingSelector" in eks:
            out.append(f"spec.generators[{i}].awseks.bindingSelector: write spec.bindingSelector")
    name = ((spec.get("bindingTemplate") or {}).get("metadata") or {}).get("name")
    if isinstance(name, str) and unquoted_name(name) != name:
        out.append(
            f"spec.bindingTemplate.metadata.name: write {unquoted_name(name)} (the quotes "
            "around a placeholder are not part of a name; read without them)"
        )
    targets = ((spec.get("bindingTemplate") or {}).get("spec") or {}).get("targets") or []
    out += node_selector_warnings(targets, "spec.bindingTemplate.spec.targets")
    return out + spelling.deprecated_spellings("AWSTargetGroupSet", spec)


class ClusterStatus(ApiModel):
    name: str
    reachable: bool
    message: str = ""
    target_groups: int = 0


class TargetGroupProblem(ApiModel):
    name: str
    """The target group's name in AWS."""
    message: str


class TaggedTargetGroupsStatus(ApiModel):
    """What the `awsTargetGroups` generators found in AWS."""

    read: bool
    """AWS answered; when false, `message` says why and every group is kept as it is."""
    message: str = ""
    matched: int = 0
    """Target groups whose tags match a generator."""
    target_groups: int = 0
    """AWSTargetGroups for them (those kept unchanged because of a problem included)."""
    problems: list[TargetGroupProblem] | None = None
    """Matching target groups okra could not label (at most 20 listed), each with why."""


class AWSTargetGroupSetStatus(ApiModel):
    observed_generation: int | None = None
    clusters: list[ClusterStatus] | None = None
    aws_target_groups: TaggedTargetGroupsStatus | None = None
    conditions: list[Condition] | None = None


class AWSTargetGroupSet(OkraObject):
    """Registers the target groups of every selected cluster's TargetGroupBindings, and the
    target groups whose AWS tags match."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AWSTargetGroupSet",
        "awstargetgroupsets",
        condition_column("Ready"),
        PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Ready")].reason'),
        short_names=("awstgs",),
    )
    kind: str = "AWSTargetGroupSet"
    spec: AWSTargetGroupSetSpec
    status: AWSTargetGroupSetStatus | None = None


TARGETGROUPSET_MODELS: tuple[type[ApiModel], ...] = (AWSTargetGroupSet,)
