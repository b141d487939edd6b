"""Helpers shared by tests: clients for a control plane, and waiting on a
condition instead of sleeping."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from kubernetes_asyncio import client, config

from okra_runtime import GVK, Client, Manager
from okra_testkit.envtest import ADMIN, ControlPlane

EVENT = GVK("events.k8s.io", "v1", "Event")
CRD_DIR = Path(__file__).resolve().parent.parent / "config" / "crd" / "bases"


@cache
def okra_kinds() -> tuple[tuple[str, str, str], ...]:
    """(group, version, plural) of each of okra's namespaced kinds, from its CRDs."""
    kinds = []
    for f in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                if spec["scope"] == "Namespaced":
                    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
                    kinds.append((spec["group"], version, spec["names"]["plural"]))
    return tuple(kinds)


async def release_finalizers(api: client.ApiClient, namespace: str) -> None:
    """Take the finalizers off okra's objects in `namespace`: for a test's namespace once the
    managers that put them there have stopped. Left on, nothing removes them, and the
    namespace controller goes on retrying the namespace's deletion (listing and deleting
    every kind in it, every few seconds) until the plane stops."""
    objs = client.CustomObjectsApi(api)
    for group, version, plural in okra_kinds():
        try:
            listed = await objs.list_namespaced_custom_object(group, version, namespace, plural)
        except client.ApiException:
            continue  # not installed in this plane
        for item in listed["items"]:
            if not item["metadata"].get("finalizers"):
                continue
            with contextlib.suppress(client.ApiException):
                await objs.patch_namespaced_custom_object(
                    group,
                    version,
                    namespace,
                    plural,
                    item["metadata"]["name"],
                    [{"op": "remove", "path": "/metadata/finalizers"}],
                )


@contextlib.asynccontextmanager
async def fresh_namespace(api: client.ApiClient) -> AsyncIterator[str]:
    """A new namespace, deleted afterwards (okra's finalizers taken off its objects)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        yield name
    finally:
        await core.delete_namespace(name)
        await release_finalizers(api, name)


async def api_client(cp: ControlPlane, user: str = ADMIN) -> client.ApiClient:
    """A kubernetes-asyncio client for `user`, loaded from the plane's kubeconfig
    the way a user's tool would load it."""
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(cp.kubeconfig(user)), client_configuration=cfg)
    return client.ApiClient(configuration=cfg)


async def stop_manager(mgr: Manager, task: asyncio.Task[None]) -> None:
    """Stop an in-process manager and wait for its `start()` to return: within its own
    `graceful_shutdown_timeout` (a reconcile still running then is cancelled), and a margin
    for what it closes after (informers, Events, servers) on a busy machine."""
    mgr.stop()
    await asyncio.wait_for(task, mgr.options.graceful_shutdown_timeout + 30)


async def eventually(
    check: Callable[[], Awaitable[bool]], within: float = 30, interval: float = 0.1
) -> bool:
    """Poll an async condition until it holds; False if it never did."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await check():
            return True
        await asyncio.sleep(interval)
    return await check()


class FakeClock:
    """A monotonic clock a test moves by hand: `clock.now += 2.0`."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def until(cond: Callable[[], bool], within: float = 10) -> None:
    """Wait for a plain (not async) condition, checked every millisecond: for tests of
    in-process asyncio machinery, where the condition is a change of local state."""

    async def check() -> bool:
        return cond()

    assert await eventually(check, within=within, interval=0.001)


async def find_events(
    c: Client, ns: str, reason: str, name: str | None = None
) -> list[dict[str, Any]]:
    """The events.k8s.io Events of `reason` in `ns` (about object `name`, if given)."""
    return [
        e
        for e in (await c.list(EVENT, ns)).items
        if e.get("reason") == reason and (name is None or e["regarding"].get("name") == name)
    ]


async def wait_events(
    c: Client, ns: str, reason: str, name: str | None = None, within: float = 30
) -> list[dict[str, Any]]:
    """`find_events(...)` once there is one. A recorder posts an Event after the status write it
    goes with, in the background: a test that has seen the status must wait for it."""
    found: list[dict[str, Any]] = []

    async def posted() -> bool:
        found[:] = await find_events(c, ns, reason, name)
        return bool(found)

    assert await eventually(posted, within=within), f"no {reason} Event in {ns}"
    return found


