"""The monitoring kit against real rollouts: Prometheus scrapes the real manager and
evaluates the kit's alerting rules (`for:` dropped in this copy: the conditions are what
is tested, not the waiting). A canary whose analysis fails: every dashboard query returns
series, OkraCellDegraded and OkraAnalysisFailing fire. A canary whose analysis never ends
while AWS throttles okra's DescribeRules calls, then fails one with 500s (through a fault
proxy): OkraRolloutStuck (the Cell's progress deadline), OkraAWSThrottling,
OkraReconcileErrors and OkraAWSErrors fire. OkraWatchStalled: in
test/reliability/test_watch_stalled_alert.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from faultproxy import FaultProxy
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.process import Process, free_port, wait_until
from support import eventually

from .conftest import VERSION_ARG, Env, Metrics, cell_obj, cell_status, error_rate_template

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "config" / "prometheus" / "prometheusrule.yaml"
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


@dataclass
class Monitored:
    prom: str
    """Prometheus' URL."""
    faults: FaultProxy
    """The proxy between okra-manager and AWS (no faults until a test scripts some)."""


@pytest.fixture
async def monitored(
    control_plane: ControlPlane, env: Env, tmp_path: Path
) -> AsyncIterator[Monitored]:
    """okra-manager with its metrics on a port, talking to AWS through a fault proxy (in
    front of the env's counting proxy), and Prometheus scraping it every 2 s with the
    kit's alerting rules loaded."""
    faults = FaultProxy(env.proxy.endpoint_url)
    await faults.start()
    metrics_port = free_port()
    argv = [
        *local_command(
            control_plane.kubeconfig(), env.namespace, aws_endpoint_url=faults.endpoint_url
        ),
        "--metrics-bind-address",
        f"127.0.0.1:{metrics_port}",
    ]
    manager = Process(
        "okra-manager", argv, tmp_path / "manager.log", env={**os.environ, **EMULATOR_ENV}
    )
    manager.start()
    try:
        with prometheus_scraping(tmp_path, metrics_port, interval="2s") as prom:
            yield Monitored(prom, faults)
    finally:
        manager.stop()
        await faults.stop()


@contextmanager
def prometheus_scraping(tmp_path: Path, metrics_port: int, *, interval: str) -> Iterator[str]:
    """The real Prometheus scraping okra-manager's /metrics on `metrics_port` every
    `interval` and evaluating the kit's alerting rules (config/prometheus/, `for:` dropped)
    as often; yields its URL once it is ready."""
    prom_port = free_port()
    groups = yaml.safe_load(RULES.read_text())["spec"]["groups"]
    for group in groups:
        for rule in group["rules"]:
            rule.pop("for", None)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": groups}))
    (tmp_path / "prometheus.yml").write_text(
        f"global: {{scrape_interval: {interval}, evaluation_interval: {interval}}}\n"
        f"rule_files: ['{tmp_path / 'rules.yml'}']\n"
        "scrape_configs:\n"
        "- job_name: okra-manager\n"
        f"  scrape_interval: {interval}\n"
        f"  scrape_timeout: {interval}\n"
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


async def firing(prom: str, alert: str, within: float = 60) -> bool:
    """Whether Prometheus' rule evaluation has `alert` firing within `within` seconds."""

    async def now() -> bool:
        async with aiohttp.ClientSession() as s, s.get(f"{prom}/api/v1/alerts") as r:
            doc = await r.json()
        return any(
            a["labels"]["alertname"] == alert and a["state"] == "firing"
            for a in doc["data"]["alerts"]
        )

    return await eventually(now, within=within, interval=0.5)


def alert_exprs() -> dict[str, str]:
    rules = yaml.safe_load(RULES.read_text())
    return {r["alert"]: r["expr"] for g in rules["spec"]["groups"] for r in g["rules"]}


async def test_dashboard_and_alert_queries_have_data_during_a_rollout(
    env: Env,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    monitored: Monitored,
) -> None:
    prom, ns = monitored.prom, namespace
    metrics.rates["v2"] = 0.5
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, STEPS))

    async def phase(p: str) -> bool:
        return (await cell_status(rt_client, ns)).get("health") == p

    assert await eventually(lambda: phase("Healthy"), within=60)
    # Prometheus has the failure counter at 0 before the run fails: increase() needs a sample
    # from before (a Prometheus that first scrapes after the failure sees no increase).
    assert await has_data(prom, 'okra_analysis_run_total{phase="Failed"} == 0')
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

    exprs = alert_exprs()
    for alert in ("OkraCellDegraded", "OkraAnalysisFailing"):
        assert await has_data(prom, exprs[alert]), exprs[alert]
        assert await firing(prom, alert), alert
    degraded = (await query(prom, exprs["OkraCellDegraded"]))[0]["metric"]
    assert (degraded["namespace"], degraded["cell"], degraded["stable"]) == (ns, "web", "v1")
    [failing] = await query(prom, exprs["OkraAnalysisFailing"])
    assert failing["metric"]["phase"] == "Failed"
    for metric in (
        "okra_cell_info",
        "controller_runtime_reconcile_total",
        "okra_aws_api_calls_total",
        "process_resident_memory_bytes",
    ):
        assert await has_data(prom, metric), metric


