"""The ready-made ALB judge (config/samples' `alb-canary-judge` ClusterAnalysisTemplate)
against moto's CloudWatch: per-target-group series put with PutMetricData as the ALB
publishes them (namespace AWS/ApplicationELB, dimensions LoadBalancer `app/NAME/ID` and
TargetGroup `targetgroup/NAME/ID`, one point a minute), judged by the AnalysisRun controller.
A canary target group 30 % slower fails naming the metric; one drawn like the baseline's
passes.

moto computes neither metric math beyond an expression that names one query nor percentile
statistics (its GetMetricData answers `p99` with HTTP 500 and `FILL(errors, 0) / requests`
with no values; docs/judge.md), so the template is judged here with the two things moto can
compute in their place: `Average` for `p99`, and the errors query for the errors-per-request
expression (every target group here gets the same requests, so counts compare as rates do).
And it looks back over the 15 minutes put before the run started (`lookback`) rather than
waiting for minutes to pass."""

from __future__ import annotations

import asyncio
import datetime
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from integration.analysis.test_analysisrun import finished, okra_crds  # noqa: F401  (fixture)
from okra_controllers.analysis.run_controller import AnalysisRunReconciler
from okra_controllers.api.kinds import ANALYSIS_RUN
from okra_controllers.cli.analysis import judgment_table
from okra_runtime import Client, GenerationChanged, Manager, ManagerOptions
from okra_testkit.emulator import MotoServer
from okra_testkit.seed import Seeder
from support import stop_manager

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "config" / "samples" / "okra_v1alpha1_clusteranalysistemplate_judge_alb.yaml"
MINUTES = 15


@pytest.fixture
async def analysis(
    moto: MotoServer,
    rt_client: Client,
    namespace: str,
    okra_crds: list[str],  # noqa: F811  (the fixture imported above)
) -> AsyncIterator[None]:
    """The AnalysisRun controller, in-process, watching the test's namespace, with moto
    as AWS."""
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    rec = AnalysisRunReconciler(
        rt_client,
        mgr.informer_for(ANALYSIS_RUN),
        mgr.event_recorder("analysisrun-controller"),
        moto.config,
        namespace,
        error_retry=0.5,
    )
    mgr.builder("analysisrun").for_(ANALYSIS_RUN, predicates=(GenerationChanged(),)).complete(rec)
    task = asyncio.create_task(mgr.start())
    yield
    await stop_manager(mgr, task)


def for_moto(spec: dict[str, Any]) -> dict[str, Any]:
    """The sample template's spec with what moto cannot compute replaced (module doc)."""
    for metric in spec["metrics"]:
        metric["judge"]["lookback"] = f"{MINUTES}m"
        for q in metric["provider"]["cloudWatch"]["metricDataQueries"]:
            if q.get("metricStat", {}).get("stat") == "p99":
                q["metricStat"]["stat"] = "Average"
            if q.get("expression") == "FILL(errors, 0) / requests":
                q["expression"] = "errors"
    return spec


async def publish(
    seed: Seeder, lb_arn: str, tg_arn: str, latency: float, rng: random.Random
) -> None:
    """What the ALB publishes for one target group over the last MINUTES minutes: a
    minute's RequestCount and HTTPCode_Target_5XX_Count sums and TargetResponseTime
    average (latency seconds, drawn around `latency`)."""
    dims = [
        {"Name": "LoadBalancer", "Value": lb_arn.split(":loadbalancer/", 1)[1]},
        {"Name": "TargetGroup", "Value": tg_arn.rsplit(":", 1)[1]},
    ]
    now = datetime.datetime.now(datetime.UTC).replace(second=0, microsecond=0)
    data: list[dict[str, Any]] = []
    for minute in range(1, MINUTES + 1):
        at = now - datetime.timedelta(minutes=minute)
        for name, value, unit in (
            ("RequestCount", 1000.0, "Count"),
            ("HTTPCode_Target_5XX_Count", float(rng.randint(20, 30)), "Count"),
            ("TargetResponseTime", latency * rng.lognormvariate(0, 0.03), "Seconds"),
        ):
            data.append(
                {
                    "MetricName": name,
                    "Dimensions": dims,
                    "Timestamp": at,
                    "Value": value,
                    "Unit": unit,
                }
            )
    async with seed.config.client("cloudwatch") as cw:
        for i in range(0, len(data), 500):
            await cw.put_metric_data(Namespace="AWS/ApplicationELB", MetricData=data[i : i + 500])


def run(name: str, ns: str, spec: dict[str, Any], canary: str, baseline: list[str]) -> Any:
    judgment = {
        **spec.get("judgment", {}),
        "canary": {"version": f"{name}-2", "targetGroups": [canary]},
        "baseline": {"version": "1", "targetGroups": baseline},
    }
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {"name": name, "namespace": ns},
        "spec": {**spec, "judgment": judgment},
    }


