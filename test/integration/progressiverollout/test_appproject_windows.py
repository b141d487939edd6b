"""Argo CD's AppProjects through the API server, with the CRDs of the Argo CD release under
test (the pinned build's, or `OKRA_ARGOCD_CRDS`'s in `make test-compat`): a deny sync window
holds its Application's cluster in a ProgressiveRollout stage while the others go on, and its
end lets it sync. A window field the release's schema lacks (`syncOverrun` before Argo CD 3.5)
is pruned by the API server when the project is written, so okra reads the project as that
release's application-controller does."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from integration.progressiverollout.harness import (
    CLUSTERS,
    NEW,
    argo,
    argo_plane,
    manager,
    seed_world,
)
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from okra_controllers.api.kinds import APP_PROJECT, APPLICATION
from okra_runtime import Client
from okra_runtime.gvk import GVK
from okra_testkit.envtest import ControlPlane
from support import eventually

NS = "argocd"
HELD = "euw1-a"
CRD = GVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition")


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """A plane of its own that serves the AppProject kind (the session's does not)."""
    with argo_plane("projects", NS, ("application", "applicationset", "appproject")) as cp:
        yield cp


@pytest.fixture
async def client(plane: ControlPlane) -> AsyncIterator[Client]:
    async with await Client.from_kubeconfig(plane.kubeconfig()) as c:
        yield c


async def window_fields(client: Client) -> set[str]:
    """The sync window fields the served AppProject schema declares."""
    crd = await client.get(CRD, "appprojects.argoproj.io")
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    window = schema["properties"]["spec"]["properties"]["syncWindows"]["items"]
    return set(window["properties"])


def held_message(st: dict[str, Any]) -> str:
    """What the rollout's status says of HELD in the stage it is waiting in ("" if none)."""
    for stage in st.get("stages") or []:
        for c in stage.get("clusters") or []:
            if c["name"] == HELD and stage.get("phase") != "Pending":
                return str(c.get("message") or "")
    return ""


async def test_a_deny_window_holds_its_cluster_and_its_end_lets_it_sync(client: Client) -> None:
    await seed_world(client, NS)
    opened = datetime.datetime.now(datetime.UTC).replace(second=0, microsecond=0)
    window = {
        "kind": "deny",
        "schedule": f"{opened.minute} {opened.hour} * * *",
        "duration": "1h",
        "applications": [f"{HELD}-web"],
        "description": "change freeze",
        "syncOverrun": True,
    }
    project = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "default", "namespace": NS},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "syncWindows": [window],
        },
    }
    stored = (await client.create(project))["spec"]["syncWindows"][0]
    # the API server keeps syncOverrun where the release declares it and prunes it elsewhere
    fields = await window_fields(client)
    assert {"kind", "schedule", "duration", "applications"} <= fields, fields
    assert ("syncOverrun" in stored) == ("syncOverrun" in fields), stored
    assert stored["description"] == "change freeze"

    async with manager(client, NS, projects=True), argo(client, NS) as argocd:
        await client.create(rollout(NS))
        assert await eventually(lambda: phase_is(client, NS, "Completed"), 30)
        await argocd.commit(NEW)

        async def held() -> bool:
            st = await status_of(client, NS)
            return (
                st.get("revision") == NEW
                and held_message(st).startswith("held by AppProject 'default' in a deny")
                and any(app != f"{HELD}-web" for app, _ in argocd.synced)
            )

        assert await eventually(held, 60), await status_of(client, NS)
        st = await status_of(client, NS)
        assert "change freeze" in held_message(st)
        projects = next(c for c in st["conditions"] if c["type"] == "AppProjects")
        assert (projects["status"], projects["reason"]) == ("False", "SyncWindow")
        assert (await client.get(APPLICATION, f"{HELD}-web", NS)).get("operation") is None
        assert f"{HELD}-web" not in {app for app, _ in argocd.synced}

        # the window's occurrence ends two seconds from now: the cluster syncs, the rollout
        # completes with one sync per Application
        ends = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2)
        window["duration"] = f"{int((ends - opened).total_seconds())}s"
        patch = {"spec": {"syncWindows": [window]}}
        await client.patch(APP_PROJECT, "default", patch, namespace=NS)

        async def completed() -> bool:
            st = await status_of(client, NS)
            return (st.get("revision"), st.get("phase")) == (NEW, "Completed")

        assert await eventually(completed, 60), await status_of(client, NS)
        assert sorted(app for app, _ in argocd.synced) == sorted(f"{c}-web" for c in CLUSTERS)
        assert {revision for _, revision in argocd.synced} == {NEW}
