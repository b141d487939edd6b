"""How an application moves between clusters through Argo CD cluster Secrets."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from okra_controllers.api.v1alpha1.common import ApiModel
from okra_controllers.api.v1alpha1.listener import LabelSelector


class ArgoCDClusterSecret(ApiModel):
    """Which Argo CD cluster Secrets are the Cell's clusters, and the labels that put an
    application on them (`labels`)."""

    selector: LabelSelector = Field(default_factory=LabelSelector)
    """Cluster Secrets (`argocd.argoproj.io/secret-type: cluster`, in the Cell's namespace)
    of this Cell; each Secret's version is read from the Cell's version labels. Empty: every
    cluster Secret there with a version label."""
    labels: dict[str, str] = Field(min_length=1)
    """The labels the ApplicationSet's cluster generator selects on: okra adds them to the
    clusters that should run the app and removes them from the others."""


class ArgoCDApplicationSet(ApiModel):
    """The Applications to wait for on a version's clusters (until each is Synced and
    Healthy): those an ApplicationSet of this `name` owns, or those
    whose labels match `selector`; neither: every Application sent to the clusters."""

    name: str | None = None
    selector: LabelSelector | None = None


class ArgoCDUpdateStrategy(ApiModel):
    type: Literal["CreateBeforeDelete", "DeleteBeforeCreate"] = "CreateBeforeDelete"
    """`CreateBeforeDelete`: the new version's clusters get the labels first, okra waits for
    their Applications to be Synced and Healthy before any traffic moves, and the old
    version's clusters lose the labels only once the new version has completed (postchecks
    passed). `DeleteBeforeCreate` (apps with no load balancer, e.g. background jobs): the old
    clusters lose the labels, their Applications go, then the new clusters get them."""


class CellArgoCD(ApiModel):
    """Argo CD cluster Secret strategy: which app runs on which clusters."""

    cluster_secret: ArgoCDClusterSecret
    application_set: ArgoCDApplicationSet | None = None
    update_strategy: ArgoCDUpdateStrategy = Field(default_factory=ArgoCDUpdateStrategy)

    @property
    def delete_first(self) -> bool:
        return self.update_strategy.type == "DeleteBeforeCreate"
