"""The Cell controller reads a Cell's VersionBlocklist from its cache, and live only while
a version this process appended is not in the cache yet: a version blocked a moment ago
is never planned against a cache that does not show it, and every other reconcile costs
no apiserver round trip. Against a real apiserver; the manager is not started, so its
cache holds exactly what the test puts in it (a cache that lags as far as it can)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from okra_controllers.api.kinds import BLOCKLIST
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.controller import CellReconciler
from okra_runtime.client import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.manager import Manager
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[2]


def versions(blocklist: dict[str, Any] | None) -> list[str]:
    return [i["version"] for i in ((blocklist or {}).get("spec") or {}).get("items") or []]


async def test_a_version_blocked_here_is_read_live_until_the_cache_shows_it(
    control_plane: ControlPlane, rt_client: Client, namespace: str
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    mgr = Manager(rt_client, namespace=namespace, metrics_address=None, probe_address=None)
    rec = CellReconciler(mgr, mgr.event_recorder("cell-test"), AwsConfig())
    cell = {"metadata": {"name": "web", "namespace": namespace}}

    # Nothing blocked by this process: the cache answers, even while it lags the server.
    assert await rec.blocklists.read("web", namespace) is None
    await rec.blocklists.append(cell, "v2", "analysis failed")
    assert versions(await rec.blocklists.read("web", namespace)) == ["v2"]  # live: cache empty

    live = await rt_client.get(BLOCKLIST, "web", namespace)
    rec.caches.blocklists.upsert(live)  # the watch delivers it
    assert versions(await rec.blocklists.read("web", namespace)) == ["v2"]
    assert rec.blocklists.blocked_here == {}  # the cache shows it now: no more live reads

    await rt_client.delete(BLOCKLIST, "web", namespace)  # a user unblocks everything
    assert versions(await rec.blocklists.read("web", namespace)) == ["v2"]  # cache, not yet told

    # Blocked again, and removed by hand before the cache ever shows it: the live read
    # says so, and the version is no longer waited for.
    await rec.blocklists.append(cell, "v3", "analysis failed")
    assert versions(await rec.blocklists.read("web", namespace)) == ["v3"]
    await rt_client.delete(BLOCKLIST, "web", namespace)
    try:
        await rt_client.get(BLOCKLIST, "web", namespace)
        raise AssertionError("the blocklist is still there")
    except NotFoundError:
        pass
    assert versions(await rec.blocklists.read("web", namespace)) == []
    assert rec.blocklists.blocked_here == {}
    assert versions(await rec.blocklists.read("web", namespace)) == ["v2"]  # the cache again