async def test_stuck_rollout_throttling_and_reconcile_errors_fire_their_alerts(
    env: Env,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    monitored: Monitored,
) -> None:
    prom, ns = monitored.prom, namespace
    slow = error_rate_template(ns, metrics.url, name="slow")
    slow["spec"]["metrics"][0]["count"] = 1000  # one measurement a second: never done here
    await rt_client.create(slow)
    await env.target_group("web-a-v1", "v1")
    analysis = {"analysis": {"templates": [{"templateName": "slow"}], "args": VERSION_ARG}}
    cell = cell_obj(
        ns, env.alb.listener_arn, [{"setWeight": 20}, analysis], progressDeadlineSeconds=3
    )
    await rt_client.create(cell)

    async def healthy() -> bool:
        return (await cell_status(rt_client, ns)).get("health") == "Healthy"

    assert await eventually(healthy, within=60)
    exprs = alert_exprs()
    quiet = ("OkraRolloutStuck", "OkraAWSThrottling", "OkraReconcileErrors", "OkraAWSErrors")
    for alert in quiet:
        assert not await query(prom, exprs[alert]), alert  # quiet before
    # AWS throttles the next 10 DescribeRules attempts (each counted as throttled), then
    # answers 5 with a 500; a call makes up to 6 attempts (AwsConfig.total_max_attempts),
    # so the ALB config's reconcile fails on some calls, then AWS answers.
    monitored.faults.script["DescribeRules"] = ["throttle"] * 10 + ["500"] * 5
    await env.target_group("web-a-v2", "v2")

    async def past_deadline() -> bool:
        st = await cell_status(rt_client, ns)
        return any(c["reason"] == "ProgressDeadlineExceeded" for c in st.get("conditions") or [])

    assert await eventually(past_deadline, within=90), await cell_status(rt_client, ns)
    assert await firing(prom, "OkraRolloutStuck")
    [stuck] = await query(prom, exprs["OkraRolloutStuck"])
    assert (stuck["metric"]["namespace"], stuck["metric"]["cell"]) == (ns, "web")
    assert await firing(prom, "OkraAWSThrottling", within=90)
    [throttled] = await query(prom, exprs["OkraAWSThrottling"])
    assert throttled["metric"]["operation"] == "DescribeRules"
    assert await firing(prom, "OkraReconcileErrors", within=90)
    controllers = {
        r["metric"]["controller"] for r in await query(prom, exprs["OkraReconcileErrors"])
    }
    assert "albconfig" in controllers
    assert await firing(prom, "OkraAWSErrors", within=90)
    erred = await query(prom, exprs["OkraAWSErrors"])
    assert "DescribeRules" in {r["metric"]["operation"] for r in erred}

    async def applied() -> bool:  # once AWS answers again, the retried write goes through
        return await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}

    assert await eventually(applied, within=90), await env.rule_weights()

    # the write may rest on the listener's shared listing, read before the faults began:
    # the rule can show the weights while okra still works through the scripted faults
    async def all_used() -> bool:
        used = monitored.faults.counts(["DescribeRules"])
        return used["throttle"] == 10 and used["500"] == 5

    assert await eventually(all_used, within=60), monitored.faults.counts(["DescribeRules"])
