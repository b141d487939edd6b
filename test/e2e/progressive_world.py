"""The seed-004 world for ProgressiveRollout end-to-end tests: the original controller's
example rolling an Argo CD ApplicationSet out over three workload control planes labelled
by area and region (`CLUSTERS`), through the real Argo CD. The fixtures that start it
(`workloads`, `app`, `rollout_okra`) are in e2e/conftest.py; `App` is one ApplicationSet
of a test, with its commits, and the ProgressiveRollout of the example pointed at it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml

from okra_controllers.api.kinds import APPLICATION, PROGRESSIVE_ROLLOUT
from okra_runtime import GVK, Client
from okra_runtime.errors import NotFoundError
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD
from support import eventually

if TYPE_CHECKING:
    from e2e.conftest import OkraManager

APPLICATION_SET = GVK("argoproj.io", "v1alpha1", "ApplicationSet")
CONFIGMAP = GVK("", "v1", "ConfigMap")
CLUSTERS = {
    "pr-euw1-a": {"area": "emea", "region": "eu-west-1"},
    "pr-euw1-b": {"area": "emea", "region": "eu-west-1"},
    "pr-euc1-a": {"area": "emea", "region": "eu-central-1"},
}
"""The workload clusters (Argo CD cluster names) and their labels."""
SUITE = {"okra-e2e": "progressive"}
"""The label every workload cluster of this world carries: the ApplicationSet's selector."""
SLOW = 180.0
"""How long a whole rollout may take on a busy machine (seconds)."""


@dataclass
class App:
    """One ApplicationSet of the test: its git path, workload namespace and commits."""

    argocd: ArgoCD
    client: Client
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    planes: dict[str, ControlPlane] = field(default_factory=dict)
    commits: dict[str, str] = field(default_factory=dict)  # revision -> marker

    @property
    def name(self) -> str:
        return f"web-{self.suffix}"

    @property
    def ns(self) -> str:
        return f"pr-{self.suffix}"

    def commit(self, marker: str) -> str:
        assert self.argocd.git is not None
        doc = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "web", "namespace": self.ns},
            "data": {"marker": marker},
        }
        revision = self.argocd.git.commit({f"{self.name}/cm.yaml": yaml.safe_dump(doc)}, marker)
        self.commits[revision] = marker
        return revision

    def appset(self, project: str = "default") -> dict[str, Any]:
        assert self.argocd.git is not None
        return {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": self.name, "namespace": self.argocd.namespace},
            "spec": {
                "generators": [{"clusters": {"selector": {"matchLabels": SUITE}}}],
                "template": {
                    "metadata": {"name": "{{name}}-" + self.suffix},
                    "spec": {
                        "project": project,
                        "source": {
                            "repoURL": self.argocd.git.url,
                            "path": self.name,
                            "targetRevision": "main",
                        },
                        "destination": {"server": "{{server}}", "namespace": self.ns},
                        # No `automated`: okra decides when each Application syncs.
                        "syncPolicy": {"syncOptions": ["CreateNamespace=true"]},
                    },
                },
            },
        }

    def project(self, **spec: Any) -> dict[str, Any]:
        """An Argo CD AppProject of this test (`proj-<suffix>`): any source, any kind; the
        destinations and sync windows given (every destination by default)."""
        return {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": f"proj-{self.suffix}", "namespace": self.argocd.namespace},
            "spec": {
                "sourceRepos": ["*"],
                "destinations": [{"server": "*", "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                **spec,
            },
        }

    def rollout(self, name: str | None = None, **spec: Any) -> dict[str, Any]:
        """The original controller's example, pointed at this ApplicationSet."""
        return {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ProgressiveRollout",
            "metadata": {"name": name or self.name, "namespace": self.argocd.namespace},
            "spec": {
                "sourceRef": {
                    "apiGroup": "argoproj.io/v1alpha1",
                    "kind": "ApplicationSet",
                    "name": self.name,
                },
                "stages": [
                    {
                        "name": "canary in EMEA",
                        "maxUnavailable": 2,
                        "maxClusters": 2,
                        "clusters": {"selector": {"matchLabels": {"area": "emea"}}},
                        "topologyKey": "region",
                        "requeue": {
                            "selector": {"matchLabels": {"drained": "true"}},
                            "attempts": 5,
                            "interval": "30m",
                        },
                    },
                    {
                        "name": "eu-west-1",
                        "maxUnavailable": "25%",
                        "maxClusters": "100%",
                        "clusters": {"selector": {"matchLabels": {"region": "eu-west-1"}}},
                        "requeue": {
                            "selector": {"matchLabels": {"drained": "true"}},
                            "attempts": 5,
                            "interval": "30m",
                        },
                    },
                    {
                        "name": "eu-central-1",
                        "maxUnavailable": "25%",
                        "maxClusters": "100%",
                        "clusters": {"selector": {"matchLabels": {"region": "eu-central-1"}}},
                    },
                ],
                **spec,
            },
        }

    async def marker(self, cluster: str) -> str | None:
        """What one workload cluster runs, read from the cluster."""
        async with await Client.from_kubeconfig(self.planes[cluster].kubeconfig()) as c:
            try:
                return str((await c.get(CONFIGMAP, "web", self.ns))["data"]["marker"])
            except NotFoundError:
                return None

    async def markers(self) -> dict[str, str | None]:
        return {name: await self.marker(name) for name in self.planes}

    async def status(self, name: str | None = None) -> dict[str, Any]:
        try:
            obj = await self.client.get(
                PROGRESSIVE_ROLLOUT, name or self.name, self.argocd.namespace
            )
        except NotFoundError:
            return {}
        return obj.get("status") or {}

    async def phase_is(self, phase: str, name: str | None = None) -> bool:
        return (await self.status(name)).get("phase") == phase

    async def revision_is(self, revision: str, phase: str) -> bool:
        st = await self.status()
        return bool(st.get("revision") == revision and st.get("phase") == phase)

    async def applications(self) -> list[dict[str, Any]]:
        apps = (await self.client.list(APPLICATION, self.argocd.namespace)).items
        return [a for a in apps if a["metadata"]["name"].endswith(f"-{self.suffix}")]

    async def resolved(self, revision: str) -> bool:
        """Argo CD has generated every Application and compared it against `revision`."""
        apps = await self.applications()
        return len(apps) == len(CLUSTERS) and all(
            ((a.get("status") or {}).get("sync") or {}).get("revision") == revision for a in apps
        )

    async def okra_syncs(self) -> dict[str, list[str]]:
        """Application -> revisions of the syncs okra started, from Argo CD's history."""
        out: dict[str, list[str]] = {}
        for a in await self.applications():
            history = (a.get("status") or {}).get("history") or []
            out[a["metadata"]["name"]] = [h.get("revision") for h in history]
        return out


async def start(app: App, okra: OkraManager, **spec: Any) -> str:
    """Commit v1, create the ApplicationSet and the ProgressiveRollout; returns v1's revision
    once the rollout has brought every cluster to it."""
    first = app.commit("v1")
    await app.client.create(app.appset())
    assert await eventually(lambda: app.resolved(first), SLOW, 0.5), okra.tail()
    await app.client.create(app.rollout(**spec))
    assert await eventually(lambda: app.revision_is(first, "Completed"), SLOW, 0.5), okra.tail()
    return first
