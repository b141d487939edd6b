"""Argo Rollouts' verdict rules (okra_controllers.analysis.verdict), case by case
and as properties."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from okra_controllers.analysis import verdict
from okra_controllers.api.v1alpha1.analysis import Measurement, Metric, MetricResult, Phase

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
WEB = {"web": {"url": "http://x"}}


def metric(**kw: Any) -> Metric:
    return Metric.model_validate({"name": "m", "provider": WEB, **kw})


def result(*phases: Phase, name: str = "m", finished: datetime.datetime = T0) -> MetricResult:
    r = MetricResult(name=name, phase="Running")
    for p in phases:
        r.measurements.append(Measurement(phase=p, started_at=finished, finished_at=finished))
        verdict.record(r, p)
    return r


@pytest.mark.parametrize(
    ("success", "failure", "value", "expected"),
    [
        (None, None, 1, "Successful"),
        ("result > 0.9", None, 0.95, "Successful"),
        ("result > 0.9", None, 0.5, "Failed"),
        (None, "result > 0.9", 0.5, "Successful"),
        (None, "result > 0.9", 0.95, "Failed"),
        ("result > 0.9", "result < 0.5", 0.7, "Inconclusive"),
        ("result > 0.1", "result > 0.5", 0.7, "Failed"),  # both hold: failure wins
        ("result[0] >= 0.95", None, [0.99], "Successful"),
    ],
)
def test_measurement_phase(
    success: str | None, failure: str | None, value: object, expected: str
) -> None:
    m = metric(successCondition=success, failureCondition=failure)
    assert verdict.measurement_phase(m, value)[0] == expected


def test_unevaluable_condition_is_an_error_measurement() -> None:
    phase, message = verdict.measurement_phase(metric(successCondition="result[3] > 1"), [1])
    assert phase == "Error"
    assert message


def test_effective_count() -> None:
    assert verdict.effective_count(metric()) == 1
    assert verdict.effective_count(metric(interval="10s")) is None
    assert verdict.effective_count(metric(interval="10s", count=3)) == 3
    assert verdict.effective_count(metric(count="5")) == 5


@pytest.mark.parametrize(
    ("kw", "phases", "expected"),
    [
        ({"count": 3, "interval": "1s"}, ["Successful"] * 3, "Successful"),
        ({"count": 3, "interval": "1s"}, ["Successful"] * 2, "Running"),
        ({"count": 3, "interval": "1s"}, ["Failed"], "Failed"),  # failureLimit 0
        ({"count": 5, "interval": "1s", "failureLimit": 2}, ["Failed", "Failed"], "Running"),
        ({"count": 5, "interval": "1s", "failureLimit": 2}, ["Failed"] * 3, "Failed"),
        (
            {"count": 3, "interval": "1s", "failureLimit": 2},
            ["Failed", "Failed", "Successful"],
            "Successful",
        ),
        ({"count": 3, "interval": "1s"}, ["Inconclusive"], "Inconclusive"),
        ({"count": 9, "interval": "1s"}, ["Error"] * 4, "Running"),
        ({"count": 9, "interval": "1s"}, ["Error"] * 5, "Error"),  # > consecutiveErrorLimit 4
        ({"count": 9, "interval": "1s", "consecutiveErrorLimit": 1}, ["Error", "Error"], "Error"),
        ({"count": 9, "interval": "1s"}, ["Error"] * 4 + ["Successful"] + ["Error"] * 4, "Running"),
        ({"interval": "1s"}, ["Successful"] * 50, "Running"),  # no count: runs until terminated
    ],
)
def test_assess_metric(kw: dict[str, Any], phases: list[Phase], expected: str) -> None:
    assert verdict.assess_metric(metric(**kw), result(*phases), terminating=False) == expected


def test_terminating_ends_running_metrics_successfully() -> None:
    assert verdict.assess_metric(metric(interval="1s"), result("Successful"), True) == "Successful"
    assert verdict.assess_metric(metric(interval="1s"), result(), True) == "Successful"
    assert verdict.assess_metric(metric(interval="1s"), result(), False) == "Pending"


def test_run_is_worst_of_completed_metrics_and_failure_terminates_the_rest() -> None:
    a, b = metric(name="a", count=1), metric(name="b", interval="1s")
    results = {"a": result("Failed", name="a"), "b": result("Successful", name="b")}
    v = verdict.assess_run([a, b], results, terminate=False, dry=set())
    assert v.phase == "Failed"
    assert results["b"].phase == "Successful"  # ended by the termination
    assert v.message == 'Metric "a" assessed Failed due to failed (1) > failureLimit (0)'
    assert (v.summary.count, v.summary.failed, v.summary.successful) == (2, 1, 1)


def test_dry_run_failure_never_fails_the_run() -> None:
    a, b = metric(name="a", count=1), metric(name="b", count=1)
    results = {"a": result("Failed", name="a"), "b": result("Successful", name="b")}
    v = verdict.assess_run([a, b], results, terminate=False, dry={"a"})
    assert v.phase == "Successful"
    assert v.dry_run_summary.failed == 1
    assert results["a"].message == "Metric assessed Failed due to failed (1) > failureLimit (0)"


def test_explicit_terminate() -> None:
    m = metric(interval="1s")
    v = verdict.assess_run([m], {"m": result("Successful")}, terminate=True, dry=set())
    assert (v.phase, v.message) == ("Successful", "Run Terminated")


def test_running_until_every_metric_has_started() -> None:
    a, b = metric(name="a", count=1), metric(name="b", count=1, initialDelay="1m")
    v = verdict.assess_run([a, b], {"a": result("Successful", name="a")}, False, set())
    assert v.phase == "Running"


def test_scheduling_honours_interval_initial_delay_and_error_retry() -> None:
    m = metric(interval="30s", count=3)
    assert verdict.due_metrics([m], {}, T0, T0, False) == [m]
    results = {"m": result("Successful", finished=T0)}
    assert verdict.due_metrics([m], results, T0, T0 + datetime.timedelta(seconds=29), False) == []
    assert verdict.due_metrics([m], results, T0, T0 + datetime.timedelta(seconds=30), False) == [m]
    assert verdict.next_reconcile_time([m], results, T0) == T0 + datetime.timedelta(seconds=30)
    errored = {"m": result("Error", finished=T0)}
    assert verdict.next_reconcile_time([m], errored, T0) == T0 + datetime.timedelta(seconds=10)
    delayed = metric(initialDelay="1m")
    assert verdict.due_metrics([delayed], {}, T0, T0 + datetime.timedelta(seconds=59), False) == []
    assert verdict.next_reconcile_time([delayed], {}, T0) == T0 + datetime.timedelta(minutes=1)
    done = {"m": result("Successful", "Successful", "Successful")}
    assert verdict.due_metrics([m], done, T0, T0 + datetime.timedelta(hours=1), False) == []
    assert verdict.due_metrics([m], {}, T0, T0, terminating=True) == []


phases = st.sampled_from(["Successful", "Failed", "Inconclusive", "Error"])


@given(
    st.lists(phases, max_size=30),
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(0, 5),
    st.integers(1, 10),
)
def test_metric_phase_properties(seq: list[Phase], fl: int, il: int, el: int, count: int) -> None:
    m = metric(
        interval="1s", count=count, failureLimit=fl, inconclusiveLimit=il, consecutiveErrorLimit=el
    )
    r = result(*seq)
    phase = verdict.assess_metric(m, r, terminating=False)
    assert r.count == sum(p != "Error" for p in seq)
    if r.failed > fl or r.inconclusive > il or r.consecutive_error > el:
        assert phase in ("Failed", "Inconclusive", "Error")
    elif r.count >= count:
        assert phase == "Successful"
    elif seq:
        assert phase == "Running"
    if r.consecutive_error > el:
        assert phase == "Error"  # the error rule is applied last, so it wins


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("success-rate", "success-rate", True),
        ("rate", "error-rate", True),  # unanchored, as Go's regexp.MatchString
        ("^rate$", "error-rate", False),
        (".*", "anything", True),
        ("*", "anything", False),  # Go cannot compile it: the rule matches nothing
        ("(?=e)error", "error-rate", False),  # look-ahead: RE2 refuses it
        (r"rate\z", "error-rate", True),  # RE2's end of text
    ],
)
def test_metric_name_rules_are_go_regular_expressions(
    pattern: str, name: str, matches: bool
) -> None:
    assert verdict.rule_matches(pattern, name) is matches
