"""AWSTargetGroupBinding: the targets of one AWS target group, gathered across clusters.

Field names follow the original okra: `targetGroupARN` names an existing group; when
it is empty, `targetGroup` describes the group to create (its ARN is then recorded in
`status.targetGroupARN`). Each entry of `targets` is one of:

- `ids`: IP addresses or instance IDs, registered as given;
- `clusterName` (an Argo CD cluster, by the `name` in its Secret) with `nodeName` or
  `nodeSelector`: the instances behind those Nodes (`spec.providerID`);
- `clusterSelector` (Argo CD cluster Secrets by label) with `nodeSelector`: the same, across
  every selected cluster.

`nodeSelector` is accepted in the three spellings the original documents use: a label selector
(`{matchLabels: {...}}`), `{labels: {...}}`, and a plain map of labels (`{type: node}`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field, model_validator

from okra_controllers.api.v1alpha1.cell import LabelSelector
from okra_controllers.api.v1alpha1.common import (
    ARN_MAX_LENGTH,
    ApiModel,
    Condition,
    OkraObject,
    condition_column,
    okra_crd,
    with_rules,
)
from okra_runtime.crdgen import CRDInfo, PrinterColumn


class NodeSelector(ApiModel):
    """Nodes whose labels include all of these. `{type: node}` means `{matchLabels: {type:
    node}}`; `labels` is another name for `matchLabels`."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {"x-kubernetes-preserve-unknown-fields": True}
    }
    match_labels: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _plain_labels(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = {"matchLabels", "match_labels", "labels"}
        plain = {k: v for k, v in data.items() if k not in known}
        if not plain and not data.get("labels"):
            return data
        bad = [k for k, v in plain.items() if not isinstance(v, str)]
        if bad:
            raise ValueError(
                f"nodeSelector: {', '.join(sorted(bad))} must be label values (strings); "
                "write {matchLabels: {KEY: VALUE}} or {KEY: VALUE}"
            )
        rest = {k: v for k, v in data.items() if k in known}
        match = dict(rest.pop("matchLabels", None) or rest.pop("match_labels", None) or {})
        labels = rest.pop("labels", None) or {}
        if not isinstance(labels, dict):
            return data  # the field's own validation says what is wrong
        return {**rest, "matchLabels": {**plain, **labels, **match}}

    def selector(self) -> dict[str, str]:
        """The labels a Node must carry (every spelling merged)."""
        return {**self.labels, **self.match_labels}


def node_selector_warnings(targets: list[Any], where: str = "spec.targets") -> list[str]:
    """Targets (as written) whose nodeSelector is not spelled `{matchLabels: ...}`, or is
    beside `ids` (not read there; the CRD refuses it since, objects stored before keep it)."""
    out = []
    for i, t in enumerate(targets):
        sel = (t or {}).get("nodeSelector") if isinstance(t, dict) else None
        if not isinstance(sel, dict):
            continue
        if t.get("ids") is not None:
            out.append(
                f"{where}[{i}].nodeSelector: not read beside ids (it picks Nodes of "
                "clusterName / clusterSelector): remove it"
            )
            continue
        other = sorted(k for k in sel if k != "matchLabels")
        if other == ["labels"]:
            out.append(f"{where}[{i}].nodeSelector.labels: write nodeSelector.matchLabels")
        elif other:
            out.append(
                f"{where}[{i}].nodeSelector: write the labels under nodeSelector.matchLabels "
                f"(found {', '.join(other)})"
            )
    return out


class TargetGroupSpec(ApiModel):
    """The target group to create when `targetGroupARN` is empty (reused if one of this name
    exists already)."""

    name: str = Field(
        min_length=1, max_length=32, pattern=r"^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$"
    )
    protocol: str = "HTTP"
    port: int | None = Field(default=None, ge=1, le=65535)
    """Defaults to the first target's port."""
    vpc_id: str = Field(alias="vpcID", min_length=1)
    target_type: str = "instance"


class TargetSpec(ApiModel):
    model_config = with_rules(
        (
            "has(self.ids) != (has(self.clusterName) || has(self.clusterSelector))",
            "a target has either ids, or clusterName / clusterSelector",
        ),
        (
            "!(has(self.clusterName) && has(self.clusterSelector))",
            "a target has at most one of clusterName, clusterSelector",
        ),
        (
            "!has(self.nodeName) || has(self.clusterName)",
            "nodeName needs clusterName",
        ),
        (
            "!has(self.ids) || !has(self.nodeSelector)",
            "nodeSelector picks Nodes of clusterName / clusterSelector and "
            "is not read beside ids: remove nodeSelector, or replace ids with "
            "clusterName / clusterSelector",
        ),
    )
    name: str = Field(min_length=1)
    ids: list[str] | None = None
    """IP addresses or instance IDs."""
    cluster_name: str | None = None
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    cluster_selector: LabelSelector | None = None
    port: int = Field(ge=1, le=65535)

    @model_validator(mode="after")
    def _one_source(self) -> TargetSpec:
        has_cluster = self.cluster_name is not None or self.cluster_selector is not None
        if (self.ids is not None) == has_cluster:
            raise ValueError(
                f"target {self.name}: give either ids, or clusterName / clusterSelector"
            )
        if self.cluster_name is not None and self.cluster_selector is not None:
            raise ValueError(f"target {self.name}: give clusterName or clusterSelector, not both")
        if self.node_name is not None and self.cluster_name is None:
            raise ValueError(f"target {self.name}: nodeName needs clusterName")
        return self


def one_group_config(message: str) -> ConfigDict:
    """The config of a spec naming its target group by `targetGroupARN` (an existing group)
    or `targetGroup` (one to create): the API server refuses both with `message`."""
    return with_rules(("!has(self.targetGroupARN) || !has(self.targetGroup)", message))


def refuse_both_groups(arn: str | None, group: object, message: str) -> None:
    """What `one_group_config`'s rule says, for an object read without the API server."""
    if arn and group is not None:
        raise ValueError(message)


class AWSTargetGroupBindingSpec(ApiModel):
    model_config = one_group_config(
        "targetGroup (a group to create) is not read beside targetGroupARN (an existing "
        "group): remove one of spec.targetGroup, spec.targetGroupARN"
    )
    target_group_arn: str | None = Field(
        default=None, alias="targetGroupARN", max_length=ARN_MAX_LENGTH
    )
    target_group: TargetGroupSpec | None = None
    targets: list[TargetSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _group(self) -> AWSTargetGroupBindingSpec:
        if not self.target_group_arn and self.target_group is None:
            raise ValueError("give targetGroupARN, or targetGroup to have the group created")
        refuse_both_groups(
            self.target_group_arn,
            self.target_group,
            "targetGroup (a group to create) is not read beside targetGroupARN (an existing "
            "group): remove one of them",
        )
        names = [t.name for t in self.targets]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"targets: names must be unique ({', '.join(dup)} repeated)")
        return self


class TargetStatus(ApiModel):
    name: str
    port: int
    clusters: list[str] | None = None
    ids: list[str] = Field(default_factory=list)


class AWSTargetGroupBindingStatus(ApiModel):
    observed_generation: int | None = None
    target_group_arn: str | None = Field(
        default=None, alias="targetGroupARN", max_length=ARN_MAX_LENGTH
    )
    targets: list[TargetStatus] | None = None
    conditions: list[Condition] | None = None


class AWSTargetGroupBinding(OkraObject):
    """Registers IPs, instances, and the nodes of many clusters into one AWS target group."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AWSTargetGroupBinding",
        "awstargetgroupbindings",
        PrinterColumn("ARN", "string", ".status.targetGroupARN", priority=1),
        condition_column("Synced"),
        PrinterColumn("Reason", "string", '.status.conditions[?(@.type=="Synced")].reason'),
        short_names=("awstgb",),
    )
    kind: str = "AWSTargetGroupBinding"
    spec: AWSTargetGroupBindingSpec
    status: AWSTargetGroupBindingStatus | None = None


TARGETGROUPBINDING_MODELS: tuple[type[ApiModel], ...] = (AWSTargetGroupBinding,)
