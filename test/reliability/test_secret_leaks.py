"""No secret leaks: a rollout run with known secret values everywhere okra handles them,
then every place okra writes to searched for them.

Secrets planted: AWS credentials (in the manager's environment, and in a Secret of the
namespace, where a Deployment takes them from); an analysis web provider's API key (in the
URL) and bearer token (a header), both template args from a Secret, with a dry-run metric
whose requests fail (so error messages carry its URL); a notification webhook whose URL
(with a token in its path) and Authorization header come from the notifications Secret, and
whose receiver fails the first deliveries; an Argo CD cluster Secret (bearer token, CA
data) selected by an AWSTargetGroupSet, whose token the API server rejects.

Searched, for each value, in plain text and in base64 (also inside the base64 of a longer
text, as in a Secret's `data`): okra-manager's log at debug level, in JSON for the first
rollout and as console text (after a restart) for a second, failing one; every Event in the
namespace; the status of every okra object; the /metrics output; and every response of
`okra dashboard` (its server run as the admin, who may read every Secret): two pages'
server-sent-event streams (the lists, and the Cell's page) held open through both rollouts,
the page and its files, and the JSON answers of its actions. Zero hits.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import aiohttp
import pytest
from aiohttp import web

from e2e.conftest import VERSION_ARG, Env, Metrics, cell_obj, wait_status
from okra_controllers.cli.dashboard.server import HEADER, Dashboard, serve
from okra_runtime import GVK, Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import cluster_secret
from okra_testkit.envtest.process import free_port
from support import eventually

from .harness import World

AWS_KEY_ID, AWS_SECRET = "AKIALEAKCANARY000001", "leak-canary-aws-secret-9f3e1c"
API_KEY, API_TOKEN = "leak-canary-api-key-51d0", "leak-canary-bearer-7a2b"
HOOK_PATH, HOOK_TOKEN = "leak-canary-hook-path-c4e8", "leak-canary-hook-token-0d9f"
CLUSTER_TOKEN = "leak-canary-argocd-bearer-e61a"
OKRA_KINDS = (
    "Cell",
    "AnalysisRun",
    "Pause",
    "AWSTargetGroup",
    "AWSTargetGroupSet",
    "AWSApplicationLoadBalancerConfig",
    "VersionBlocklist",
)


class Receiver:
    """A webhook receiver that fails its first two deliveries."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append(request.path)
        if len(self.received) <= 2:
            return web.Response(status=503, text="down")
        return web.Response(text="ok")


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", r.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    r.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    yield r
    await runner.cleanup()


@dataclass
class DashboardResponses:
    """What `okra dashboard` answered: the streams' bytes as they came, then the page, its
    files and its actions' JSON (each with its status line and headers)."""

    streams: dict[str, list[str]] = field(default_factory=dict)
    pages: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)

    def stream_text(self) -> str:
        return "".join(line for lines in self.streams.values() for line in lines)

    def frames(self) -> int:
        return sum(line.startswith("data: ") for lines in self.streams.values() for line in lines)


def _head(resp: aiohttp.ClientResponse) -> str:
    return f"{resp.method} {resp.url} -> {resp.status}\n" + "".join(
        f"{k}: {v}\n" for k, v in resp.headers.items()
    )


async def _read_stream(http: aiohttp.ClientSession, path: str, sink: list[str]) -> None:
    async with http.get(path) as resp:
        sink.append(_head(resp))
        assert resp.status == 200, await resp.text()
        async for line in resp.content:
            sink.append(line.decode())


