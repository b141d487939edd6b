"""Argo CD projects on the real Argo CD: a deny window of an Application's AppProject holds
its cluster in a ProgressiveRollout stage while the other clusters go on, and the window's end
lets it sync; a destination the project does not permit is reported and never synced."""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import AsyncIterator
from typing import Any

import pytest

from e2e.conftest import OkraManager
from e2e.progressive_world import CLUSTERS, SLOW, App
from okra_controllers.api.kinds import APP_PROJECT, APPLICATION, EVENT
from okra_runtime.errors import NotFoundError
from support import eventually

HELD = "pr-euw1-a"
"""A canary of stage 1 (and a member of stage 2): the cluster the deny window holds."""
FORBIDDEN = "pr-euc1-a"


@pytest.fixture
def okra(rollout_okra: OkraManager) -> OkraManager:
    """okra-manager with the ProgressiveRollout and AnalysisRun controllers (e2e/conftest.py)."""
    return rollout_okra


@pytest.fixture
async def project(app: App) -> AsyncIterator[str]:
    """The test's AppProject, deleted afterwards (after its ApplicationSet, by fixture order)."""
    name = f"proj-{app.suffix}"
    yield name
    with contextlib.suppress(NotFoundError):
        await app.client.delete(APP_PROJECT, name, app.argocd.namespace)


def clusters_of(st: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The last word on each cluster (a cluster in several stages: its latest stage)."""
    out: dict[str, dict[str, Any]] = {}
    for ss in st.get("stages") or []:
        for c in ss.get("clusters") or []:
            if ss.get("phase") != "Pending" or c["name"] not in out:
                out[c["name"]] = c
    return out


def condition(st: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in st.get("conditions") or [] if c["type"] == "AppProjects"), {})


async def events(app: App, reason: str) -> list[str]:
    items = (await app.client.list(EVENT, app.argocd.namespace)).items
    return [
        str(e.get("message") or e.get("note") or "")
        for e in items
        if e.get("reason") == reason
        and ((e.get("regarding") or e.get("involvedObject") or {}).get("name") == app.name)
    ]


async def start_in(app: App, okra: OkraManager, project: str, rollout_of: int) -> str:
    """v1, the ApplicationSet in `project`, the rollout: v1's revision once the rollout
    completed (`rollout_of` Applications compared at it)."""
    first = app.commit("v1")
    await app.client.create(app.appset(project))

    async def resolved() -> bool:
        apps = await app.applications()
        at = [a for a in apps if ((a.get("status") or {}).get("sync") or {}).get("revision")]
        return len(apps) == len(CLUSTERS) and len(at) >= rollout_of

    assert await eventually(resolved, SLOW, 0.5), okra.tail()
    await app.client.create(app.rollout())
    assert await eventually(lambda: app.revision_is(first, "Completed"), SLOW, 0.5), okra.tail()
    return first


async def test_a_deny_window_holds_its_cluster_and_its_end_lets_it_sync(
    app: App, project: str, okra: OkraManager
) -> None:
    ns = app.argocd.namespace
    await app.client.create(app.project())
    await start_in(app, okra, project, len(CLUSTERS))
    # a deny window open from this minute for an hour, over the held cluster's Application
    opened = datetime.datetime.now(datetime.UTC).replace(second=0, microsecond=0)
    window = {
        "kind": "deny",
        "schedule": f"{opened.minute} {opened.hour} * * *",
        "duration": "1h",
        "applications": [f"{HELD}-{app.suffix}"],
        "description": "change freeze",
    }
    await app.client.patch(APP_PROJECT, project, {"spec": {"syncWindows": [window]}}, namespace=ns)
    second = app.commit("v2")

    async def held() -> bool:
        st = await app.status()
        c = clusters_of(st).get(HELD) or {}
        others = [n for n, m in (await app.markers()).items() if m == "v2"]
        return (
            st.get("revision") == second
            and (c.get("message") or "").startswith(f"held by AppProject '{project}' in a deny")
            and "pr-euc1-a" in others  # the other canary went on
        )

    assert await eventually(held, SLOW, 0.5), okra.tail()
    st = await app.status()
    assert st["stages"][0]["phase"] == "Progressing"  # the stage waits for the held cluster
    assert clusters_of(st)[HELD]["phase"] == "Pending"
    assert "change freeze" in clusters_of(st)[HELD]["message"]
    assert (condition(st)["status"], condition(st)["reason"]) == ("False", "SyncWindow")
    assert await app.marker(HELD) == "v1"
    held_app = await app.client.get(APPLICATION, f"{HELD}-{app.suffix}", ns)
    assert held_app.get("operation") is None  # okra wrote no sync Argo CD would refuse
    assert any(HELD in m for m in await events(app, "SyncWindowHeld"))

    # the window ends (its occurrence lasts until two seconds from now): the cluster syncs
    # and the rollout completes, one sync per cluster
    ends = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2)
    window["duration"] = f"{int((ends - opened).total_seconds())}s"
    await app.client.patch(APP_PROJECT, project, {"spec": {"syncWindows": [window]}}, namespace=ns)
    assert await eventually(lambda: app.revision_is(second, "Completed"), SLOW, 0.5), okra.tail()
    assert await app.markers() == {name: "v2" for name in CLUSTERS}
    for name, revisions in (await app.okra_syncs()).items():
        assert revisions.count(second) == 1, (name, revisions)
    assert condition(await app.status())["status"] == "True"


async def test_a_destination_the_project_forbids_is_reported_and_never_synced(
    app: App, project: str, okra: OkraManager
) -> None:
    ns = app.argocd.namespace
    await app.client.create(app.project(destinations=[{"name": f"!{FORBIDDEN}", "namespace": "*"}]))
    first = await start_in(app, okra, project, len(CLUSTERS) - 1)
    second = app.commit("v2")
    assert await eventually(lambda: app.revision_is(second, "Completed"), SLOW, 0.5), okra.tail()
    st = await app.status()
    c = clusters_of(st)[FORBIDDEN]
    assert c["phase"] == "Forbidden"
    assert c["message"].startswith(f"AppProject '{project}' does not permit destination")
    assert FORBIDDEN in st["message"]
    assert (condition(st)["status"], condition(st)["reason"]) == ("False", "Forbidden")
    assert any(FORBIDDEN in m for m in await events(app, "DestinationNotPermitted"))
    # never synced: nothing on the cluster, no sync in Argo CD's history, no operation
    markers = await app.markers()
    assert markers.pop(FORBIDDEN) is None
    assert markers == {name: "v2" for name in markers}
    syncs = await app.okra_syncs()
    assert syncs.pop(f"{FORBIDDEN}-{app.suffix}") == []
    assert all(revisions == [first, second] for revisions in syncs.values()), syncs
    forbidden = await app.client.get(APPLICATION, f"{FORBIDDEN}-{app.suffix}", ns)
    assert forbidden.get("operation") is None
    # and Argo CD agrees: it reports the Application's destination as not permitted
    said = [c.get("message", "") for c in (forbidden.get("status") or {}).get("conditions") or []]
    assert any("not permitted" in m or "do not match" in m for m in said), said
