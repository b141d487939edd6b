"""The dashboard's server against a real API server, without a browser: it serves its own
page, streams the rows as server-sent events (the whole state first, then only what
changed), holds one informer per kind however many Cells there are, never reads a Secret
(so no secret value can reach a page), answers only requests naming a loopback host, and
guards its actions (a header a page of another origin cannot send; `--read-only`; the CLI's
own refusals). A system Cell is one row, its application Cells in it, and its actions are
the CLI's for a system (`okra promote SYSTEM [--application NAME]`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient, TestServer

from integration.test_cli import system_world
from okra_controllers.cli.dashboard.server import HEADER, Dashboard
from okra_runtime import GVK, Client
from okra_testkit.envtest import ControlPlane

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TG = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
SECRET_VALUE = "dashboard-leak-canary-3c9a71"
LISTENER = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/1/2"


def cell(ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": LISTENER,
                    "targetGroupSelector": {"matchLabels": {"role": name}},
                },
            },
            "updateStrategy": {"type": "Canary", "canary": {"steps": [{"setWeight": 20}]}},
        },
    }


def target_group(ns: str, name: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSTargetGroup",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": {"role": "web", "okra.mumo.co/version": version},
        },
        "spec": {"arn": f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{name}/1"},
    }


@pytest.fixture
async def world(control_plane: ControlPlane, rt_client: Client, namespace: str) -> str:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    ns = namespace
    for name in ("web", "api"):
        await rt_client.create(cell(ns, name))
    await rt_client.create(target_group(ns, "web-a", "v1"))
    await rt_client.create(target_group(ns, "web-b", "v2"))
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "cluster-a",
                "namespace": ns,
                "labels": {"argocd.argoproj.io/secret-type": "cluster"},
            },
            "stringData": {"config": json.dumps({"bearerToken": SECRET_VALUE})},
        }
    )
    return ns


@pytest.fixture
async def page(
    rt_client: Client, world: str
) -> AsyncIterator[tuple[TestClient[Any, Any], Dashboard]]:
    dashboard = Dashboard(rt_client, world)
    async with dashboard.running(), TestClient(TestServer(dashboard.app())) as http:
        yield http, dashboard


class Frames:
    """The data frames of one server-sent-events response, and the rows they add up to."""

    def __init__(self, resp: ClientResponse) -> None:
        self.resp = resp
        self.raw: list[str] = []
        self.rows: dict[str, dict[str, Any]] = {}

    async def next(self) -> dict[str, Any]:
        data = ""
        while True:
            line = (await self.resp.content.readline()).decode()
            assert line, "the stream ended"
            if line.startswith("data: "):
                data += line[6:].strip()
            elif line == "\n" and data:
                self.raw.append(data)
                frame: dict[str, Any] = json.loads(data)
                for section in ("cells", "targetgroups", "rollouts", "clustersets"):
                    if section in frame:
                        rows = self.rows.setdefault(section, {})
                        rows.update(frame[section]["set"])
                        for key in frame[section]["del"]:
                            del rows[key]
                return frame

    async def until(self, pred: Any) -> dict[str, Any]:
        while True:
            frame = await self.next()
            if pred(frame):
                return frame


async def test_the_page_and_its_files_are_served_by_okra_itself(
    page: tuple[TestClient[Any, Any], Dashboard],
) -> None:
    http, _ = page
    index = await http.get("/")
    assert index.status == 200
    html = await index.text()
    assert "/static/app.js" in html
    assert "http://" not in html
    assert "https://" not in html
    for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        resp = await http.get(f"/static/{name}")
        assert resp.status == 200
        assert resp.content_type == kind
        body = await resp.text()
        assert "https://" not in body
        assert "http://" not in body
    assert (await http.get("/static/..%2Fserver.py")).status == 404
    assert (await http.get("/static/server.py")).status == 404
    # Another site's name resolving to 127.0.0.1 (DNS rebinding) gets nothing.
    assert (await http.get("/api/events", headers={"Host": "evil.example:8765"})).status == 421
    assert (await http.get("/", headers={"Host": "localhost:8765"})).status == 200


async def test_the_stream_sends_everything_then_only_what_changed_and_no_secret(
    page: tuple[TestClient[Any, Any], Dashboard], rt_client: Client, world: str
) -> None:
    http, dashboard = page
    ns = world
    resp = await http.get("/api/events", params={"cell": f"{ns}/web"})
    assert resp.content_type == "text/event-stream"
    frames = Frames(resp)
    await frames.until(
        lambda _: (
            len(frames.rows.get("cells", {})) == 2 and len(frames.rows.get("targetgroups", {})) == 2
        )
    )
    assert set(frames.rows["cells"]) == {f"{ns}/web", f"{ns}/api"}
    await rt_client.patch(CELL, "web", {"metadata": {"labels": {"touched": "yes"}}}, namespace=ns)
    await rt_client.create(target_group(ns, "web-c", "v2"))
    later = await frames.until(lambda f: "targetgroups" in f)
    assert list(later["targetgroups"]["set"]) == [f"{ns}/web-c"]
    assert "cells" not in later or f"{ns}/api" not in later["cells"]["set"]
    await rt_client.delete(TG, "web-a", ns)
    gone = await frames.until(lambda f: "targetgroups" in f and f["targetgroups"]["del"])
    assert gone["targetgroups"]["del"] == [f"{ns}/web-a"]
    await resp.release()

    # One informer per kind, whatever the number of Cells; none of them reads Secrets.
    kinds = [i.gvk.kind for i in dashboard.informers]
    assert len(kinds) == len(set(kinds))
    assert "Secret" not in kinds
    selectors = [i.options.field_selector or "" for i in dashboard.informers]
    assert not [s for s in selectors if "metadata.name" in s]  # no watch of one object
    assert SECRET_VALUE not in "".join(frames.raw)
    assert "cluster-a" not in "".join(frames.raw)


async def test_actions_need_the_header_and_say_the_clis_refusal(
    page: tuple[TestClient[Any, Any], Dashboard], world: str
) -> None:
    http, _ = page
    url = f"/api/cells/{world}/web/promote"
    assert (await http.post(url)).status == 400
    refused = await http.post(url, headers={HEADER: "1"})
    assert refused.status == 409
    assert "has no rollout in progress" in (await refused.json())["error"]
    assert (await http.post(f"/api/cells/{world}/web/explode", headers={HEADER: "1"})).status == 404


async def test_read_only_refuses_actions_and_tells_the_page(rt_client: Client, world: str) -> None:
    dashboard = Dashboard(rt_client, world, read_only=True)
    async with dashboard.running(), TestClient(TestServer(dashboard.app())) as http:
        resp = await http.post(f"/api/cells/{world}/web/abort", headers={HEADER: "1"})
        assert resp.status == 405
        stream = await http.get("/api/events")
        first = await Frames(stream).next()
        assert first["meta"]["readOnly"] is True
        await stream.release()


async def test_a_system_is_one_row_with_its_applications_and_acts_as_okra_does_on_one(
    page: tuple[TestClient[Any, Any], Dashboard], rt_client: Client, world: str
) -> None:
    http, _ = page
    ns = world
    await system_world(rt_client, ns)  # shop: web paused at step 3/4 of v1 -> v2, api done
    resp = await http.get("/api/events")
    frames = Frames(resp)

    def both_apps(_: Any) -> bool:
        """Both application Cells in the card, with the status system_world writes after
        applying each of them."""
        card = frames.rows.get("cells", {}).get(f"{ns}/shop") or {}
        phases = [(a["child"] or {}).get("phase") for a in card.get("applications") or []]
        return phases == ["Migrating", "Completed"]

    await frames.until(both_apps)
    # the application Cells are in the system's row, not rows of their own
    assert set(frames.rows["cells"]) == {f"{ns}/web", f"{ns}/api", f"{ns}/shop"}
    web, api = frames.rows["cells"][f"{ns}/shop"]["applications"]
    assert (web["name"], web["child"]["step"], web["child"]["steps"]) == ("web", 3, 4)
    assert (api["name"], api["phase"], api["child"]["phase"]) == ("api", "Synced", "Completed")

    async def act(name: str, action: str, application: str | None = None) -> ClientResponse:
        params = {"application": application} if application else {}
        return await http.post(
            f"/api/cells/{ns}/{name}/{action}", params=params, headers={HEADER: "1"}
        )

    # one application: only its Cell is written
    resp_web = await act("shop", "promote", "web")
    assert resp_web.status == 200, await resp_web.text()
    assert "cell shop-web: ending the pause at step 3" in (await resp_web.json())["message"]
    promote = "okra.mumo.co/promote"
    web_cell = await rt_client.get(CELL, "shop-web", ns)
    assert promote in web_cell["metadata"]["annotations"]
    api_cell = await rt_client.get(CELL, "shop-api", ns)
    assert promote not in (api_cell["metadata"].get("annotations") or {})
    # the CLI's refusals, naming the application
    refused = await act("shop", "abort", "db")
    assert refused.status == 409
    assert (await refused.json())["error"] == (
        "--application db: system shop has no such application (it has: web, api)"
    )
    refused = await act("web", "promote", "x")
    assert refused.status == 409
    assert "--application x: cell web is not a system" in (await refused.json())["error"]
    assert (await act("shop", "lift", "web")).status == 404
    freeze = await http.post(
        f"/api/freezes/{ns}/f/lift", params={"application": "web"}, headers={HEADER: "1"}
    )
    assert freeze.status == 400

    # the whole system: pause annotates the system, and the open stream shows it paused
    paused = await act("shop", "pause")
    assert paused.status == 200
    assert (await paused.json())["message"].startswith("system shop: paused")
    await frames.until(lambda _: frames.rows["cells"][f"{ns}/shop"]["paused"] is True)
    resumed = await act("shop", "resume")
    assert (await resumed.json())["message"].startswith("system shop: resumed")
    await frames.until(lambda _: frames.rows["cells"][f"{ns}/shop"]["paused"] is False)
    await resp.release()
