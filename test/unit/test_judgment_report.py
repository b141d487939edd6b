"""How a judgment is shown: the CLI's table of a judged run and a Cell Event naming the
metrics that failed (cli/analysis.py, analysis/run_controller.py)."""

from __future__ import annotations

import datetime
from typing import Any

from okra_controllers.analysis import compare, judge, run_pass
from okra_controllers.analysis.compare import Side
from okra_controllers.analysis.run_controller import with_run_messages
from okra_controllers.api.v1alpha1.analysis import AnalysisRunSpec, AnalysisRunStatus, MetricResult
from okra_controllers.cli.analysis import judgment_table

RUN: dict[str, Any] = {
    "metadata": {"name": "r", "namespace": "ns"},
    "status": {
        "phase": "Failed",
        "message": "judgment Fail: score 50 (pass 90, marginal 75): latency-p99 High: "
        "canary median 212 ms vs baseline 161 ms, +32 %, p = 0.001",
        "metricResults": [
            {
                "name": "latency-p99",
                "phase": "Failed",
                "judgment": {
                    "classification": "High",
                    "canary": {"count": 30, "median": 212.0, "p90": 250.0},
                    "baseline": {"count": 31, "median": 161.0, "p90": 190.0},
                    "pValue": 0.001,
                    "effectSize": 0.3168,
                    "critical": True,
                },
            },
            {
                "name": "errors",
                "phase": "Successful",
                "judgment": {
                    "classification": "Pass",
                    "canary": {"count": 30, "median": 0.0, "p90": 0.0},
                    "baseline": {"count": 31, "median": 0.0, "p90": 0.0},
                    "pValue": 1.0,
                },
            },
        ],
        "judgment": {"outcome": "Fail", "score": 50, "pass": 90, "marginal": 75},
    },
}


def test_table_has_both_sides_p_value_change_and_score() -> None:
    lines = judgment_table(RUN).splitlines()
    assert lines[1] == "Judgment (canary vs baseline):"
    assert lines[2].split() == [
        "METRIC",
        "CANARY",
        "N",
        "MEDIAN",
        "P90",
        "BASELINE",
        "N",
        "MEDIAN",
        "P90",
        "P-VALUE",
        "CHANGE",
        "RESULT",
    ]
    assert lines[3].split() == [
        "latency-p99",
        "30",
        "212",
        "250",
        "31",
        "161",
        "190",
        "0.001",
        "+32",
        "%",
        "High",
        "(critical)",
    ]
    assert lines[4].split() == ["errors", "30", "0", "0", "31", "0", "0", "1", "-", "Pass"]
    assert lines[5].strip() == "Score: 50  ->  Fail (pass 90, marginal 75)"


def test_no_table_for_a_run_without_judged_metrics() -> None:
    assert judgment_table({"status": {"phase": "Successful", "metricResults": []}}) == ""


def test_cell_event_names_the_failed_metrics() -> None:
    message = "version 2.0.0 failed: analysis cell-2-0-0-a-step-1 Failed; all traffic back to 1.0.0"
    runs = {"cell-2-0-0-a-step-1": RUN}
    out = with_run_messages(message, runs.get)
    assert out == (
        f"{message}: judgment Fail: score 50 (pass 90, marginal 75): latency-p99 High: "
        "canary median 212 ms vs baseline 161 ms, +32 %, p = 0.001"
    )
    assert with_run_messages("version 2.0.0 is rolling out", runs.get) == (
        "version 2.0.0 is rolling out"
    )
    assert with_run_messages("analysis gone Failed", runs.get) == "analysis gone Failed"


def failed_on(
    spec: AnalysisRunSpec, metrics: Any, j: Any, t0: datetime.datetime
) -> AnalysisRunStatus:
    """The status of a run whose first metric was judged `j` once, the run concluded Failed."""
    pair = (Side("canary", "2.0.0", ()), Side("baseline", "1.0.0", ()))
    results: dict[str, MetricResult] = {}
    m, meta = run_pass.judged_measurement(metrics[0], j, pair, t0, t0)
    run_pass.add_measurement(results, metrics[0], m, meta, set())
    status = AnalysisRunStatus()
    assert run_pass.conclude(spec, status, metrics, results, set(), t0, t0).phase == "Failed"
    return status


def test_cell_event_names_a_critical_metric_and_by_how_much() -> None:
    """A step failed by a critical metric alone (the other metric still measuring): the
    run's message, and so the Cell's RolloutFailed Event, names the metric and by how
    much, as for a run failed by its score."""
    t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    prom = {"prometheus": {"address": "http://p", "query": "x"}}
    spec = AnalysisRunSpec.model_validate(
        {
            "metrics": [
                {"name": "errors", "provider": prom, "judge": {"critical": True, "unit": "%"}},
                {"name": "latency", "provider": prom, "judge": {}, "interval": "1m", "count": 5},
            ]
        }
    )
    metrics, problems = run_pass.checked_metrics(spec, {})
    assert problems == []
    canary, baseline = [5.0 + i / 10 for i in range(30)], [1.0 + i / 10 for i in range(30)]
    j = judge.classify(canary, baseline, critical=True)
    assert (j.classification, j.critical) == ("High", True)
    status = failed_on(spec, metrics, j, t0)
    line = "errors High (critical): canary median 6.45 % vs baseline 2.45 %, +163 %, p = 3e-11"
    assert status.message is not None
    assert f"critical: errors: {line}" in status.message, status.message
    runs = {"web-2-0-0-a-step-1": {"status": {"phase": "Failed", "message": status.message}}}
    event = with_run_messages("version 2.0.0 failed: analysis web-2-0-0-a-step-1 Failed", runs.get)
    assert line in event


def test_a_run_whose_canary_p99_is_infinite_fails() -> None:
    """Prometheus answers +Inf for a p99 past the last bucket: the run fails on it, and
    says so, however few such points and however the finite ones compare."""
    t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    prom = {"prometheus": {"address": "http://p", "query": "x"}}
    judged = {"direction": "increase", "unit": "ms"}
    spec = AnalysisRunSpec.model_validate(
        {"metrics": [{"name": "latency-p99", "provider": prom, "judge": judged}]}
    )
    metrics, _ = run_pass.checked_metrics(spec, {})
    assert metrics[0].judge is not None
    baseline = [100.0 + i for i in range(30)]
    j = compare.classify(metrics[0].judge, [*baseline, float("inf")], baseline)
    assert j.classification == "High"
    status = failed_on(spec, metrics, j, t0)
    assert status.message == (
        "judgment Fail: score 0 (pass 90, marginal 75): latency-p99 High: 1 of 31 canary "
        "values are +Inf; finite canary median 114.5 ms vs baseline 114.5 ms"
    )
