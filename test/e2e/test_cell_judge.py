"""A Cell judged against its stable version, end to end: okra-manager (a real process) on the
real control plane, moto for AWS, and a real Prometheus scraping an exporter that serves each
version's clusters' request latency, redrawn from distributions the test sets.

One Cell, one okra-manager: v1 serves; v2, 30 % slower, is rolled back at its judged step
(weights back to v1 in AWS, v2 in the VersionBlocklist, an Event naming the metric); v3 comes
with no traffic yet and waits at its judged step (NoData: the step neither passes nor fails)
until its latency arrives, drawn like v1's (other draws), and is then promoted to 100; v4,
drawn like v3, comes when the template also judges an error rate nobody serves: half its
judged metrics without data, its step does not promote (Kayenta's rule: half or more NoData
fails), and v4 is rolled back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from integration.analysis.promharness import PrometheusServer, Traffic
from okra_runtime import GVK, Client
from support import eventually, wait_events

from .conftest import BLOCKLIST, RUN, Env, OkraManager, cell_obj, wait_status

LATENCY = "okra_e2e_request_latency_ms"
ERRORS = "okra_e2e_error_ratio"
"""Never served: a judged metric without data."""
TEMPLATE = GVK("okra.mumo.co", "v1alpha1", "AnalysisTemplate")


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        yield server


@pytest.fixture
async def traffic(prometheus: PrometheusServer) -> AsyncIterator[Traffic]:
    t = Traffic(prometheus, LATENCY, 0.05)
    task = asyncio.create_task(t.run())
    yield t
    task.cancel()
    prometheus.remove(LATENCY)


def judge_template(ns: str, address: str) -> dict[str, Any]:
    """p50 latency of the canary version against the stable version's, over the last 30 s
    at 1 s steps (at least 10 points a side); NoData asked again every 2 s."""
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "latency-judge", "namespace": ns},
        "spec": {
            "judgment": {"scoreThresholds": {"pass": 90, "marginal": 75}},
            "metrics": [
                {
                    "name": "latency",
                    "interval": "2s",
                    "count": 1,
                    "judge": {
                        "direction": "increase",
                        "tolerance": 0.1,
                        "step": "1s",
                        "lookback": "30s",
                        "minSamples": 10,
                        "waitForData": "10m",
                        "unit": "ms",
                    },
                    "provider": {
                        "prometheus": {
                            "address": address,
                            "query": f'{LATENCY}{{version="{{{{judge.version}}}}"}}',
                        }
                    },
                }
            ],
        },
    }


async def runs_of(c: Client, ns: str, version: str) -> list[dict[str, Any]]:
    """The Cell's AnalysisRuns that judge `version` (their judgment names its side)."""
    out = []
    for r in (await c.list(RUN, ns)).items:
        for res in (r.get("status") or {}).get("metricResults") or []:
            if any(
                (m.get("metadata") or {}).get("canary", "").startswith(f"{version} ")
                for m in res.get("measurements", [])
            ):
                out.append(r)
                break
    return out


