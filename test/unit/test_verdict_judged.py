"""Verdict rules for judged metrics and for runs with too little evidence
(okra_controllers.analysis.verdict, the parts where okra departs from Argo on purpose)."""

from __future__ import annotations

import datetime
from typing import Any

from okra_controllers.analysis import verdict
from okra_controllers.api.v1alpha1.analysis import (
    Judgment,
    Measurement,
    Metric,
    MetricJudgmentStatus,
    MetricResult,
    Phase,
    SampleSummary,
)

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
PROM = {"prometheus": {"address": "http://p", "query": 'x{v="{{judge.version}}"}'}}
WEB = {"web": {"url": "http://x"}}
PHASE: dict[str, Phase] = {
    "Pass": "Successful",
    "High": "Failed",
    "Low": "Failed",
    "NoData": "Inconclusive",
}


def judged(name: str = "m", critical: bool = False, **kw: Any) -> Metric:
    return Metric.model_validate(
        {"name": name, "provider": PROM, "judge": {"critical": critical, "waitForData": "5m"}, **kw}
    )


def result(*labels: str, name: str = "m", at: datetime.datetime = T0) -> MetricResult:
    """A judged metric's result; "High!" is a High past the critical effect size."""
    r = MetricResult(name=name, phase="Running")
    for mark in labels:
        label = mark.rstrip("!")
        if label == "Error":
            m = Measurement(phase="Error", started_at=at, finished_at=at)
        else:
            meta = {verdict.CLASSIFICATION: label}
            if mark.endswith("!"):
                meta[verdict.CRITICAL_FAILURE] = "true"
            m = Measurement(phase=PHASE[label], started_at=at, finished_at=at, metadata=meta)
            r.judgment = MetricJudgmentStatus(
                classification=label,  # type: ignore[arg-type]
                canary=SampleSummary(),
                baseline=SampleSummary(),
                message=f"{name} {label}: details",
            )
        r.measurements.append(m)
        verdict.record(r, m.phase, not verdict.is_no_data(m))
    return r


def at(minutes: float) -> datetime.datetime:
    return T0 + datetime.timedelta(minutes=minutes)


def test_no_data_is_not_counted_and_the_metric_keeps_waiting() -> None:
    r = result("NoData", "NoData")
    assert (r.count, r.inconclusive, r.consecutive_error) == (0, 0, 0)
    assert verdict.assess_metric(judged(), r, False, T0, at(1)) == "Running"


def test_no_data_past_wait_for_data_is_inconclusive_never_successful() -> None:
    assert verdict.assess_metric(judged(), result("NoData"), False, T0, at(5)) == "Inconclusive"
    # initialDelay moves the deadline
    m = judged(initialDelay="2m")
    assert verdict.assess_metric(m, result("NoData"), False, T0, at(6)) == "Running"


def test_data_after_waiting_is_judged() -> None:
    assert verdict.assess_metric(judged(), result("NoData", "Pass"), False, T0, at(1)) == (
        "Successful"
    )
    assert verdict.assess_metric(judged(), result("NoData", "High"), False, T0, at(1)) == "Failed"


def test_count_counts_judgments_with_data_and_the_last_decides() -> None:
    m = judged(interval="1m", count=3)
    assert verdict.assess_metric(m, result("High", "NoData", "Pass"), False, T0, at(1)) == (
        "Running"
    )
    assert verdict.assess_metric(m, result("High", "Pass", "Pass"), False, T0, at(1)) == (
        "Successful"
    )
    assert verdict.assess_metric(m, result("Pass", "Pass", "Low"), False, T0, at(1)) == "Failed"


def test_critical_high_fails_at_once_others_wait_for_count() -> None:
    m = judged(critical=True, interval="1m", count=5)
    assert verdict.assess_metric(m, result("High!"), False, T0, at(1)) == "Failed"
    # below its critical effect size a critical metric's High waits like any other
    assert verdict.assess_metric(m, result("High"), False, T0, at(1)) == "Running"
    soft = judged(interval="1m", count=5)
    assert verdict.assess_metric(soft, result("High"), False, T0, at(1)) == "Running"


def test_judged_errors_follow_consecutive_error_limit() -> None:
    assert verdict.assess_metric(judged(), result(*["Error"] * 4), False, T0, at(1)) == "Running"
    assert verdict.assess_metric(judged(), result(*["Error"] * 5), False, T0, at(1)) == "Error"


