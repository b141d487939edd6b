"""The Argo CD harness is real: an Application synced by Argo CD's own application-controller
(its manifests rendered by its repo-server from a `file://` git repository) creates a ConfigMap
in a workload cluster registered by a cluster Secret, and a commit to the repository changes it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import yaml

from okra_runtime import GVK, Client
from okra_runtime.errors import NotFoundError
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD
from support import eventually

APPLICATION = GVK("argoproj.io", "v1alpha1", "Application")
CONFIGMAP = GVK("", "v1", "ConfigMap")


def configmap(name: str, namespace: str, greeting: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": {"greeting": greeting},
        }
    )


def application(name: str, argocd: ArgoCD, path: str, server: str, ns: str) -> dict[str, Any]:
    assert argocd.git is not None
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": argocd.namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": argocd.git.url, "path": path, "targetRevision": "main"},
            "destination": {"server": server, "namespace": ns},
            "syncPolicy": {
                "automated": {"prune": True},
                "syncOptions": ["CreateNamespace=true"],
            },
        },
    }


@pytest.fixture
async def workload(fleet: Callable[[str], ControlPlane]) -> AsyncIterator[Client]:
    c = await Client.from_kubeconfig(fleet("harness-1").kubeconfig())
    async with c:
        yield c


async def test_application_syncs_a_configmap_and_follows_a_commit(
    argocd: ArgoCD,
    fleet: Callable[[str], ControlPlane],
    rt_client: Client,
    workload: Client,
) -> None:
    assert argocd.git is not None
    suffix = uuid.uuid4().hex[:8]
    app, ns, path = f"harness-{suffix}", f"h-{suffix}", f"harness/{suffix}"
    server = argocd.register_cluster("harness-1", fleet("harness-1"), {"suite": "harness"})
    first = argocd.git.commit({f"{path}/cm.yaml": configmap("hello", ns, "hello")}, "hello")
    await rt_client.create(application(app, argocd, path, server, ns))

    async def greeting() -> str | None:
        try:
            return str((await workload.get(CONFIGMAP, "hello", ns))["data"]["greeting"])
        except NotFoundError:
            return None

    async def synced_at(revision: str) -> bool:
        st = (await rt_client.get(APPLICATION, app, argocd.namespace)).get("status") or {}
        sync = st.get("sync") or {}
        return bool(sync.get("status") == "Synced" and sync.get("revision") == revision)

    async def says(text: str) -> bool:
        return await greeting() == text

    assert await eventually(lambda: says("hello"), within=120, interval=0.5), (
        f"ConfigMap never appeared; repo-server log:\n{argocd.process('argocd-repo-server').tail()}"
        f"\napplication-controller log:\n"
        f"{argocd.process('argocd-application-controller').tail()}"
    )
    assert await eventually(lambda: synced_at(first), within=60, interval=0.5)

    second = argocd.git.commit({f"{path}/cm.yaml": configmap("hello", ns, "bonjour")}, "bonjour")
    assert await eventually(lambda: says("bonjour"), within=120, interval=0.5)
    assert await eventually(lambda: synced_at(second), within=60, interval=0.5)
    await rt_client.delete(APPLICATION, app, argocd.namespace)