@pytest.mark.usefixtures("analysis")
async def test_sample_alb_judge_fails_a_slower_target_group_and_passes_an_equal_one(
    moto: MotoServer, rt_client: Client, namespace: str
) -> None:
    seed = Seeder(moto.config)
    network = await seed.network()
    alb = await seed.alb(f"judge-{namespace[-8:]}", network)
    names = ("v1-a", "v1-b", "v2-slow", "v2-same")
    arns = dict(
        zip(
            names,
            await asyncio.gather(
                *(seed.target_group(f"{n}-{namespace[-6:]}", network) for n in names)
            ),
            strict=True,
        )
    )
    # The ALB publishes a target group's metrics under its load balancer: a rule forwards
    # to every target group, as okra's does.
    async with moto.config.client("elbv2") as elb:
        await elb.create_rule(
            ListenerArn=alb.listener_arn,
            Priority=10,
            Conditions=[{"Field": "path-pattern", "Values": ["/*"]}],
            Actions=[
                {
                    "Type": "forward",
                    "ForwardConfig": {
                        "TargetGroups": [{"TargetGroupArn": a, "Weight": 25} for a in arns.values()]
                    },
                }
            ],
        )
    rng = random.Random(31)
    latency = {"v1-a": 0.100, "v1-b": 0.100, "v2-slow": 0.130, "v2-same": 0.100}
    for n in names:
        await publish(seed, alb.arn, arns[n], latency[n], rng)

    template = yaml.safe_load(SAMPLE.read_text())
    assert template["kind"] == "ClusterAnalysisTemplate"
    baseline = [arns["v1-a"], arns["v1-b"]]
    for name in ("slow", "same"):
        spec = for_moto(yaml.safe_load(SAMPLE.read_text())["spec"])
        await rt_client.create(run(name, namespace, spec, arns[f"v2-{name}"], baseline))

    slow = (await finished(rt_client, "slow", namespace, within=90))["status"]
    assert slow["phase"] == "Failed", slow
    by_metric = {r["name"]: r["judgment"] for r in slow["metricResults"]}
    latency_j = by_metric["response-time-p99"]
    assert latency_j["classification"] == "High", latency_j
    # A point a minute (the oldest may fall just outside the window): both target groups of
    # the baseline, the canary's one.
    assert latency_j["canary"]["count"] >= MINUTES - 1
    assert latency_j["baseline"]["count"] == 2 * latency_j["canary"]["count"]
    assert latency_j["message"].startswith("response-time-p99 High: canary median 0.1")
    assert " s vs baseline 0.1" in latency_j["message"]
    assert by_metric["target-5xx-rate"]["classification"] == "Pass", by_metric
    assert slow["judgment"]["outcome"] == "Fail"
    assert "response-time-p99 High" in slow["message"]

    same = await finished(rt_client, "same", namespace, within=90)
    st = same["status"]
    assert st["phase"] == "Successful", st
    assert {r["name"]: r["judgment"]["classification"] for r in st["metricResults"]} == {
        "target-5xx-rate": "Pass",
        "response-time-p99": "Pass",
    }
    assert st["judgment"]["score"] == 100.0
    assert "response-time-p99" in judgment_table(same)


@pytest.mark.usefixtures("analysis")
async def test_a_target_group_behind_no_load_balancer_is_asked_by_target_group_alone(
    moto: MotoServer, rt_client: Client, namespace: str
) -> None:
    """Behind an ALB, a target group's series are asked by LoadBalancer and TargetGroup
    (the test above: CloudWatch matches dimension sets exactly, and the ALB publishes no
    TargetGroup-only TargetResponseTime); a target group no load balancer uses, by its
    TargetGroup dimension alone."""
    seed = Seeder(moto.config)
    network = await seed.network()
    alone = await seed.target_group(f"alone-{namespace[-6:]}", network)
    base = await seed.target_group(f"base-{namespace[-6:]}", network)
    rng = random.Random(7)
    now = datetime.datetime.now(datetime.UTC).replace(second=0, microsecond=0)
    async with moto.config.client("cloudwatch") as cw:
        for arn in (alone, base):
            await cw.put_metric_data(
                Namespace="AWS/ApplicationELB",
                MetricData=[
                    {
                        "MetricName": "TargetResponseTime",
                        "Dimensions": [{"Name": "TargetGroup", "Value": arn.rsplit(":", 1)[1]}],
                        "Timestamp": now - datetime.timedelta(minutes=m),
                        "Value": 0.1 * rng.lognormvariate(0, 0.03),
                    }
                    for m in range(1, MINUTES + 1)
                ],
            )
    spec = for_moto(yaml.safe_load(SAMPLE.read_text())["spec"])
    spec["metrics"] = [m for m in spec["metrics"] if m["name"] == "response-time-p99"]
    await rt_client.create(run("alone", namespace, spec, alone, [base]))
    st = (await finished(rt_client, "alone", namespace, within=60))["status"]
    assert st["phase"] == "Successful", st
    assert st["metricResults"][0]["judgment"]["canary"]["count"] >= MINUTES - 1
