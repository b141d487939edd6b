"""AnalysisRuns measured by okra itself against a real Prometheus: success,
failure after failureLimit, inconclusive, dry-run, consecutive errors when
Prometheus goes away, termination, an Argo Rollouts template used unchanged,
bad input, and a manager killed mid-run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.analysis.run_controller import AnalysisRunReconciler
from okra_controllers.analysis.templates import TemplateRef, build_run
from okra_controllers.api.kinds import ANALYSIS_RUN
from okra_controllers.api.v1alpha1.analysis import Argument
from okra_controllers.aws.config import AwsConfig
from okra_controllers.manager import local_command
from okra_runtime import GVK, Client, GenerationChanged, Manager, ManagerOptions
from okra_testkit.envtest import ControlPlane
from support import eventually, stop_manager

REPO = Path(__file__).resolve().parents[3]
EVENT = GVK("events.k8s.io", "v1", "Event")


@pytest.fixture(scope="session")
def okra_crds(control_plane: ControlPlane) -> list[str]:
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])


@pytest.fixture
async def analysis(rt_client: Client, namespace: str, okra_crds: list[str]) -> AsyncIterator[None]:
    """The AnalysisRun controller, in-process, watching the test's namespace."""
    mgr = Manager(
        rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
    )
    rec = AnalysisRunReconciler(
        rt_client,
        mgr.informer_for(ANALYSIS_RUN),
        mgr.event_recorder("analysisrun-controller"),
        AwsConfig(),
        namespace,
        error_retry=0.5,
    )
    mgr.builder("analysisrun").for_(ANALYSIS_RUN, predicates=(GenerationChanged(),)).complete(rec)
    task = asyncio.create_task(mgr.start())
    yield
    await stop_manager(mgr, task)


def run_obj(name: str, ns: str, metrics: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AnalysisRun",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"metrics": metrics, **spec},
    }


def prom_metric(
    address: str, name: str = "rate", query: str = "okra_test_value", **kw: Any
) -> dict[str, Any]:
    return {"name": name, "provider": {"prometheus": {"address": address, "query": query}}, **kw}


async def finished(c: Client, name: str, ns: str, within: float = 60) -> dict[str, Any]:
    async def done() -> bool:
        obj = await c.get(ANALYSIS_RUN, name, ns)
        return (obj.get("status") or {}).get("phase") in (
            "Successful",
            "Failed",
            "Error",
            "Inconclusive",
        )

    assert await eventually(done, within=within), await c.get(ANALYSIS_RUN, name, ns)
    return await c.get(ANALYSIS_RUN, name, ns)