async def test_slower_canary_is_rolled_back_equal_one_waits_for_data_then_is_promoted(
    env: Env,
    okra: OkraManager,
    prometheus: PrometheusServer,
    traffic: Traffic,
    rt_client: Client,
    namespace: str,
) -> None:
    ns = namespace
    await rt_client.create(judge_template(ns, prometheus.address))
    traffic.medians["v1"] = 100.0
    await env.target_group("web-v1", "v1")
    steps: list[dict[str, Any]] = [
        {"setWeight": 20},
        {"analysis": {"templates": [{"templateName": "latency-judge"}]}},
    ]
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, steps))
    await wait_status(
        rt_client, ns, lambda s: s.get("stableVersion") == "v1" and s.get("health") == "Healthy"
    )
    assert await env.rule_becomes({"web-v1": 100}), await env.rule_weights()

    # (a) v2, 30 % slower: rolled back at its judged step, blocked, named in the Event.
    traffic.medians["v2"] = 130.0
    await prometheus.wait_for(f"count({LATENCY})", lambda v: v == 2)
    await env.target_group("web-v2", "v2")
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded", within=180)
    assert "version v2 failed" in st["message"], st
    assert await env.rule_becomes({"web-v1": 100}), await env.rule_weights()
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v2"]
    failed = await wait_events(rt_client, ns, "RolloutFailed")
    note = failed[0]["note"]
    assert "latency High: canary median 1" in note, note
    assert " ms vs baseline " in note, note
    assert "p = " in note, note
    (run,) = await runs_of(rt_client, ns, "v2")
    judged = run["status"]["metricResults"][0]["judgment"]
    assert judged["classification"] == "High", judged
    assert judged["canary"]["median"] > 1.2 * judged["baseline"]["median"], judged
    traffic.medians.pop("v2")

    # (c) v3 has no traffic yet: its judged step waits (NoData), weights hold at 20 %.
    await env.target_group("web-v3", "v3")
    st = await wait_status(
        rt_client,
        ns,
        lambda s: s.get("canaryVersion") == "v3" and s.get("currentStepIndex") == 1,
        within=60,
    )
    assert await env.rule_becomes({"web-v1": 80, "web-v3": 20}), await env.rule_weights()

    async def waiting() -> bool:
        runs = await runs_of(rt_client, ns, "v3")
        if not runs:
            return False
        measurements = runs[0]["status"]["metricResults"][0]["measurements"]
        return sum(1 for m in measurements if m.get("value") == "NoData") >= 2

    assert await eventually(waiting, within=60), await runs_of(rt_client, ns, "v3")
    (run,) = await runs_of(rt_client, ns, "v3")
    assert run["status"]["phase"] == "Running", run["status"]
    assert "canary has 0 samples" in run["status"]["metricResults"][0]["judgment"]["message"]
    st = await wait_status(rt_client, ns, lambda s: True)
    assert (st.get("canaryVersion"), st.get("currentStepIndex")) == ("v3", 1), st
    assert st.get("health") not in ("Degraded", "Healthy"), st
    assert await env.rule_weights() == {"web-v1": 80, "web-v3": 20}

    # (b) its latency arrives, drawn like v1's: judged Pass, promoted to 100.
    traffic.medians["v3"] = 100.0
    st = await wait_status(
        rt_client,
        ns,
        lambda s: s.get("stableVersion") == "v3" and s.get("health") == "Healthy",
        within=180,
    )
    assert await env.rule_becomes({"web-v3": 100}), await env.rule_weights()
    (run,) = await runs_of(rt_client, ns, "v3")
    assert run["status"]["phase"] == "Successful", run["status"]
    assert run["status"]["metricResults"][0]["judgment"]["classification"] == "Pass"
    assert [i["version"] for i in (await rt_client.get(BLOCKLIST, "web", ns))["spec"]["items"]] == [
        "v2"
    ]

    # (d) the template also judges an error rate that has no data: v4, drawn like v3, has
    # half its judged metrics without data once `waitForData` passes, and is rolled back.
    (latency,) = judge_template(ns, prometheus.address)["spec"]["metrics"]
    errors = {
        **latency,
        "name": "errors",
        "judge": {**latency["judge"], "waitForData": "20s"},
        "provider": {
            "prometheus": {
                "address": prometheus.address,
                "query": f'{ERRORS}{{version="{{{{judge.version}}}}"}}',
            }
        },
    }
    await rt_client.patch(
        TEMPLATE, "latency-judge", {"spec": {"metrics": [latency, errors]}}, namespace=ns
    )
    traffic.medians["v4"] = 100.0
    await prometheus.wait_for(f"count({LATENCY})", lambda v: v == 3)
    await env.target_group("web-v4", "v4")
    st = await wait_status(
        rt_client,
        ns,
        lambda s: s.get("health") == "Degraded" and "v4" in (s.get("message") or ""),
        within=180,
    )
    assert "version v4 failed" in st["message"], st
    assert st.get("stableVersion") == "v3", st
    assert await env.rule_becomes({"web-v3": 100}), await env.rule_weights()
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v2", "v4"]
    (run,) = await runs_of(rt_client, ns, "v4")
    status = run["status"]
    assert status["phase"] == "Failed", status
    assert status["judgment"]["score"] == 0, status["judgment"]
    assert "1 of 2 judged metrics have no data" in status["judgment"]["message"], status
    by_name = {r["name"]: r for r in status["metricResults"]}
    assert by_name["errors"]["judgment"]["classification"] == "NoData", by_name["errors"]
    assert by_name["latency"]["judgment"]["classification"] in ("Pass", "High"), by_name
    assert not okra.error_lines(), okra.last_lines()
