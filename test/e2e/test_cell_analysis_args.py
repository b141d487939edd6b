"""A Cell whose analysis template takes its threshold, interval and count as arguments, as Argo
Rollouts' templates do, end to end: okra-manager (a real process) on the real control plane,
moto for AWS, and a real Prometheus scraping an exporter that serves each version's error rate.

One Cell, one okra-manager: v1 serves; v2, whose error rate is under the threshold the step
gives, is promoted to 100; v3, over it, is rolled back (weights back to v2 in AWS, v3 in the
VersionBlocklist, the Event naming the metric)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest

from integration.analysis.promharness import PrometheusServer
from okra_runtime import Client
from support import wait_events

from .conftest import BLOCKLIST, RUN, VERSION_ARG, Env, OkraManager, cell_obj, wait_status

ERRORS = "okra_e2e_error_ratio"


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        yield server


def threshold_template(ns: str, address: str) -> dict[str, Any]:
    """Argo Rollouts' shape: every number of the metric an argument, strings included."""
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": "error-ratio", "namespace": ns},
        "spec": {
            "args": [
                {"name": "version"},
                {"name": "threshold"},
                {"name": "interval", "value": "5m"},
                {"name": "count", "value": "2"},
            ],
            "metrics": [
                {
                    "name": "error-ratio",
                    "interval": "{{args.interval}}",
                    "count": "{{args.count}}",
                    "successCondition": "result[0] <= {{args.threshold}}",
                    "provider": {
                        "prometheus": {
                            "address": address,
                            "query": f'{ERRORS}{{version="{{{{args.version}}}}"}}',
                        }
                    },
                }
            ],
        },
    }


STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {
        "analysis": {
            "templates": [{"templateName": "error-ratio"}],
            "args": [
                *VERSION_ARG,
                {"name": "threshold", "value": "0.05"},
                {"name": "interval", "value": "1s"},
            ],
        }
    },
]


async def test_arguments_in_condition_and_interval_promote_good_and_roll_back_bad(
    env: Env,
    okra: OkraManager,
    prometheus: PrometheusServer,
    rt_client: Client,
    namespace: str,
) -> None:
    ns = namespace
    await rt_client.create(threshold_template(ns, prometheus.address))
    await env.target_group("web-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, STEPS))
    await wait_status(
        rt_client, ns, lambda s: s.get("stableVersion") == "v1" and s.get("health") == "Healthy"
    )

    # v2, 1 % errors against a threshold of 5 %: promoted.
    prometheus.set(ERRORS, 0.01, {"version": "v2"})
    prometheus.set(ERRORS, 0.30, {"version": "v3"})
    await prometheus.wait_for(f"count({ERRORS})", lambda v: v == 2)
    await env.target_group("web-v2", "v2")
    await wait_status(
        rt_client,
        ns,
        lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy",
        within=180,
    )
    assert await env.rule_becomes({"web-v2": 100}), await env.rule_weights()
    (good,) = [r for r in (await rt_client.list(RUN, ns)).items if _measured(r) == "[0.01]"]
    assert good["status"]["phase"] == "Successful", good["status"]
    (result,) = good["status"]["metricResults"]
    assert result["count"] == 2, result  # count from its argument's default
    first, second = result["measurements"]
    gap = (_t(second["startedAt"]) - _t(first["finishedAt"])).total_seconds()
    # The step's interval, 1 s: the next measurement is never sooner (both stamps are whole
    # seconds of one clock, and it is due at finishedAt + 1 s); later only by how long a busy
    # machine takes to come back to the run, and never the template's default, 5 m.
    assert 1 <= gap < 300, gap

    # v3, 30 % errors: rolled back to v2, blocked, the Event naming the metric.
    await env.target_group("web-v3", "v3")
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded", within=180)
    assert "version v3 failed" in st["message"], st
    assert await env.rule_becomes({"web-v2": 100}), await env.rule_weights()
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v3"]
    note = (await wait_events(rt_client, ns, "RolloutFailed"))[0]["note"]
    assert 'Metric "error-ratio" assessed Failed due to failed (1) > failureLimit (0)' in note, note
    (bad,) = [r for r in (await rt_client.list(RUN, ns)).items if _measured(r) == "[0.3]"]
    assert bad["spec"]["metrics"][0]["successCondition"] == "result[0] <= {{args.threshold}}"
    assert not okra.error_lines(), okra.last_lines()


def _measured(run: dict[str, Any]) -> str | None:
    """The value a run's first measurement read: each version's error ratio is its own."""
    for r in (run.get("status") or {}).get("metricResults") or []:
        for m in r.get("measurements") or []:
            return str(m.get("value"))
    return None


def _t(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