async def test_successful_run(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    prometheus.set("okra_test_value", 0.99)
    await prometheus.wait_for("okra_test_value", lambda v: v == 0.99)
    await rt_client.create(
        run_obj(
            "ok",
            namespace,
            [
                prom_metric(
                    prometheus.address, interval="1s", count=3, successCondition="result[0] >= 0.95"
                )
            ],
        )
    )
    run = await finished(rt_client, "ok", namespace)
    st = run["status"]
    assert st["phase"] == "Successful"
    res = st["metricResults"][0]
    assert (res["count"], res["successful"], len(res["measurements"])) == (3, 3, 3)
    assert res["measurements"][0]["value"] == "[0.99]"
    assert st["runSummary"] == {
        "count": 1,
        "successful": 1,
        "failed": 0,
        "inconclusive": 0,
        "error": 0,
    }

    async def reported() -> bool:  # Events are recorded after the status write, not with it
        events = [
            e["reason"]
            for e in (await rt_client.list(EVENT, namespace)).items
            if e["regarding"]["name"] == "ok"
        ]
        return "AnalysisRunSuccessful" in events

    assert await eventually(reported, within=15)


async def test_fails_after_failure_limit(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    prometheus.set("okra_test_low", 0.5)
    await prometheus.wait_for("okra_test_low", lambda v: v == 0.5)
    await rt_client.create(
        run_obj(
            "bad",
            namespace,
            [
                prom_metric(
                    prometheus.address,
                    query="okra_test_low",
                    interval="1s",
                    count=10,
                    failureLimit=1,
                    successCondition="result[0] >= 0.95",
                )
            ],
        )
    )
    st = (await finished(rt_client, "bad", namespace))["status"]
    assert st["phase"] == "Failed"
    assert st["metricResults"][0]["failed"] == 2  # failed (2) > failureLimit (1)
    assert st["message"] == 'Metric "rate" assessed Failed due to failed (2) > failureLimit (1)'


async def test_inconclusive_run(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    prometheus.set("okra_test_mid", 0.7)
    await prometheus.wait_for("okra_test_mid", lambda v: v == 0.7)
    await rt_client.create(
        run_obj(
            "meh",
            namespace,
            [
                prom_metric(
                    prometheus.address,
                    query="okra_test_mid",
                    successCondition="result[0] >= 0.95",
                    failureCondition="result[0] < 0.5",
                )
            ],
        )
    )
    st = (await finished(rt_client, "meh", namespace))["status"]
    assert st["phase"] == "Inconclusive"
    assert st["metricResults"][0]["inconclusive"] == 1


async def test_a_spec_edited_mid_run_is_checked_again(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    """As Argo, every pass checks the spec: a run that measures on, edited to a count below
    its failureLimit, ends in Error instead of measuring with it."""
    prometheus.set("okra_test_value", 0.99)
    await prometheus.wait_for("okra_test_value", lambda v: v == 0.99)
    metric = prom_metric(prometheus.address, interval="1s", successCondition="result[0] > 0.9")
    await rt_client.create(run_obj("edited", namespace, [metric]))

    async def measured() -> bool:
        st = (await rt_client.get(ANALYSIS_RUN, "edited", namespace)).get("status") or {}
        return bool(st.get("metricResults")) and st["metricResults"][0]["count"] >= 1

    assert await eventually(measured, within=30)
    edited = {**metric, "count": 1, "failureLimit": 3}
    await rt_client.patch(
        ANALYSIS_RUN, "edited", {"spec": {"metrics": [edited]}}, namespace=namespace
    )
    st = (await finished(rt_client, "edited", namespace))["status"]
    assert st["phase"] == "Error", st
    assert st["message"].startswith(
        "Analysis spec invalid: metrics[0]: count (1) must be >= failureLimit + "
        "consecutiveSuccessLimit (3 + 0)"
    ), st["message"]


async def test_dry_run_metric_fails_without_failing_the_run(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    prometheus.set("okra_test_value", 0.99)
    await prometheus.wait_for("okra_test_value", lambda v: v == 0.99)
    await rt_client.create(
        run_obj(
            "dry",
            namespace,
            [
                prom_metric(
                    prometheus.address, name="strict", successCondition="result[0] >= 0.999"
                ),
                prom_metric(prometheus.address, name="fine", successCondition="result[0] >= 0.95"),
            ],
            dryRun=[{"metricName": "strict"}],
        )
    )
    st = (await finished(rt_client, "dry", namespace))["status"]
    assert st["phase"] == "Successful"
    by_name = {r["name"]: r for r in st["metricResults"]}
    assert by_name["strict"]["phase"] == "Failed"
    assert by_name["strict"]["dryRun"] is True
    assert st["dryRunSummary"]["failed"] == 1
    assert st["runSummary"]["successful"] == 1


async def test_consecutive_errors_when_prometheus_stops(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    prometheus.set("okra_test_value", 0.99)
    await prometheus.wait_for("okra_test_value", lambda v: v == 0.99)
    await rt_client.create(
        run_obj(
            "outage",
            namespace,
            [
                prom_metric(
                    prometheus.address,
                    interval="1s",
                    count=50,
                    consecutiveErrorLimit=2,
                    successCondition="result[0] >= 0.95",
                )
            ],
        )
    )

    async def measured() -> bool:
        st = (await rt_client.get(ANALYSIS_RUN, "outage", namespace)).get("status") or {}
        return bool(st.get("metricResults")) and st["metricResults"][0]["successful"] >= 1

    assert await eventually(measured, within=30)
    prometheus.stop()
    try:
        st = (await finished(rt_client, "outage", namespace))["status"]
    finally:
        prometheus.start()
    res = st["metricResults"][0]
    assert st["phase"] == "Error"
    assert res["consecutiveError"] == 3
    assert "consecutiveErrors (3) > consecutiveErrorLimit (2)" in st["message"]
    assert res["measurements"][-1]["phase"] == "Error"


async def test_terminate_stops_an_endless_run(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str
) -> None:
    prometheus.set("okra_test_value", 0.99)
    await prometheus.wait_for("okra_test_value", lambda v: v == 0.99)
    await rt_client.create(
        run_obj(
            "endless",
            namespace,
            [prom_metric(prometheus.address, interval="1s", successCondition="result[0] >= 0.95")],
        )
    )

    async def two() -> bool:
        st = (await rt_client.get(ANALYSIS_RUN, "endless", namespace)).get("status") or {}
        return bool(st.get("metricResults")) and st["metricResults"][0]["count"] >= 2

    assert await eventually(two, within=30)
    await rt_client.patch(
        ANALYSIS_RUN, "endless", {"spec": {"terminate": True}}, namespace=namespace
    )
    st = (await finished(rt_client, "endless", namespace))["status"]
    assert (st["phase"], st["message"]) == ("Successful", "Run Terminated")


ARGO_SUCCESS_RATE = """\
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service-name
  metrics:
  - name: success-rate
    interval: 5m
    # NOTE: prometheus queries return results in the form of a vector.
    # So it is common to access the index 0 of the returned array to obtain the value
    successCondition: result[0] >= 0.95
    failureLimit: 3
    provider:
      prometheus:
        address: {address}
        query: |
          sum(irate(
            istio_requests_total{{reporter="source",destination_service=~"{{{{args.service-name}}}}",response_code!~"5.*"}}[5m]
          )) /
          sum(irate(
            istio_requests_total{{reporter="source",destination_service=~"{{{{args.service-name}}}}"}}[5m]
          ))
"""


async def test_argo_rollouts_template_runs_unchanged(
    prometheus: Any, analysis: None, rt_client: Client, namespace: str, control_plane: ControlPlane
) -> None:
    control_plane.install_crds([REPO / "test" / "fixtures" / "argo-rollouts-analysis-crds.yaml"])
    svc = "guestbook-svc.default.svc.cluster.local"
    ok = {"reporter": "source", "destination_service": svc, "response_code": "200"}
    err = {**ok, "response_code": "503"}

    async def traffic() -> None:  # 99% success, as counters that keep growing
        n = 0
        while True:
            n += 1
            prometheus.set("istio_requests_total", 99.0 * n, ok)
            prometheus.set("istio_requests_total", 1.0 * n, err)
            await asyncio.sleep(0.5)

    feeder = asyncio.create_task(traffic())
    try:
        control_plane.kubectl(
            "apply",
            "-n",
            namespace,
            "-f",
            "-",
            input_text=ARGO_SUCCESS_RATE.format(address=prometheus.address),
        )
        await prometheus.wait_for(
            f'sum(irate(istio_requests_total{{destination_service="{svc}"}}[5m]))', lambda v: v > 0
        )
        run = await build_run(
            rt_client,
            namespace=namespace,
            name="canary-1",
            templates=[TemplateRef("success-rate")],
            args=[Argument(name="service-name", value=svc)],
        )
        assert run["apiVersion"] == "okra.mumo.co/v1alpha1"  # never an argoproj.io run
        await rt_client.create(run)

        async def first_measurement() -> bool:
            st = (await rt_client.get(ANALYSIS_RUN, "canary-1", namespace)).get("status") or {}
            return bool(st.get("metricResults")) and st["metricResults"][0]["count"] >= 1

        assert await eventually(first_measurement, within=30)
        st = (await rt_client.get(ANALYSIS_RUN, "canary-1", namespace))["status"]
        m = st["metricResults"][0]["measurements"][0]
        assert m["phase"] == "Successful", m
        assert 0.95 <= json.loads(m["value"])[0] <= 1.0
        assert st["phase"] == "Running"  # interval 5m and no count: runs until terminated
        await rt_client.patch(
            ANALYSIS_RUN, "canary-1", {"spec": {"terminate": True}}, namespace=namespace
        )
        assert (await finished(rt_client, "canary-1", namespace))["status"]["phase"] == "Successful"
    finally:
        feeder.cancel()


@pytest.mark.parametrize(
    ("case", "metric", "args", "expect"),
    [
        (
            "condition",
            {"successCondition": "result[0] >= )"},
            None,
            "Analysis spec invalid: metrics[0]: "
            'could not evaluate successCondition "result[0] >= )"',
        ),
        (
            "count-below-limit",  # Argo's ValidateMetrics: an Error, never a Successful run
            {"successCondition": "true", "count": 1, "failureLimit": 2},
            None,
            "Analysis spec invalid: metrics[0]: count (1) must be >= failureLimit + "
            "consecutiveSuccessLimit (2 + 0) if both >= 0",
        ),
        (
            "missing-arg",
            {"successCondition": "true"},
            [{"name": "service"}],
            "Unable to resolve metric arguments: args.service was not resolved",
        ),
        (
            "missing-secret",
            {"successCondition": "true"},
            [{"name": "service", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k"}}}],
            "args[0] (service)",
        ),
        (
            "undeclared-arg",
            {
                "successCondition": "true",
                "provider": {
                    "prometheus": {"address": "http://127.0.0.1:1", "query": "{{args.who}}"}
                },
            },
            None,
            "Unable to resolve metric arguments: failed to resolve {{args.who}}",
        ),
    ],
)
async def test_bad_input_gives_error_phase_naming_the_field(
    analysis: None,
    rt_client: Client,
    namespace: str,
    case: str,
    metric: dict[str, Any],
    args: list[dict[str, Any]] | None,
    expect: str,
) -> None:
    m = {
        "name": "m",
        "provider": {"prometheus": {"address": "http://127.0.0.1:1", "query": "up"}},
        **metric,
    }
    spec: dict[str, Any] = {"args": args} if args else {}
    await rt_client.create(run_obj(case, namespace, [m], **spec))
    st = (await finished(rt_client, case, namespace))["status"]
    assert st["phase"] == "Error"
    assert expect in st["message"], st["message"]

    async def warned() -> bool:
        return any(
            e["regarding"]["name"] == case and e["type"] == "Warning"
            for e in (await rt_client.list(EVENT, namespace)).items
        )

    assert await eventually(warned, within=10)


async def test_manager_killed_mid_run_resumes_without_repeating(
    prometheus: Any,
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    okra_crds: list[str],
    tmp_path: Path,
) -> None:
    prometheus.set("okra_test_value", 0.99)
    await prometheus.wait_for("okra_test_value", lambda v: v == 0.99)

    def manager() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            local_command(control_plane.kubeconfig(), namespace, controllers="analysisrun"),
            stdout=open(tmp_path / "manager.log", "ab"),
            stderr=subprocess.STDOUT,
            env={**os.environ},
        )

    count = 6
    first = manager()
    try:
        await rt_client.create(
            run_obj(
                "durable",
                namespace,
                [
                    prom_metric(
                        prometheus.address,
                        interval="1s",
                        count=count,
                        successCondition="result[0] >= 0.95",
                    )
                ],
            )
        )

        async def some() -> bool:
            st = (await rt_client.get(ANALYSIS_RUN, "durable", namespace)).get("status") or {}
            return bool(st.get("metricResults")) and st["metricResults"][0]["count"] >= 2

        assert await eventually(some, within=60)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    await asyncio.sleep(1.5)
    second = manager()
    try:
        st = (await finished(rt_client, "durable", namespace, within=90))["status"]
    finally:
        second.terminate()
        second.wait(30)
    res = st["metricResults"][0]
    assert st["phase"] == "Successful"
    assert (res["count"], res["successful"], len(res["measurements"])) == (count, count, count)
    times = [m["finishedAt"] for m in res["measurements"]]
    assert times == sorted(times)