def test_terminated_without_judgment_is_inconclusive() -> None:
    assert verdict.assess_metric(judged(), MetricResult(name="m", phase=""), True) == (
        "Inconclusive"
    )
    assert verdict.assess_metric(judged(), result("NoData"), True, T0, at(1)) == "Inconclusive"


def test_threshold_metric_with_only_errors_is_never_successful() -> None:
    m = Metric.model_validate({"name": "m", "provider": WEB, "interval": "1s"})
    r = MetricResult(name="m", phase="Running")
    for _ in range(3):
        r.measurements.append(Measurement(phase="Error", started_at=T0, finished_at=T0))
        verdict.record(r, "Error")
    assert verdict.assess_metric(m, r, terminating=True) == "Inconclusive"
    v = verdict.assess_run([m], {"m": r}, terminate=True, dry=set())
    assert v.phase == "Inconclusive"
    assert v.summary.inconclusive == 1


def test_run_score_decides_judged_metrics() -> None:
    metrics = [judged("a"), judged("b"), judged("c"), judged("d")]
    results = {
        "a": result("Pass", name="a"),
        "b": result("Pass", name="b"),
        "c": result("Pass", name="c"),
        "d": result("High", name="d"),
    }
    v = verdict.assess_run(metrics, results, False, set(), T0, at(1))
    assert v.phase == "Inconclusive"  # 75: marginal
    assert v.judgment is not None
    assert (v.judgment.outcome, v.judgment.score) == ("Marginal", 75.0)
    assert v.message == "judgment Marginal: score 75 (pass 90, marginal 75): d High: details"
    assert results["d"].phase == "Failed"  # the metric says what it saw


def test_a_soft_high_does_not_end_the_others() -> None:
    metrics = [judged("a"), judged("b", interval="1m", count=2)]
    results = {"a": result("High", name="a"), "b": result("Pass", name="b")}
    v = verdict.assess_run(metrics, results, False, set(), T0, at(1))
    assert v.phase == "Running"
    assert results["b"].phase == "Running"


def test_score_thresholds_from_the_judgment() -> None:
    metrics = [judged("a"), judged("b")]
    results = {"a": result("Pass", name="a"), "b": result("Low", name="b")}
    j = Judgment.model_validate({"scoreThresholds": {"pass": 50, "marginal": 25}})
    v = verdict.assess_run(metrics, results, False, set(), T0, at(1), j)
    assert v.phase == "Successful"
    fail = verdict.assess_run(
        metrics,
        {"a": result("Pass", name="a"), "b": result("Low", name="b")},
        False,
        set(),
        T0,
        at(1),
    )
    assert fail.phase == "Failed"
    assert fail.message.startswith("judgment Fail: score 50 (pass 90, marginal 75): b Low")


def test_critical_failure_terminates_and_fails_the_run() -> None:
    metrics = [judged("errors", critical=True), judged("lat", interval="1m", count=5)]
    results = {"errors": result("High!", name="errors"), "lat": result("Pass", name="lat")}
    v = verdict.assess_run(metrics, results, False, set(), T0, at(1))
    assert v.phase == "Failed"
    assert results["lat"].phase == "Successful"  # ended by the termination, last judgment
    assert v.judgment is not None
    assert v.judgment.score == 0
    # the run's message names the metric and what the judge saw, as a failing score's does
    assert v.message == (
        "judgment Fail: score 0 (pass 90, marginal 75); critical: errors: errors High: details"
    )


def test_a_critical_high_below_its_critical_effect_size_counts_through_the_score() -> None:
    metrics = [judged("errors", critical=True), *(judged(f"m{i}") for i in range(9))]
    results = {"errors": result("High", name="errors")}
    results.update({f"m{i}": result("Pass", name=f"m{i}") for i in range(9)})
    v = verdict.assess_run(metrics, results, False, set(), T0, at(1))
    assert v.phase == "Successful"  # 90
    assert v.judgment is not None
    assert v.judgment.score == 90


