"""okra-manager with and without Argo CD's AppProject kind: on a plane that serves only the
Application and ApplicationSet kinds it does not wait for an AppProject watch that would never
sync — it reconciles, and every rollout says projects are not checked; once the kind is
installed and the manager restarted, it reads the projects."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from integration.progressiverollout.harness import (
    argo_plane,
    seed_world,
)
from integration.progressiverollout.test_controller import rollout, status_of
from okra_controllers.manager import local_command
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import find_argocd
from support import eventually

NS = "argocd"


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A plane of its own: the session's may have Argo CD's AppProject CRD already."""
    with argo_plane("noproject", NS, ("application", "applicationset")) as cp:
        yield cp


@pytest.fixture
async def client(plane: ControlPlane) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(plane.kubeconfig()) as c:
        yield c


def condition(st: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in st.get("conditions") or [] if c["type"] == "AppProjects"), {})


def start(plane: ControlPlane, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        local_command(plane.kubeconfig(), NS, controllers="progressiverollout"),
        stdout=open(log, "ab"),
        stderr=subprocess.STDOUT,
        env={**os.environ},
    )


async def test_without_the_appproject_kind_the_manager_reconciles_and_says_so(
    plane: ControlPlane, client: Client, tmp_path: Path
) -> None:
    await seed_world(client, NS)
    await client.create(rollout(NS))
    log = tmp_path / "manager.log"
    manager = start(plane, log)
    try:

        async def not_checked() -> bool:
            c = condition(await status_of(client, NS))
            return (c.get("status"), c.get("reason")) == ("False", "NotChecked")

        assert await eventually(not_checked, 60), log.read_text()[-3000:]
        assert (await status_of(client, NS))["phase"] == "Completed"  # every cluster at OLD
        assert "AppProject kind is not served" in log.read_text()
    finally:
        manager.terminate()
        manager.wait(30)

    # the kind installed (with the default project Argo CD makes): after a restart, read
    plane.install_crds([find_argocd().crds / "appproject-crd.yaml"])
    await client.create(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": "default", "namespace": NS},
            "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}]},
        }
    )
    manager = start(plane, log)
    try:

        async def permitted() -> bool:
            c = condition(await status_of(client, NS))
            return (c.get("status"), c.get("reason")) == ("True", "Permitted")

        assert await eventually(permitted, 60), log.read_text()[-3000:]
    finally:
        manager.terminate()
        manager.wait(30)
