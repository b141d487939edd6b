"""Judged AnalysisRuns against Datadog (a local stand-in for its v1 query API: Datadog has no
emulator). It keeps a series of points per `version:` tag, as Datadog keeps a service's
latency per version, and answers a query with the points of its version inside the query's
`from`..`to` window. okra asks it once per side over the same window: a canary 30 % slower
fails naming the metric, one drawn like the baseline passes, one without points is NoData
and ends Inconclusive when its wait for data is over."""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from integration.analysis.test_analysisrun import (  # noqa: F401  (fixtures)
    analysis,
    finished,
    okra_crds,
    run_obj,
)
from okra_runtime import Client

pytestmark = pytest.mark.usefixtures("analysis")

API_KEY, APP_KEY = "dd-judge-api", "dd-judge-app"
QUERY = "avg:trace.http.request.duration{service:web,version:{{judge.version}}}"


class Datadog:
    """GET /api/v1/query: the points of the query's `version:` tag between `from` and `to`
    (Unix seconds), as one series; 403 unless both keys match."""

    def __init__(self) -> None:
        self.points: dict[str, list[tuple[float, float]]] = {}  # version -> (seconds, value)
        self.queries: list[dict[str, str]] = []

    def draw(self, version: str, median: float, rng: random.Random, minutes: int = 10) -> None:
        """A point every 20 s over the last `minutes` minutes (the newest 10 s ago), around
        `median` ms."""
        newest = time.time() - 10
        self.points[version] = [
            (newest - 20 * i, median * rng.lognormvariate(0, 0.05)) for i in range(minutes * 3)
        ]

    async def query(self, request: web.Request) -> web.Response:
        if (
            request.headers.get("DD-API-KEY") != API_KEY
            or request.headers.get("DD-APPLICATION-KEY") != APP_KEY
        ):
            return web.json_response({"errors": ["Forbidden"]}, status=403)
        q = dict(request.query)
        self.queries.append(q)
        tag = re.search(r"version:([^,}]+)", q["query"])
        start, end = float(q["from"]), float(q["to"])
        points = [
            [int(t * 1000), v]
            for t, v in sorted(self.points.get(tag.group(1) if tag else "", []))
            if start <= t <= end
        ]
        series = [{"metric": "trace.http.request.duration", "pointlist": points}] if points else []
        return web.json_response({"status": "ok", "query": q["query"], "series": series})


@pytest.fixture
async def datadog(rt_client: Client, namespace: str) -> AsyncIterator[Datadog]:
    """The stand-in, serving; its address and keys in the `datadog` Secret of okra's
    namespace (the test's), where Argo Rollouts looks first."""
    dd = Datadog()
    app = web.Application()
    app.router.add_get("/api/v1/query", dd.query)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "datadog", "namespace": namespace},
            "stringData": {
                "address": str(server.make_url("")).rstrip("/"),
                "api-key": API_KEY,
                "app-key": APP_KEY,
            },
        }
    )
    yield dd
    await server.close()


def judged(name: str, ns: str, canary: str, **judge: Any) -> dict[str, Any]:
    metric = {
        "name": "latency",
        "judge": {
            "direction": "increase",
            "lookback": "10m",
            "minSamples": 20,
            "unit": "ms",
            **judge,
        },
        "provider": {"datadog": {"query": QUERY}},
    }
    return run_obj(
        name,
        ns,
        [metric],
        judgment={"canary": {"version": canary}, "baseline": {"version": "1.0.0"}},
    )


async def test_datadog_judge_fails_a_slower_canary_passes_an_equal_one_waits_without_data(
    datadog: Datadog, rt_client: Client, namespace: str
) -> None:
    rng = random.Random(31)
    datadog.draw("1.0.0", 100.0, rng)
    datadog.draw("2.0.0-slow", 130.0, rng)
    datadog.draw("2.0.0-same", 100.0, rng)
    await asyncio.gather(
        rt_client.create(judged("slow", namespace, "2.0.0-slow")),
        rt_client.create(judged("same", namespace, "2.0.0-same")),
        rt_client.create(judged("empty", namespace, "2.0.0-empty", waitForData="3s")),
    )

    slow = (await finished(rt_client, "slow", namespace))["status"]
    assert slow["phase"] == "Failed", slow
    j = slow["metricResults"][0]["judgment"]
    assert j["classification"] == "High", j
    assert j["canary"]["count"] >= 25, j  # 30 drawn; any that aged out of the window are not
    assert j["baseline"]["count"] >= 25, j
    assert j["message"].startswith("latency High: canary median 1"), j
    assert " ms vs baseline " in j["message"], j
    assert "latency High" in slow["message"]

    same = (await finished(rt_client, "same", namespace))["status"]
    assert same["phase"] == "Successful", same
    assert same["metricResults"][0]["judgment"]["classification"] == "Pass"
    assert same["judgment"]["score"] == 100.0

    empty = (await finished(rt_client, "empty", namespace))["status"]
    assert empty["phase"] == "Failed", empty  # its one judged metric NoData: half or more
    assert empty["metricResults"][0]["judgment"]["classification"] == "NoData"
    assert "canary has 0 samples" in empty["metricResults"][0]["judgment"]["message"]

    # Each side asked once per judgment over one and the same ten-minute window.
    by_window: dict[tuple[str, str], set[str]] = {}
    for q in datadog.queries:
        by_window.setdefault((q["from"], q["to"]), set()).add(q["query"])
    assert all(int(to) - int(start) == 600 for start, to in by_window), by_window
    slow_pair = {QUERY.replace("{{judge.version}}", v) for v in ("2.0.0-slow", "1.0.0")}
    assert any(slow_pair <= queries for queries in by_window.values()), by_window