def test_all_no_data_run_fails() -> None:
    metrics = [judged("a"), judged("b")]
    results = {"a": result("NoData", name="a"), "b": result("NoData", name="b")}
    v = verdict.assess_run(metrics, results, False, set(), T0, at(6))
    assert v.phase == "Failed"
    assert v.message.startswith(
        "judgment Fail: score 0 (pass 90, marginal 75); 2 of 2 judged metrics have no data"
    )


def test_half_the_metrics_without_data_fails_the_run() -> None:
    for passing, nodata in ((1, 1), (9, 10)):
        names = [f"p{i}" for i in range(passing)] + [f"n{i}" for i in range(nodata)]
        results = {n: result("Pass" if n[0] == "p" else "NoData", name=n) for n in names}
        v = verdict.assess_run([judged(n) for n in names], results, False, set(), T0, at(6))
        assert v.phase == "Failed", (passing, nodata)
        assert v.judgment is not None
        assert v.judgment.score == 0


def test_a_critical_metric_without_data_fails_the_run() -> None:
    metrics = [judged("errors", critical=True), judged("a"), judged("b")]
    results = {n: result("Pass", name=n) for n in ("a", "b")}
    results["errors"] = result("NoData", name="errors")
    v = verdict.assess_run(metrics, results, False, set(), T0, at(6))
    assert v.phase == "Failed"
    assert "critical: errors" in v.message


def test_group_weights_are_checked_against_the_metrics_groups() -> None:
    metrics = [
        Metric.model_validate({"name": "a", "provider": PROM, "judge": {"groups": ["latency"]}}),
        judged("b"),
    ]
    ok = Judgment.model_validate({"groupWeights": {"latency": 60, "default": 40}})
    assert verdict.judgment_problems(metrics, ok) == []
    bad = Judgment.model_validate({"groupWeights": {"latncy": 60}})
    assert verdict.judgment_problems(metrics, bad) == [
        "spec.judgment.groupWeights.latncy: no judged metric is in this group (judge.groups)"
    ]
    over = Judgment.model_validate({"groupWeights": {"latency": 80, "default": 30}})
    assert verdict.judgment_problems(metrics, over) == [
        "spec.judgment.groupWeights: the weights add up to 110, more than 100"
    ]
    short = Judgment.model_validate({"groupWeights": {"latency": 50, "default": 30}})
    assert verdict.judgment_problems(metrics, short) == [
        "spec.judgment.groupWeights: every group has a weight and they add up to 80, not 100"
    ]


def test_a_cles_threshold_above_one_is_refused() -> None:
    m = Metric.model_validate(
        {
            "name": "a",
            "provider": PROM,
            "judge": {"effectSize": {"measure": "cles", "allowedIncrease": 1.2}},
        }
    )
    assert verdict.judgment_problems([m], None) == [
        "spec.metrics[0] (a).judge.effectSize.allowedIncrease: a CLES is a share between 0 "
        "and 1, not 1.2"
    ]


def test_judged_and_threshold_metrics_combine_worst_first() -> None:
    threshold = Metric.model_validate({"name": "t", "provider": WEB})
    tr = MetricResult(name="t", phase="Running")
    tr.measurements.append(Measurement(phase="Successful", started_at=T0, finished_at=T0))
    verdict.record(tr, "Successful")
    v = verdict.assess_run(
        [threshold, judged("a")], {"t": tr, "a": result("Pass", name="a")}, False, set(), T0, at(1)
    )
    assert v.phase == "Successful"


def test_waiting_for_data_is_rescheduled_without_an_interval() -> None:
    m = judged()
    results = {"m": result("NoData")}
    assert verdict.next_reconcile_time([m], results, T0, 10.0) == T0 + datetime.timedelta(
        seconds=10
    )
    assert verdict.due_metrics([m], results, T0, T0 + datetime.timedelta(seconds=10), False) == [m]


def test_a_judgment_with_no_judged_metric_is_refused() -> None:
    """spec.judgment is read only for metrics with judge: a run stored before the CRD
    refused it says so instead of ignoring it."""
    threshold = Metric.model_validate({"name": "t", "provider": WEB})
    judgment = Judgment.model_validate({"scoreThresholds": {"pass": 80}})
    assert verdict.judgment_problems([threshold], judgment) == [
        "spec.judgment is read only for metrics with judge, and no metric has one: add "
        "judge to the metrics to compare, or remove spec.judgment"
    ]
    assert verdict.judgment_problems([threshold, judged("a")], judgment) == []