@contextlib.asynccontextmanager
async def dashboard_open(c: Client, ns: str) -> AsyncIterator[DashboardResponses]:
    """`okra dashboard -n ns` as the admin, with the Cells list's and the Cell page's streams
    read while inside; on leaving, its page, files and actions are fetched too."""
    out = DashboardResponses()
    board = Dashboard(c, ns)
    urls: list[str] = []
    async with board.running():
        runner = await serve(board, "127.0.0.1", 0, urls.append)
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        try:
            async with aiohttp.ClientSession(urls[0], timeout=timeout) as http:
                paths = ("/api/events", f"/api/events?cell={ns}/web")
                tasks = []
                for path in paths:
                    out.streams[path] = []
                    tasks.append(asyncio.create_task(_read_stream(http, path, out.streams[path])))
                try:
                    yield out
                finally:
                    failed = [t.exception() for t in tasks if t.done() and not t.cancelled()]
                    for t in tasks:
                        t.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                assert not [e for e in failed if e is not None], failed
                for path in ("/", "/static/index.html", "/static/app.js", "/static/style.css"):
                    async with http.get(path) as resp:
                        out.pages.append(_head(resp) + await resp.text())
                for kind, name, action in (
                    ("cells", "web", "promote"),
                    ("cells", "web", "pause"),
                    ("cells", "web", "resume"),
                    ("rollouts", "web", "abort"),  # none: the API server's refusal
                ):
                    url = f"/api/{kind}/{ns}/{name}/{action}"
                    async with http.post(url, headers={HEADER: "1"}) as resp:
                        out.actions.append(_head(resp) + await resp.text())
        finally:
            await runner.cleanup()


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return str(resp.read().decode())


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def b64_inside(s: str) -> list[str]:
    """What the base64 of any text holding `s` contains, whatever its offset: for each of
    the three alignments, the characters made of `s`'s bits only (a Secret's `data` is the
    base64 of a whole JSON document, not of the token alone)."""
    raw = s.encode()
    forms = []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode()
        forms.append(enc[-(-8 * k // 6) : 8 * (k + len(raw)) // 6])
    return forms


@pytest.mark.timeout(600)
async def test_no_secret_value_reaches_logs_events_status_metrics_or_the_dashboard(
    world: World, metrics: Metrics, receiver: Receiver
) -> None:
    env, c, ns, control_plane = world.env, world.client, world.ns, world.cp
    ca_data = b64(control_plane.ca_pem.decode())
    secrets = {
        "AWS access key id": AWS_KEY_ID,
        "AWS secret key": AWS_SECRET,
        "analysis API key": API_KEY,
        "analysis bearer token": API_TOKEN,
        "webhook URL path": HOOK_PATH,
        "webhook token": HOOK_TOKEN,
        "Argo CD cluster bearer token": CLUSTER_TOKEN,
        "Argo CD cluster CA data": ca_data,
    }
    await _plant(c, ns, metrics, receiver, control_plane, env)
    port = free_port()
    okra = world.manager(
        args=["--log-level", "debug", "--cluster-poll-interval", "2"],
        environ={"AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET},
    )
    okra.args += ("--metrics-bind-address", f"127.0.0.1:{port}")
    metrics_text = ""
    async with dashboard_open(c, ns) as dashboard:
        okra.start()
        try:
            await wait_status(c, ns, lambda s: s.get("health") == "Healthy")
            await env.target_group("web-a-v2", "v2")
            await wait_status(
                c, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
            )
            await asyncio.to_thread(okra.stop)  # the receiver (this loop) keeps answering
            okra.args = (*okra.args, "--log-format", "console")
            okra.start()
            metrics.rates["v3"] = 0.5
            await env.target_group("web-a-v3", "v3")
            await wait_status(c, ns, lambda s: s.get("health") == "Degraded")

            async def delivered() -> bool:
                return len(receiver.received) >= 3

            assert await eventually(delivered, within=60), receiver.received
            metrics_text = await asyncio.to_thread(scrape, port)
        finally:
            await asyncio.to_thread(okra.stop)  # the receiver (this loop) keeps answering

        async def pages_show_the_failed_rollout() -> bool:
            return all('"Degraded"' in "".join(lines) for lines in dashboard.streams.values())

        assert await eventually(pages_show_the_failed_rollout, within=60), dashboard.streams

    log = okra.text()
    events = [
        json.dumps(e)
        for gvk in (GVK("", "v1", "Event"), GVK("events.k8s.io", "v1", "Event"))
        for e in (await c.list(gvk, ns)).items
    ]
    statuses = [
        json.dumps(o.get("status") or {})
        for kind in OKRA_KINDS
        for o in (await c.list(GVK("okra.mumo.co", "v1alpha1", kind), ns)).items
    ]
    places = {
        "manager log (JSON and console)": log,
        "Events": "\n".join(events),
        "statuses": "\n".join(statuses),
        "/metrics": metrics_text,
        "the dashboard's streams": dashboard.stream_text(),
        "the dashboard's page and files": "\n".join(dashboard.pages),
        "the dashboard's actions": "\n".join(dashboard.actions),
    }
    hits = list(
        dict.fromkeys(
            f"{what} ({form}) in {where}"
            for what, value in secrets.items()
            for form, needle in (("plain", value), *(("base64", f) for f in b64_inside(value)))
            for where, text in places.items()
            if needle in text
        )
    )
    print(
        f"\nsearched {len(log.splitlines())} log lines (JSON and console, debug), "
        f"{len(events)} Events, {len(statuses)} statuses, {len(metrics_text.splitlines())} "
        f"metric lines, {dashboard.frames()} dashboard stream frames, "
        f"{len(dashboard.pages)} pages and {len(dashboard.actions)} action answers "
        f"for {len(secrets)} secret values: {len(hits)} hits {hits}; "
        f"webhook deliveries {len(receiver.received)}"
    )
    # The secrets were in play: the webhook was called at its secret path, the log is JSON
    # then console text, and the cluster Secret was read (its cluster is reported).
    assert any(HOOK_PATH in p for p in receiver.received)
    assert '"event": "starting okra-manager"' in log
    assert "starting okra-manager" in log.split('"event": "starting okra-manager"', 1)[1]
    assert any("leak-cluster" in s for s in statuses), statuses
    # The dashboard showed it all: the Cell page's stream carried the runs of the failing
    # metric, every page and file was served, and each action was answered.
    assert '"probe"' in "".join(dashboard.streams[f"/api/events?cell={ns}/web"])
    assert all(" -> 200\n" in page for page in dashboard.pages), dashboard.pages
    assert len(dashboard.actions) == 4, dashboard.actions
    assert not hits


async def _plant(
    c: Client,
    ns: str,
    metrics: Metrics,
    receiver: Receiver,
    cp: ControlPlane,
    env: Env,
) -> None:
    await c.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "aws-credentials", "namespace": ns},
            "stringData": {"AWS_ACCESS_KEY_ID": AWS_KEY_ID, "AWS_SECRET_ACCESS_KEY": AWS_SECRET},
        }
    )
    await c.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "analysis-creds", "namespace": ns},
            "stringData": {"api-key": API_KEY, "api-token": API_TOKEN},
        }
    )
    secret_args = [
        {"name": n, "valueFrom": {"secretKeyRef": {"name": "analysis-creds", "key": n}}}
        for n in ("api-key", "api-token")
    ]
    header = [{"key": "Authorization", "value": "Bearer {{args.api-token}}"}]
    await c.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AnalysisTemplate",
            "metadata": {"name": "error-rate", "namespace": ns},
            "spec": {
                "args": [{"name": "version"}, {"name": "api-key"}, {"name": "api-token"}],
                "dryRun": [{"metricName": "probe"}],
                "metrics": [
                    {
                        "name": "error-rate",
                        "interval": "1s",
                        "count": 2,
                        "successCondition": "result < 0.05",
                        "provider": {
                            "web": {
                                "url": f"{metrics.url}/error-rate?version={{{{args.version}}}}"
                                "&key={{args.api-key}}",
                                "headers": header,
                                "jsonPath": "{$.errorRate}",
                            }
                        },
                    },
                    {
                        "name": "probe",  # fails: its errors carry its URL
                        "interval": "1s",
                        "count": 2,
                        "successCondition": "result < 0.05",
                        "provider": {
                            "web": {
                                "url": f"{metrics.url}/missing?key={{{{args.api-key}}}}",
                                "headers": header,
                                "jsonPath": "{$.errorRate}",
                            }
                        },
                    },
                ],
            },
        }
    )
    await c.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "okra-notifications", "namespace": ns},
            "stringData": {
                "hook-url": f"{receiver.url}/hooks/{HOOK_PATH}",
                "token": f"Bearer {HOOK_TOKEN}",
            },
        }
    )
    await c.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "okra-notifications", "namespace": ns},
            "data": {
                "service.webhook.ci": "url: $hook-url\n"
                "headers:\n- {name: Authorization, value: $token}\n",
            },
        }
    )
    secret = cluster_secret("leak-cluster", cp, namespace=ns, labels={"leak": "canary"})
    config = json.loads(secret["stringData"]["config"])
    config["bearerToken"] = CLUSTER_TOKEN  # the API server rejects it: an auth error path
    secret["stringData"]["config"] = json.dumps(config)
    await c.create(secret)
    await c.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AWSTargetGroupSet",
            "metadata": {"name": "apps", "namespace": ns},
            "spec": {
                "generators": [
                    {"argocdClusters": {"selector": {"matchLabels": {"leak": "canary"}}}}
                ],
                "bindingSelector": {"matchLabels": {"role": "web"}},
                "template": {"metadata": {"labels": {"role": "other"}}},
            },
        }
    )
    await env.target_group("web-a-v1", "v1")
    analysis = {
        "templates": [{"templateName": "error-rate"}],
        "args": [*VERSION_ARG, *secret_args],
    }
    cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}, {"analysis": analysis}])
    cell["metadata"]["annotations"] = {"notifications.okra.mumo.co/subscribe.all.ci": ""}
    await c.create(cell)