class LogCapture:
    """The log lines written during one test."""

    def __init__(self) -> None:
        self.stream = io.StringIO()

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    def records(self) -> list[dict[str, Any]]:
        """The JSON lines, parsed (stdlib lines that are not JSON come as `event`)."""
        out = []
        for line in self.text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                rec = {"event": line, "level": "unknown"}
            out.append(rec if isinstance(rec, dict) else {"event": line})
        return out

    def at(self, *levels: str) -> list[dict[str, Any]]:
        return [r for r in self.records() if r.get("level") in levels]


def default_sigint() -> None:
    """A `preexec_fn` for a child that a test stops with SIGINT: Ctrl-C's default action
    again, whatever the test run inherited (a shell starts background jobs with SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class ErrorRates:
    """A metrics endpoint for web-provider checks: /rate?cluster=NAME answers
    {"rate": <value set for NAME, default 0>}; `queries` lists the clusters asked for."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.queries: list[str] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        cluster = request.query.get("cluster", "")
        self.queries.append(cluster)
        return web.json_response({"rate": self.values.get(cluster, 0.0)})


@contextlib.asynccontextmanager
async def serve_error_rates() -> AsyncIterator[ErrorRates]:
    r = ErrorRates()
    app = web.Application()
    app.router.add_get("/rate", r.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    r.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    try:
        yield r
    finally:
        await runner.cleanup()


def judged_rollback() -> dict[str, Any]:
    """A Cell's record of one rollout (`status.history[]`) as okra writes it: v1 -> v2, two
    steps, rolled back by a judged analysis at step 2 (p99 High, score 41), with its Events.
    The CLI's and the dashboard's tests read it back from the API server."""
    return {
        "rolloutId": "20261204t0251-ab12",
        "from": "v1",
        "to": "v2",
        "trigger": "NewVersion",
        "startedAt": "2026-12-04T02:51:00Z",
        "endedAt": "2026-12-04T02:55:03Z",
        "outcome": "RolledBack",
        "cause": "version v2 failed: p99 +38%",
        "steps": [
            {
                "index": 0,
                "startedAt": "2026-12-04T02:51:00Z",
                "endedAt": "2026-12-04T02:53:00Z",
                "canaryWeight": 20,
                "traffic": {
                    "step": "20261204t0251-ab12/0",
                    "since": "2026-12-04T02:51:05Z",
                    "verdict": "Confirmed",
                    "requests": 1200,
                    "versions": [
                        {"version": "v1", "planned": 80, "observed": 80.4, "requests": 965},
                        {"version": "v2", "planned": 20, "observed": 19.6, "requests": 235},
                    ],
                },
            },
            {
                "index": 1,
                "startedAt": "2026-12-04T02:53:00Z",
                "endedAt": "2026-12-04T02:55:03Z",
                "canaryWeight": 40,
            },
        ],
        "events": [
            {
                "time": "2026-12-04T02:51:00Z",
                "type": "Normal",
                "reason": "RolloutStarted",
                "message": "canary v2 from v1",
            },
            {
                "time": "2026-12-04T02:55:03Z",
                "type": "Warning",
                "reason": "RolloutFailed",
                "message": "version v2 failed: p99 +38%",
            },
        ],
        "freezes": [
            {
                "startedAt": "2026-12-04T02:52:00Z",
                "endedAt": "2026-12-04T02:52:30Z",
                "message": "held by Freeze INC-7",
            }
        ],
        "analyses": [
            {
                "name": "web-ab12-step-1",
                "at": "step-1",
                "phase": "Failed",
                "message": "score 41 < 75",
                "startedAt": "2026-12-04T02:53:00Z",
                "completedAt": "2026-12-04T02:55:00Z",
                "metrics": [
                    {
                        "name": "p99",
                        "phase": "Failed",
                        "count": 1,
                        "failed": 1,
                        "measurements": [
                            {"time": "2026-12-04T02:55:00Z", "value": "138", "phase": "Failed"}
                        ],
                        "judgment": {
                            "classification": "High",
                            "canary": {"count": 30, "median": 138, "p25": 130, "max": 170},
                            "baseline": {"count": 30, "median": 100, "min": 90, "p75": 104},
                            "effectSize": 0.38,
                            "pValue": 0.0001,
                        },
                    }
                ],
                "judgment": {"outcome": "Fail", "score": 41, "pass": 90, "marginal": 75},
            }
        ],
    }
