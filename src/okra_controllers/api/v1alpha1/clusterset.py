"""ClusterSet: EKS clusters discovered by tag, written as Argo CD cluster Secrets.

Field names follow the original okra's ClusterSet (`generators[].awseks.clusterSelector
.matchTags`, `template.metadata.labels` with `{{.awseks.cluster.name}}` and
`{{.awseks.cluster.tags.KEY}}`), so its manifests apply unchanged; the original's Go API
spells `clusterSelector` as `selector`, which is read as `clusterSelector` (with a
`DeprecatedSpelling` Event). The Secrets are written in the ClusterSet's namespace: put the
ClusterSet where Argo CD looks for cluster Secrets.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1 import spelling
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
from okra_runtime.crdgen import CRDInfo, PrinterColumn


class EKSClusterSelector(ApiModel):
    match_tags: dict[str, str] = Field(default_factory=dict)
    """Every pair must be among the cluster's tags; empty selects every ACTIVE cluster."""


class AWSEKSGenerator(ApiModel):
    model_config = with_rules(
        (
            "!has(self.selector) || !has(self.clusterSelector)",
            "selector (the original okra's spelling) and clusterSelector "
            "say the same thing: write clusterSelector only",
        ),
    )
    cluster_selector: EKSClusterSelector = Field(default_factory=EKSClusterSelector)
    selector: EKSClusterSelector | None = None
    """The original okra's spelling of `clusterSelector`; read as that."""
    role_arn: str | None = Field(
        default=None,
        alias="roleARN",
        pattern=r"^arn:[a-z0-9-]+:iam::",
        max_length=ARN_MAX_LENGTH,
    )
    """Written as `awsAuthConfig.roleARN`: the role Argo CD assumes to reach the clusters."""


class ClusterSetGenerator(ApiModel):
    awseks: AWSEKSGenerator


class SecretTemplate(ApiModel):
    metadata: TemplateMetadata = Field(default_factory=TemplateMetadata)


class ClusterSetSpec(ApiModel):
    generators: list[ClusterSetGenerator] = Field(min_length=1, max_length=16)
    template: SecretTemplate = Field(default_factory=SecretTemplate)

    @model_validator(mode="before")
    @classmethod
    def _original_spelling(cls, data: Any) -> Any:
        return spelling.normalise_cluster_set(data)


class ClusterSetStatus(ApiModel):
    observed_generation: int | None = None
    clusters: list[str] | None = None
    """Names of the ACTIVE EKS clusters the generators selected."""
    secrets_written: list[str] | None = None
    """Names of the Argo CD cluster Secrets that are in sync with those clusters."""
    not_owned: list[str] | None = None
    """Secrets with this ClusterSet's label (or a name it wants) that it does not own: okra
    leaves them alone and lists them here so nobody mistakes them for okra's."""
    errors: list[str] | None = None
    """What kept a cluster or Secret from being synced, each saying what to fix."""
    conditions: list[Condition] | None = None


class ClusterSet(OkraObject):
    """EKS clusters selected by tags; one Argo CD cluster Secret per cluster."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "ClusterSet",
        "clustersets",
        condition_column("Ready"),
        PrinterColumn("Clusters", "string", ".status.clusters", priority=1),
    )
    kind: str = "ClusterSet"
    spec: ClusterSetSpec
    status: ClusterSetStatus | None = None


CLUSTERSET_MODELS: tuple[type[ApiModel], ...] = (ClusterSet,)
