"""Argo Rollouts' own analysis tests, case by case, run through okra's pure functions.

Read from argoproj/argo-rollouts (commit 9f8d111d8): `analysis/analysis_test.go`,
`utils/analysis/factory_test.go` (`TestValidateMetrics`, `TestResolveMetricArgs*`),
`utils/analysis/helpers_test.go`, `utils/evaluate/evaluate_test.go`. Each case names its Go
test; Argo's expected outcome is written as the Go test asserts it. A case either agrees, or
is listed in `DIFFERENT` with okra's outcome and why, and `test_every_difference_fails_safe`
checks that okra is never more lenient there: never Successful (or measuring on, or accepting
a spec) where Argo fails, errors, or is inconclusive.

Not ported, because the outcome is not decided by analysis logic okra has: the Kubernetes
plumbing of Argo's controller (`TestExceededTtlChecked`, `TestTtlNotGCInProgressAnalysisRun`,
`TestCompletedTimeFilled`, `TestReconcileAnalysisRunOnRunNotFound`,
`TestReconcileAnalysisRunOnOtherRunErrors`, `TestMaybeGarbageCollectAnalysisRun*`,
`TestCreateWithCollisionCounter*`, `TestTerminateRun`, `TestGetInstanceID`,
`TestNewAnalysisRunFromUnstructured`, `TestCompatibilityNewAnalysisRunFrom*`,
`TestIsSemanticallyEqual`, `TestAnalysisTemplateFiltering`, `TestGetResult`, `TestSetResult`,
`TestMetricCompleted`, `TestLastMeasurement`, `TestArrayMeasurement`), provider mocks
(`TestGetMetadataIsCalled`, `TestSecretContentReferenceProviderError`: log redaction), Rollout
arguments (`Test_extractValueFromRollout`, `TestBuildArgumentsForRolloutAnalysisRun`), the
filters of a Rollout's runs (`utils/analysis/filter_test.go`), and Go internals of the
condition language (`TestAsInt`, `TestAsFloat`, `TestIsInf`, `TestEqual`, `TestDefaultFunc`,
`TestIsNilFunc`, `TestIsNil`, `TestValueFromPointer`, `TestEvalTime*`, `TestIsNilOrEmpty`),
which test/unit/test_expr.py and the differential suite (test/expr_differential) check
against the real expr-lang instead.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from okra_controllers.analysis import verdict
from okra_controllers.analysis.args import ArgumentError, resolve_args, substitute
from okra_controllers.analysis.templates import TemplateError, flatten
from okra_controllers.analysis.validation import validate_metrics
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisTemplateSpec,
    Argument,
    DryRun,
    Measurement,
    MeasurementRetention,
    Metric,
    MetricResult,
)

NOW = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.UTC)
JOB = {"web": {"url": "http://metric.example"}}  # Argo's tests use a Job provider; okra has none
INF = float("inf")


def ago(seconds: float) -> datetime.datetime:
    return NOW - datetime.timedelta(seconds=seconds)


def metric(name: str = "success-rate", **kw: Any) -> Metric:
    return Metric.model_validate({"name": name, "provider": JOB, **kw})


def measurement(
    phase: str, finished: float | None = 60, started: float = 60, resume: float | None = None
) -> Measurement:
    return Measurement.model_validate(
        {
            "phase": phase,
            "startedAt": ago(started),
            "finishedAt": None if finished is None else ago(finished),
            "resumeAt": None if resume is None else ago(resume),
        }
    )


def result(name: str = "success-rate", phase: str = "Running", **kw: Any) -> MetricResult:
    ms = kw.pop("measurements", [])
    r = MetricResult.model_validate({"name": name, "phase": phase, **kw})
    r.measurements = list(ms)
    return r


@dataclass(frozen=True)
class Case:
    go: str
    """The Go test (and its subtest or step) the case comes from."""
    argo: Any
    """What the Go test asserts."""
    run: Callable[..., Any] = field(repr=False, compare=False)
    """okra's outcome, in the same shape."""


CASES: list[Case] = []
# loop variables of the tables below, each table its own types
_want: Any
_value: Any
_interval: str | None
_name: str


def case(go: str, argo: Any) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
    def add(fn: Callable[[], Any]) -> Callable[[], Any]:
        CASES.append(Case(go, argo, fn))
        return fn

    return add


def assess(m: Metric, r: MetricResult, terminating: bool) -> str:
    return verdict.assess_metric(m, r.model_copy(deep=True), terminating)


# --- analysis_test.go: assessMetricStatus ------------------------------------------------------

for _t, _want in ((False, "Pending"), (True, "Successful")):
    CASES.append(
        Case(
            f"TestAssessMetricStatusNoMeasurements (terminating={_t})",
            _want,
            lambda t=_t: assess(metric(), result(), t),
        )
    )

_in_flight = result(
    measurements=[measurement("Successful"), measurement("Running", finished=None, started=0)]
)
for _t in (False, True):
    CASES.append(
        Case(
            f"TestAssessMetricStatusInFlightMeasurement (terminating={_t})",
            "Running",
            lambda t=_t: assess(metric(), _in_flight, t),
        )
    )

_failed3 = result(failed=3, count=3, measurements=[measurement("Failed")])
for _limit, _t, _want in (
    (2, False, "Failed"),
    (2, True, "Failed"),
    (3, False, "Running"),
    (3, True, "Successful"),
):
    CASES.append(
        Case(
            f"TestAssessMetricStatusFailureLimit (failureLimit={_limit}, terminating={_t})",
            _want,
            lambda limit=_limit, t=_t: assess(
                metric(failureLimit=limit, interval="60s"), _failed3, t
            ),
        )
    )

_csl = result(
    failed=3, successful=4, consecutiveSuccess=3, count=7, measurements=[measurement("Failed")]
)
for _limit, _count, _t, _want in (
    (3, None, False, "Successful"),
    (3, None, True, "Successful"),
    (5, None, False, "Running"),
    (5, None, True, "Successful"),
    (5, 7, False, "Failed"),
    (5, 7, True, "Failed"),
    (3, 7, False, "Successful"),
    (3, 7, True, "Successful"),
    (3, 9, False, "Successful"),
    (3, 9, True, "Successful"),
    (5, 9, False, "Running"),
    (5, 9, True, "Successful"),
):
    CASES.append(
        Case(
            f"TestAssessMetricStatusConsecutiveSuccessLimit (failureLimit=-1, "
            f"consecutiveSuccessLimit={_limit}, count={_count}, terminating={_t})",
            _want,
            lambda limit=_limit, count=_count, t=_t: assess(
                metric(
                    failureLimit=-1,
                    consecutiveSuccessLimit=limit,
                    interval="60s",
                    count=count,
                ),
                _csl,
                t,
            ),
        )
    )

for _count, _failed, _successful, _n, _cs, _want_f, _want_t in (
    (None, 3, 4, 7, 3, "Running", "Successful"),
    (None, 5, 9, 9, 0, "Failed", "Failed"),
    (None, 3, 5, 8, 4, "Successful", "Successful"),
    (None, 5, 5, 10, 4, "Failed", "Failed"),
    (10, 4, 6, 10, 3, "Inconclusive", "Inconclusive"),
    (10, 5, 5, 10, 3, "Failed", "Failed"),
    (10, 4, 6, 10, 4, "Successful", "Successful"),
    (10, 5, 5, 10, 4, "Failed", "Failed"),
    (10, 3, 5, 8, 3, "Running", "Successful"),
    (10, 5, 3, 8, 3, "Failed", "Failed"),
    (10, 3, 5, 8, 4, "Successful", "Successful"),
    (10, 5, 4, 9, 4, "Failed", "Failed"),
):
    for _t, _want in ((False, _want_f), (True, _want_t)):
        CASES.append(
            Case(
                "TestAssessMetricStatusFailureLimitAndConsecutiveSuccessLimit "
                f"(count={_count}, failed={_failed}, count so far={_n}, "
                f"consecutiveSuccess={_cs}, terminating={_t})",
                _want,
                lambda count=_count, f=_failed, s=_successful, n=_n, cs=_cs, t=_t: assess(
                    metric(failureLimit=4, consecutiveSuccessLimit=4, interval="60s", count=count),
                    result(
                        failed=f,
                        successful=s,
                        count=n,
                        consecutiveSuccess=cs,
                        measurements=[measurement("Failed")],
                    ),
                    t,
                ),
            )
        )

_inc3 = result(inconclusive=3, count=3, measurements=[measurement("Inconclusive")])
for _limit, _t, _want in (
    (2, False, "Inconclusive"),
    (2, True, "Inconclusive"),
    (3, False, "Running"),
    (3, True, "Successful"),
):
    CASES.append(
        Case(
            f"TestAssessMetricStatusInconclusiveLimit (inconclusiveLimit={_limit}, "
            f"terminating={_t})",
            _want,
            lambda limit=_limit, t=_t: assess(
                metric(inconclusiveLimit=limit, interval="60s"), _inc3, t
            ),
        )
    )

for _errors, _t, _want in (
    (5, False, "Error"),
    (5, True, "Error"),
    (4, True, "Successful"),
    (4, False, "Running"),
):
    CASES.append(
        Case(
            f"TestAssessMetricStatusConsecutiveErrors (consecutiveError={_errors}, "
            f"terminating={_t})",
            _want,
            lambda e=_errors, t=_t: assess(
                metric(interval="60s"),
                result(consecutiveError=e, count=5, measurements=[measurement("Error")]),
                t,
            ),
        )
    )

CASES.append(
    Case(
        "TestAssessMetricStatusCountReached (10 successful of count 10)",
        "Successful",
        lambda: assess(
            metric(count=10),
            result(successful=10, count=10, measurements=[measurement("Successful")]),
            False,
        ),
    )
)
CASES.append(
    Case(
        "TestAssessMetricStatusCountReached (5 successful, 5 inconclusive)",
        "Inconclusive",
        lambda: assess(
            metric(count=10),
            result(
                successful=5, inconclusive=5, count=10, measurements=[measurement("Successful")]
            ),
            False,
        ),
    )
)

_counters: dict[str, int]
for _counters, _phase, _message in (
    ({"failed": 1}, "Failed", "failed (1) > failureLimit (0)"),
    ({"inconclusive": 1}, "Inconclusive", "inconclusive (1) > inconclusiveLimit (0)"),
    ({"consecutive_error": 5}, "Error", "consecutiveErrors (5) > consecutiveErrorLimit (4)"),
):
    _r = result(measurements=[measurement(_phase, finished=None)])
    for _k, _v in _counters.items():
        setattr(_r, _k, _v)
    CASES.append(
        Case(
            f"TestAssessMetricFailureInconclusiveOrError ({_phase})",
            (_phase, _message, _phase),
            lambda r=_r: (
                *verdict.limits_verdict(Metric.model_validate({"name": "m", "provider": JOB}), r),
                assess(metric(), r, True),
            ),
        )
    )


# --- analysis_test.go: assessRunStatus and reconcileAnalysisRun ----------------------------------


def run_verdict(
    metrics: list[Metric],
    results: list[MetricResult],
    dry: set[str] = frozenset(),  # type: ignore[assignment]
    terminate: bool = False,
) -> verdict.RunVerdict:
    by_name = {r.name: r.model_copy(deep=True) for r in results}
    return verdict.assess_run(metrics, by_name, terminate, set(dry), ago(120), NOW)


def run_outcome(*args: Any, **kw: Any) -> tuple[str, str]:
    v = run_verdict(*args, **kw)
    return v.phase, v.message


_two = [metric("latency"), metric("success-rate")]
CASES.append(
    Case(
        "TestAssessRunStatus (one metric still running)",
        ("Running", ""),
        lambda: run_outcome(
            _two, [result("latency", "Successful"), result("success-rate", "Running")]
        ),
    )
)
CASES.append(
    Case(
        "TestAssessRunStatus (worst of the completed metrics)",
        ("Failed", ""),
        lambda: run_outcome(
            _two, [result("latency", "Successful"), result("success-rate", "Failed")]
        ),
    )
)


def _update_result() -> tuple[str, str, str]:
    metrics = [metric("sleep-infinity"), metric("fail-after-30")]
    results = {
        "sleep-infinity": result(
            "sleep-infinity", measurements=[measurement("Running", finished=None)]
        ),
        "fail-after-30": result(
            "fail-after-30", count=1, failed=1, measurements=[measurement("Failed")]
        ),
    }
    v = verdict.assess_run(metrics, results, False, set(), ago(120), NOW)
    return v.phase, v.message, results["fail-after-30"].phase


CASES.append(Case("TestAssessRunStatusUpdateResult", ("Running", "", "Failed"), _update_result))


def terminating_run(status: str, dry: bool) -> tuple[list[Metric], list[MetricResult], set[str]]:
    """Argo's newTerminatingRun."""
    failed = result(
        "failed-metric", status, count=1, measurements=[measurement(status)], dryRun=dry or None
    )
    if status == "Failed":
        failed.failed = 1
    elif status == "Inconclusive":
        failed.inconclusive = 1
    elif status == "Error":
        failed.error = 1
        failed.measurements = [measurement("Error", finished=120, started=120)]
    forever = result(
        "run-forever", measurements=[measurement("Running", finished=None)], dryRun=dry or None
    )
    names = {"run-forever", "failed-metric"} if dry else set()
    return [metric("run-forever"), metric("failed-metric")], [forever, failed], names


def _phase_fail(dry: bool, provider_message: str | None = None) -> tuple[Any, ...]:
    metrics, results, names = terminating_run("Failed", dry)
    results[0].phase = "Successful"
    if provider_message:
        results[1].message = provider_message
    v = run_verdict(metrics, results, names)
    return v.phase, v.message, v.dry_run_summary.model_dump()


def _summary(count: int = 0, successful: int = 0, failed: int = 0) -> dict[str, int]:
    return {
        "count": count,
        "successful": successful,
        "failed": failed,
        "inconclusive": 0,
        "error": 0,
    }


_FAILED_MSG = 'Metric "failed-metric" assessed Failed due to failed (1) > failureLimit (0)'
CASES.append(
    Case(
        "TestAssessRunStatusErrorMessageAnalysisPhaseFail",
        ("Failed", _FAILED_MSG, _summary()),
        lambda: _phase_fail(False),
    )
)
CASES.append(
    Case(
        "TestAssessRunStatusErrorMessageAnalysisPhaseFailInDryRunMode",
        ("Successful", "", _summary(2, 1, 1)),
        lambda: _phase_fail(True),
    )
)
CASES.append(
    Case(
        "TestAssessRunStatusErrorMessageFromProvider",
        ("Failed", _FAILED_MSG + ': "Error Message: Provider Error"', _summary()),
        lambda: _phase_fail(False, "Provider Error"),
    )
)
CASES.append(
    Case(
        "TestAssessRunStatusErrorMessageFromProviderInDryRunMode",
        ("Successful", "", _summary(2, 1, 1)),
        lambda: _phase_fail(True, "Provider Error"),
    )
)


def _multiple_failures(dry: bool) -> tuple[Any, ...]:
    metrics, results, names = terminating_run("Failed", dry)
    results[0].phase = "Failed"
    results[0].failed = 1
    v = run_verdict(metrics, results, names)
    return v.phase, v.message, v.dry_run_summary.model_dump()


_FOREVER_MSG = 'Metric "run-forever" assessed Failed due to failed (1) > failureLimit (0)'
CASES.append(
    Case(
        "TestAssessRunStatusMultipleFailures",
        ("Failed", _FOREVER_MSG, _summary()),
        lambda: _multiple_failures(False),
    )
)
CASES.append(
    Case(
        "TestAssessRunStatusMultipleFailuresInDryRunMode",
        ("Successful", "", _summary(2, 0, 2)),
        lambda: _multiple_failures(True),
    )
)
CASES.append(
    Case(
        "TestAssessRunStatusWorstMessageInReconcileAnalysisRun",
        ("Failed", _FOREVER_MSG),
        lambda: _multiple_failures(False)[:2],
    )
)


def _worst_message_dry() -> tuple[Any, ...]:
    metrics, results, names = terminating_run("Failed", True)
    results[0].phase = "Failed"
    results[0].failed = 1
    by_name = {r.name: r for r in results}
    v = verdict.assess_run(metrics, by_name, False, names, ago(120), NOW)
    return (
        v.phase,
        v.message,
        v.dry_run_summary.model_dump(),
        by_name["run-forever"].message,
        by_name["failed-metric"].message,
    )


_DRY_MSG = "Metric assessed Failed due to failed (1) > failureLimit (0)"
CASES.append(
    Case(
        "TestAssessRunStatusWorstMessageInReconcileAnalysisRunInDryRunMode",
        ("Successful", "", _summary(2, 0, 2), _DRY_MSG, _DRY_MSG),
        _worst_message_dry,
    )
)
CASES.append(
    Case(
        "TestAssessRunStatusWithOnlyDryRunMetrics",
        "Successful",
        lambda: (
            run_verdict(
                [metric("success-metric")],
                [
                    result(
                        "success-metric",
                        "Successful",
                        count=1,
                        successful=1,
                        measurements=[measurement("Successful")],
                    )
                ],
                {"success-metric"},
            ).phase
        ),
    )
)
CASES.append(
    Case(
        # the in-flight measurement of run-forever resumed Successful, as the Go test's mock
        "TestAssessRunStatusWithMixedMetrics",
        (
            "Inconclusive",
            'Metric "run-forever" assessed Inconclusive due to inconclusive (1) > '
            "inconclusiveLimit (0)",
        ),
        lambda: run_outcome(
            [metric("run-forever"), metric("success-metric")],
            [
                result(
                    "run-forever",
                    inconclusive=1,
                    count=1,
                    successful=1,
                    measurements=[measurement("Successful")],
                ),
                result(
                    "success-metric",
                    "Successful",
                    count=1,
                    failed=1,
                    measurements=[measurement("Failed")],
                ),
            ],
            {"success-metric"},
        ),
    )
)
for _dry in (False, True):
    CASES.append(
        Case(
            f"TestTerminateAnalysisRun{'InDryRunMode' if _dry else ''}",
            ("Successful", "Run Terminated", _summary(1) if _dry else _summary()),
            lambda dry=_dry: (lambda v: (v.phase, v.message, v.dry_run_summary.model_dump()))(
                run_verdict(
                    [
                        metric(
                            initialDelay="20s",
                            interval="20s",
                            successCondition="result[0] > 0.90",
                        )
                    ],
                    [],
                    {"success-rate"} if dry else set(),
                    terminate=True,
                )
            ),
        )
    )
for _status in ("Failed", "Inconclusive", "Error"):
    CASES.append(
        Case(
            f"TestReconcileAnalysisRunTerminateSiblingAfterFail ({_status}): run phase",
            _status,
            lambda s=_status: run_verdict(*terminating_run(s, False)[:2]).phase,
        )
    )
    CASES.append(
        Case(
            f"TestReconcileAnalysisRunTerminateSiblingAfterFail ({_status}): the sibling",
            "Inconclusive",
            lambda s=_status: (
                lambda metrics, results: (
                    verdict.assess_run(metrics, results, False, set(), ago(120), NOW)
                    and results["run-forever"].phase
                )
            )(
                terminating_run(s, False)[0],
                {r.name: r for r in terminating_run(s, False)[1]},
            ),
        )
    )

for _count, _interval, _want in ((None, "60s", "Running"), (1, "60s", "Successful")):
    CASES.append(
        Case(
            f"TestReconcileAnalysisRunInitial (count={_count}, interval={_interval})",
            (_want, _want),
            lambda count=_count, interval=_interval: (
                lambda results: (
                    verdict.assess_run(
                        [metric(interval=interval, count=count)],
                        results,
                        False,
                        set(),
                        ago(60),
                        NOW,
                    ).phase,
                    results["success-rate"].phase,
                )
            )(
                {
                    "success-rate": result(
                        count=1, successful=1, measurements=[measurement("Successful")]
                    )
                }
            ),
        )
    )
CASES.append(
    Case(
        "TestReconcileAnalysisRunInitial (count=0, no interval)",
        "Successful",
        lambda: (
            run_verdict(
                [metric(count=0)],
                [result(count=1, successful=1, measurements=[measurement("Successful")])],
            ).phase
        ),
    )
)
CASES.append(
    Case(
        # the in-flight measurement resumed Successful, as the Go test's mock
        "TestReconcileAnalysisRunResumeInProgress",
        "Successful",
        lambda: (
            run_verdict(
                [metric("test")],
                [result("test", count=1, successful=1, measurements=[measurement("Successful")])],
            ).phase
        ),
    )
)


def _record_error() -> tuple[int, int, int]:
    r = result("test", consecutiveError=4, count=4, error=4)
    verdict.record(r, "Error")
    return r.consecutive_error, r.error, r.count


CASES.append(Case("TestRunMeasurementsResetConsecutiveErrorCounter", (5, 5, 4), _record_error))
for _rule, _name, _want in (("metric2", "metric2", 2), ("metric2", "metric1", 10)):
    CASES.append(
        Case(
            f"TestTrimMeasurementHistory (rule {_rule!r}, limit 2: {_name})",
            _want,
            lambda rule=_rule, name=_name: verdict.retention_limit(
                name, [MeasurementRetention(metric_name=rule, limit=2)]
            ),
        )
    )


# --- analysis_test.go: generateMetricTasks, calculateNextReconcileTime ------------------------


def due(
    metrics: list[Metric],
    results: list[MetricResult],
    started: datetime.datetime = NOW,
    terminate: bool = False,
) -> list[str]:
    by_name = {r.name: r for r in results}
    terminating = verdict.is_terminating(terminate, by_name.values(), set())
    return [m.name for m in verdict.due_metrics(metrics, by_name, started, NOW, terminating)]


for _finished, _want in ((50, []), (61, ["success-rate"])):
    CASES.append(
        Case(
            f"TestGenerateMetricTasksInterval (last finished {_finished}s ago)",
            _want,
            lambda f=_finished: due(
                [metric(interval="60s")],
                [result(measurements=[measurement("Successful", finished=f, started=f)])],
            ),
        )
    )
CASES.append(
    Case(
        "TestGenerateMetricTasksFailing (a metric already Failed)",
        [],
        lambda: due([metric(), metric("latency")], [result("latency", "Failed")]),
    )
)
CASES.append(
    Case(
        "TestGenerateMetricTasksFailing (no results)",
        ["success-rate", "latency"],
        lambda: due([metric(), metric("latency")], []),
    )
)
CASES.append(
    Case(
        "TestGenerateMetricTasksNoIntervalOrCount (count reached)",
        [],
        lambda: due(
            [metric()], [result(count=1, measurements=[measurement("Successful", finished=50)])]
        ),
    )
)
CASES.append(
    Case(
        "TestGenerateMetricTasksNoIntervalOrCount (never measured)",
        ["success-rate"],
        lambda: due([metric()], [result()]),
    )
)
CASES.append(
    Case(
        "TestGenerateMetricTasksIncomplete",
        ["success-rate"],
        lambda: due([metric()], [result(measurements=[measurement("Successful", finished=None)])]),
    )
)
for _started, _want in ((10, []), (20, ["success-rate"])):
    CASES.append(
        Case(
            f"TestGenerateMetricTasksHonorInitialDelay (started {_started}s ago)",
            _want,
            lambda s=_started: due([metric(initialDelay="20s")], [], ago(s)),
        )
    )
CASES.append(
    Case(
        "TestGenerateMetricTasksHonorInitialDelay (no startedAt: the run starts now)",
        [],
        lambda: due([metric(initialDelay="20s")], []),
    )
)
CASES.append(
    Case(
        "TestGenerateMetricTasksHonorResumeAt",
        ["success-rate2"],
        lambda: due(
            [metric(), metric("success-rate2")],
            [
                result(measurements=[measurement("Successful", finished=None, resume=-10)]),
                result(
                    "success-rate2",
                    measurements=[measurement("Successful", finished=None, resume=10)],
                ),
            ],
        ),
    )
)
for _interval in (None, "5m"):
    CASES.append(
        Case(
            f"TestGenerateMetricTasksError (interval={_interval})",
            ["success-rate"],
            lambda i=_interval: due(
                [metric(interval=i)],
                [result(error=1, measurements=[measurement("Error", finished=120, started=120)])],
            ),
        )
    )


def next_time(
    metrics: list[Metric], results: list[MetricResult], started: datetime.datetime = NOW
) -> datetime.timedelta | None:
    t = verdict.next_reconcile_time(metrics, {r.name: r for r in results}, started)
    return None if t is None else t - NOW


_S = datetime.timedelta(seconds=1)
CASES.append(
    Case(
        "TestCalculateNextReconcileTimeInterval (requeue at the interval)",
        30 * _S,
        lambda: next_time(
            [metric(interval="60s")],
            [result(measurements=[measurement("Successful", finished=30, started=30)])],
        ),
    )
)
CASES.append(
    Case(
        "TestCalculateNextReconcileTimeInterval (in-flight measurement: no requeue)",
        None,
        lambda: next_time(
            [metric(interval="60s")],
            [result(measurements=[measurement("Running", finished=None, started=30)])],
            ago(30),
        ),
    )
)
CASES.append(
    Case(
        "TestCalculateNextReconcileTimeInterval (completed metric: no requeue)",
        None,
        lambda: next_time(
            [metric(interval="60s")],
            [result(phase="Successful", measurements=[measurement("Successful", 120, 120)])],
        ),
    )
)
CASES.append(
    Case(
        "TestCalculateNextReconcileTimeInitialDelay",
        10 * _S,
        lambda: next_time(
            [metric(interval="60s"), metric("start-delay", interval="60s", initialDelay="40s")],
            [result(measurements=[measurement("Successful", finished=30, started=30)])],
            ago(30),
        ),
    )
)
CASES.append(
    Case(
        "TestCalculateNextReconcileTimeNoInterval",
        None,
        lambda: next_time(
            [metric(count=1)],
            [result(phase="Successful", measurements=[measurement("Successful", 0, 0)])],
        ),
    )
)
CASES.append(
    Case(
        "TestCalculateNextReconcileEarliestMetric",
        10 * _S,
        lambda: next_time(
            [metric(interval="60s"), metric("latency", interval="60s")],
            [
                result(measurements=[measurement("Successful", finished=30, started=30)]),
                result("latency", measurements=[measurement("Successful", 50, 50)]),
            ],
        ),
    )
)
CASES.append(
    Case(
        "TestCalculateNextReconcileHonorResumeAt",
        10 * _S,
        lambda: next_time(
            [metric(interval="60s")],
            [result(measurements=[measurement("Successful", None, 30, resume=-10)])],
        ),
    )
)
for _interval in (None, "5m"):
    CASES.append(
        Case(
            f"TestCalculateNextReconcileUponError (interval={_interval})",
            10 * _S,
            lambda i=_interval: next_time(
                [metric(interval=i)], [result(error=1, measurements=[measurement("Error", 0, 0)])]
            ),
        )
    )


# --- analysis_test.go / factory_test.go: arguments, validation --------------------------------


def spec_error(
    metrics: list[dict[str, Any]],
    dry_run: list[str] = (),  # type: ignore[assignment]
    retention: list[str] = (),  # type: ignore[assignment]
) -> str | None:
    """okra's `Analysis spec invalid` message (None: the run starts), as the controller
    forms it."""
    ms = [Metric.model_validate(m) for m in metrics]
    problems = validate_metrics(ms) + verdict.rule_problems(
        ms,
        [DryRun(metric_name=d) for d in dry_run],
        [MeasurementRetention(metric_name=r, limit=1) for r in retention],
    )
    return "; ".join(problems) or None


def sub_error(m: dict[str, Any], values: dict[str, str]) -> str | None:
    try:
        substitute(Metric.model_validate(m), values)
    except ArgumentError as e:
        return str(e)
    return None


PROM = {"prometheus": {"query": "up"}}
CASES.append(
    Case(
        "TestResolveMetricArgsUnableToSubstitute",
        "failed to resolve {{args.metric-name}}",
        lambda: sub_error(
            {
                "name": "rate",
                "successCondition": "{{args.does-not-exist}}",
                "provider": {"prometheus": {"query": "{{args.metric-name}}"}},
            },
            {},
        ),
    )
)
CASES.append(
    Case(
        "TestResolveMetricArgs",
        ("result > success-rate", "result < success-rate2"),
        lambda: tuple(
            substitute(
                Metric.model_validate({"name": n, "successCondition": c, "provider": PROM}),
                {"metric-name": "success-rate", "metric-name2": "success-rate2"},
            ).success_condition
            for n, c in (
                ("metric-name", "result > {{args.metric-name}}"),
                ("metric-name2", "result < {{args.metric-name2}}"),
            )
        ),
    )
)
CASES.append(
    Case(
        "TestResolveMetricArgsWithQuotes",
        'foo "bar" baz',
        lambda: (
            substitute(
                Metric.model_validate(
                    {"name": "rate", "successCondition": "{{args.rate}}", "provider": PROM}
                ),
                {"rate": 'foo "bar" baz'},
            ).success_condition
        ),
    )
)


def _secret(args: list[dict[str, Any]], key_present: bool = True) -> Any:
    """resolve_args with the Secret `web-metric-secret` (apikey: 12345) as the API server
    would answer it."""

    async def read(namespace: str, name: str) -> dict[str, str]:
        if name != "web-metric-secret":
            raise LookupError(f'secrets "{name}" not found')
        return {"apikey": "12345"}

    try:
        return asyncio.run(
            resolve_args([Argument.model_validate(a) for a in args], "default", read, None)
        )
    except ArgumentError as e:
        return str(e)


def _secret_ref(name: str, key: str) -> dict[str, Any]:
    return {"name": "secret", "valueFrom": {"secretKeyRef": {"name": name, "key": key}}}


CASES.append(
    Case(
        "TestSecretResolution",
        ({"secret": "12345"}, ["12345"]),
        lambda: _secret([_secret_ref("web-metric-secret", "apikey")]),
    )
)
CASES.append(
    Case(
        "TestSecretContentReferenceAndMultipleArgResolutionSuccess",
        ({"secret": "12345", "metric-name": "success-rate"}, ["12345"]),
        lambda: _secret(
            [
                _secret_ref("web-metric-secret", "apikey"),
                {"name": "metric-name", "value": "success-rate"},
            ]
        ),
    )
)
CASES.append(
    Case(
        "TestSecretNotFound",
        'secrets "secret-does-not-exist" not found',
        lambda: _secret([_secret_ref("secret-does-not-exist", "apikey")]),
    )
)
CASES.append(
    Case(
        "TestKeyNotInSecret",
        "key 'key-name' does not exist in secret 'web-metric-secret'",
        lambda: _secret([_secret_ref("web-metric-secret", "key-name")]),
    )
)

VALIDATE: list[tuple[str, list[dict[str, Any]], str | None]] = [
    (
        "count >= failureLimit + consecutiveSuccessLimit",
        [{"name": "success-rate", "count": 1, "failureLimit": 2, "provider": PROM}],
        "metrics[0]: count (1) must be >= failureLimit + consecutiveSuccessLimit (2 + 0) "
        "if both >= 0",
    ),
    (
        "count >= failureLimit + consecutiveSuccessLimit (count 0)",
        [{"name": "success-rate", "count": 0, "failureLimit": 2, "provider": PROM}],
        None,
    ),
    (
        "count must be >= inconclusiveLimit",
        [{"name": "success-rate", "count": 1, "inconclusiveLimit": 2, "provider": PROM}],
        "metrics[0]: count must be >= inconclusiveLimit",
    ),
    (
        "count must be >= inconclusiveLimit (count 0)",
        [{"name": "success-rate", "count": 0, "inconclusiveLimit": 2, "provider": PROM}],
        None,
    ),
    (
        "Validate metric",
        [
            {
                "name": "success-rate",
                "count": 2,
                "interval": "60s",
                "failureLimit": 2,
                "provider": PROM,
            }
        ],
        None,
    ),
    (
        "Ensure valid internal string",
        [
            {
                "name": "success-rate",
                "count": 2,
                "interval": "60s-typo",
                "failureLimit": 2,
                "provider": PROM,
            }
        ],
        'metrics[0]: invalid interval string: time: unknown unit "s-typo" in duration "60s-typo"',
    ),
    (
        "Ensure valid initialDelay string",
        [
            {
                "name": "success-rate",
                "count": 2,
                "interval": "60s",
                "initialDelay": "60s-typo",
                "failureLimit": 2,
                "provider": PROM,
            }
        ],
        'metrics[0]: invalid startDelay string: time: unknown unit "s-typo" in duration "60s-typo"',
    ),
    ("Ensure metric provider listed", [], "no metrics specified"),
    (
        "Ensure interval set when count > 1",
        [{"name": "success-rate", "count": 2, "provider": PROM}],
        "metrics[0]: interval must be specified when count > 1",
    ),
    (
        "Ensure no duplicate metric names",
        [{"name": "success-rate", "provider": PROM}, {"name": "success-rate", "provider": PROM}],
        "metrics[1]: duplicate name 'success-rate'",
    ),
    (
        "Ensure failureLimit >= -1",
        [{"name": "success-rate", "failureLimit": -2, "provider": PROM}],
        "metrics[0]: failureLimit must be >= 0, or -1 to be disabled",
    ),
    (
        "Ensure inconclusiveLimit >= 0",
        [{"name": "success-rate", "inconclusiveLimit": -1, "provider": PROM}],
        "metrics[0]: inconclusiveLimit must be >= 0",
    ),
    (
        "Ensure consecutiveErrorLimit >= 0",
        [{"name": "success-rate", "consecutiveErrorLimit": -1, "provider": PROM}],
        "metrics[0]: consecutiveErrorLimit must be >= 0",
    ),
    (
        "Ensure metric has provider",
        [{"name": "success-rate", "count": 1, "provider": {}}],
        "metrics[0]: no provider specified",
    ),
    (
        "Ensure metric does not have more than 1 provider",
        [
            {
                "name": "success-rate",
                "provider": {
                    **PROM,
                    **JOB,
                    "datadog": {"query": "q"},
                    "cloudWatch": {"metricDataQueries": []},
                },
            }
        ],
        "metrics[0]: multiple providers specified",
    ),
    (
        "Ensure consecutiveSuccessLimit >= 0",
        [{"name": "success-rate", "consecutiveSuccessLimit": -1, "provider": PROM}],
        "metrics[0]: consecutiveSuccessLimit must be >= 0",
    ),
    (
        "Ensure consecutiveSuccessLimit and failureLimit are not both disabled",
        [
            {
                "name": "success-rate",
                "consecutiveSuccessLimit": 0,
                "failureLimit": -1,
                "provider": PROM,
            }
        ],
        "metrics[0]: failureLimit and consecutiveSuccessLimit cannot both be disabled",
    ),
]
for _name, _metrics, _want in VALIDATE:
    CASES.append(
        Case(
            f"TestValidateMetrics/{_name}",
            _want,
            lambda ms=_metrics: spec_error(ms),
        )
    )
CASES.append(
    Case(
        "TestReconcileAnalysisRunInvalid (a metric without provider)",
        "metrics[0]: no provider specified",
        lambda: spec_error([{"name": "success-rate", "provider": {}}]),
    )
)
CASES.append(
    Case(
        "TestGenerateMetricTasksHonorInitialDelay (invalid initialDelay: never measured)",
        "never measured",
        lambda: (
            "never measured"
            if spec_error([{"name": "m", "initialDelay": "invalid-start-delay", "provider": PROM}])
            else "measured"
        ),
    )
)
_TERMINATED = {
    "name": "success-rate",
    "initialDelay": "20s",
    "interval": "20s",
    "successCondition": "result[0] > 0.90",
    "provider": JOB,
}
CASES.append(
    Case(
        "TestInvalidDryRunConfigThrowsError",
        "dryRun[0]: Rule didn't match any metric name(s)",
        lambda: spec_error([_TERMINATED], dry_run=["error-rate"]),
    )
)
CASES.append(
    Case(
        "TestInvalidMeasurementsRetentionConfigThrowsError",
        "measurementRetention[0]: Rule didn't match any metric name(s)",
        lambda: spec_error([_TERMINATED], retention=["error-rate"]),
    )
)


# --- helpers_test.go -----------------------------------------------------------------------

_ORDERED = ("Successful", "Inconclusive", "Error", "Failed")
for _i, _a in enumerate(_ORDERED):
    for _j, _b in enumerate(_ORDERED):
        CASES.append(
            Case(
                f"TestIsWorst ({_a}, {_b})",
                _j > _i,
                lambda a=_a, b=_b: verdict.is_worse(a, b),
            )
        )
for _a, _b in (("Successful", "Failed"), ("Failed", "Successful")):
    CASES.append(
        Case(
            f"TestWorst ({_a}, {_b})",
            "Failed",
            lambda a=_a, b=_b: b if verdict.is_worse(a, b) else a,
        )
    )


def terminating(
    phases: dict[str, str], dry: frozenset[str] = frozenset(), terminate: bool = False
) -> bool:
    return verdict.is_terminating(terminate, [result(n, p) for n, p in phases.items()], set(dry))


_RUNNING4 = {
    "other-metric": "Running",
    "success-rate": "Running",
    "dry-run-metric": "Running",
    "yet-another-metric": "Running",
}
for _what, _changes, _want in (
    ("nothing failing", {}, False),
    ("a dry-run metric errors", {"dry-run-metric": "Error"}, False),
    ("a metric after the dry-run one errors", {"yet-another-metric": "Error"}, True),
    ("a metric errors", {"success-rate": "Error"}, True),
    ("a metric fails", {"success-rate": "Failed"}, True),
    ("a metric is inconclusive", {"success-rate": "Inconclusive"}, True),
):
    CASES.append(
        Case(
            f"TestIsFastFailTerminating ({_what})",
            _want,
            lambda c=_changes: terminating({**_RUNNING4, **c}, frozenset({"dry-run-metric"})),
        )
    )
CASES.append(Case("TestIsFastFailTerminating (no results)", False, lambda: terminating({})))
CASES.append(
    Case(
        "TestIsTerminating (running)",
        False,
        lambda: terminating({"other-metric": "Running", "success-rate": "Running"}),
    )
)
CASES.append(
    Case(
        "TestIsTerminating (terminate)",
        True,
        lambda: terminating({"other-metric": "Running"}, terminate=True),
    )
)
CASES.append(
    Case(
        "TestIsTerminating (a metric errors)",
        True,
        lambda: terminating({"other-metric": "Running", "success-rate": "Error"}),
    )
)


def _dry_names(rule: str) -> Any:
    metrics = [metric("success-rate"), metric("error-rate")]
    problems = verdict.rule_problems(metrics, [DryRun(metric_name=rule)], None)
    return (
        problems[0]
        if problems
        else sorted(verdict.dry_run_names(metrics, [DryRun(metric_name=rule)]))
    )


def _retention_names(rule: str) -> Any:
    metrics = [metric("success-rate"), metric("error-rate")]
    rules = [MeasurementRetention(metric_name=rule, limit=5)]
    problems = verdict.rule_problems(metrics, None, rules)
    return (
        problems[0]
        if problems
        else sorted(m.name for m in metrics if verdict.retention_limit(m.name, rules) == 5)
    )


for _fn, _go, _field in (
    (_dry_names, "TestGetDryRunMetrics", "dryRun"),
    (_retention_names, "TestGetMeasurementRetentionMetrics", "measurementRetention"),
):
    CASES.append(Case(f"{_go} (one name)", ["success-rate"], lambda f=_fn: f("^success-rate$")))
    CASES.append(Case(f"{_go} (.*)", ["error-rate", "success-rate"], lambda f=_fn: f(".*")))


def _dry_no_match() -> Any:
    metrics = [metric("success-rate")]
    return verdict.rule_problems(metrics, [DryRun(metric_name="error-rate")], None)[0]


def _retention_no_match() -> Any:
    metrics = [metric("success-rate")]
    rules = [MeasurementRetention(metric_name="error-rate", limit=5)]
    return verdict.rule_problems(metrics, None, rules)[0]


CASES.append(
    Case(
        "TestGetDryRunMetrics (no match)",
        "dryRun[0]: Rule didn't match any metric name(s)",
        _dry_no_match,
    )
)
CASES.append(
    Case(
        "TestGetMeasurementRetentionMetrics (no match)",
        "measurementRetention[0]: Rule didn't match any metric name(s)",
        _retention_no_match,
    )
)


def spec(
    metrics: tuple[str, ...] = (),
    args: dict[str, str | None] | None = None,
    dry: tuple[str, ...] = (),
    keep: tuple[str, ...] = (),
) -> AnalysisTemplateSpec:
    return AnalysisTemplateSpec.model_construct(
        metrics=[
            Metric.model_validate({"name": n, "successCondition": "true", "provider": PROM})
            for n in metrics
        ],
        args=[Argument(name=k, value=v) for k, v in (args or {}).items()] or None,
        dry_run=[DryRun(metric_name=d) for d in dry] or None,
        measurement_retention=[MeasurementRetention(metric_name=k, limit=1) for k in keep] or None,
        judgment=None,
    )


def flat(specs: list[AnalysisTemplateSpec], args: list[Argument] | None = None) -> Any:
    try:
        run = flatten([(f"t{i}", s) for i, s in enumerate(specs)], args or ())
    except TemplateError as e:
        return str(e)
    return (
        [m.name for m in run.metrics],
        [(a.name, a.value, a.value_from is not None) for a in run.args or ()],
    )


CASES += [
    Case(
        "TestFlattenTemplates/No changes on single template",
        (["foo"], [("test", "true", False)]),
        lambda: flat([spec(("foo",), {"test": "true"})]),
    ),
    Case(
        "TestFlattenTemplates/Merge multiple metrics successfully",
        (["foo", "bar"], []),
        lambda: flat(
            [
                spec(("foo",), dry=("foo",), keep=("foo",)),
                spec(("bar",), dry=("bar",), keep=("bar",)),
            ]
        ),
    ),
    Case(
        "TestFlattenTemplates/Merge analysis templates and cluster templates successfully",
        (["foo", "bar"], []),
        lambda: flat(
            [
                spec(("foo",), dry=("foo",), keep=("foo",)),
                spec(("bar",), dry=("bar",), keep=("bar",)),
            ]
        ),
    ),
    Case(
        "TestFlattenTemplates/Merge fail with name collision",
        "two metrics have the same name 'foo'",
        lambda: flat([spec(("foo",)), spec(("foo",))]),
    ),
    Case(
        "TestFlattenTemplates/Merge fail with dry-run name collision",
        "two Dry-Run metric rules have the same name 'foo'",
        lambda: flat([spec(("foo",), dry=("foo",)), spec(("bar",), dry=("foo",))]),
    ),
    Case(
        "TestFlattenTemplates/Merge fail with measurement retention metrics name collision",
        "two Measurement Retention metric rules have the same name 'foo'",
        lambda: flat([spec(("foo",), keep=("foo",)), spec(("bar",), keep=("foo",))]),
    ),
    Case(
        "TestFlattenTemplates/Merge multiple args successfully",
        (["a", "b"], [("foo", "true", False), ("bar", "true", False)]),
        lambda: flat([spec(("a",), {"foo": "true"}), spec(("b",), {"bar": "true"})]),
    ),
    Case(
        "TestFlattenTemplates/Merge args with same name but only one has value",
        (["a", "b"], [("foo", "true", False)]),
        lambda: flat([spec(("a",), {"foo": "true"}), spec(("b",), {"foo": None})]),
    ),
    Case(
        "TestFlattenTemplates/Error: merge args with same name and both have values",
        "Argument `foo` specified multiple times with different values: 'true', 'false'",
        lambda: flat([spec(args={"foo": "true"}), spec(args={"foo": "false"})]),
    ),
]

_SECRET_ARG = Argument.model_validate(
    {"name": "my-secret", "valueFrom": {"secretKeyRef": {"name": "name", "key": "key"}}}
)
CASES += [
    Case(
        "TestNewAnalysisRunFromTemplates (args given by the caller)",
        (["success-rate"], [("my-arg", "my-val", False), ("my-secret", None, True)]),
        lambda: flat(
            [spec(("success-rate",), {"my-arg": None, "my-secret": None})],
            [Argument(name="my-arg", value="my-val"), _SECRET_ARG],
        ),
    ),
    Case(
        "TestNewAnalysisRunFromTemplates (an argument left unresolved)",
        "args.unresolved was not resolved",
        lambda: flat(
            [spec(("success-rate",), {"my-arg": None, "my-secret": None, "unresolved": None})],
            [Argument(name="my-arg", value="my-val"), _SECRET_ARG],
        ),
    ),
    Case(
        "TestNewAnalysisRunFromTemplates (two templates, one metric name)",
        "two metrics have the same name 'success-rate'",
        lambda: flat(
            [spec(("success-rate",), {"my-arg": None}), spec(("success-rate",))],
            [Argument(name="my-arg", value="my-val")],
        ),
    ),
    Case("TestMergeArgs (nil list)", (["m"], []), lambda: flat([spec(("m",))])),
    Case(
        "TestMergeArgs (use defaults)",
        (["m"], [("foo", "bar", False), ("my-secret", None, True)]),
        lambda: flat(
            [
                AnalysisTemplateSpec.model_construct(
                    metrics=spec(("m",)).metrics,
                    args=[Argument(name="foo", value="bar"), _SECRET_ARG],
                    dry_run=None,
                    measurement_retention=None,
                    judgment=None,
                )
            ]
        ),
    ),
    Case(
        "TestMergeArgs (overwrite defaults)",
        (["m"], [("foo", "overwrite", False)]),
        lambda: flat([spec(("m",), {"foo": "bar"})], [Argument(name="foo", value="overwrite")]),
    ),
    Case(
        "TestMergeArgs (not resolved)",
        "args.foo was not resolved",
        lambda: flat([spec(("m",), {"foo": None})], [Argument(name="foo")]),
    ),
    Case(
        "TestMergeArgs (extra arg)",
        (["m"], [("foo", "my-value", False)]),
        lambda: flat(
            [spec(("m",), {"foo": None})],
            [Argument(name="foo", value="my-value"), Argument(name="extra-arg", value="x")],
        ),
    ),
]


# --- evaluate_test.go ----------------------------------------------------------------------


def phase_of(success: str, failure: str, value: Any) -> tuple[str, str]:
    m = metric(successCondition=success or None, failureCondition=failure or None)
    phase, message = verdict.measurement_phase(m, value)
    return phase, message or ""


for _go, _s, _f, _want in (
    ("TestEvaluateResultWithSuccess", "true", "false", "Successful"),
    ("TestEvaluateResultWithFailure", "true", "true", "Failed"),
    ("TestEvaluateResultInconclusive", "false", "false", "Inconclusive"),
    ("TestEvaluateResultNoSuccessConditionAndNotFailing", "", "false", "Successful"),
    ("TestEvaluateResultNoFailureConditionAndNotSuccessful", "false", "", "Failed"),
    ("TestEvaluateResultNoFailureConditionAndNoSuccessCondition", "", "", "Successful"),
    ("TestEvaluateResultWithErrorOnSuccessCondition", "a == true", "true", "Error"),
    ("TestEvaluateResultWithErrorOnFailureCondition", "true", "a == true", "Error"),
):
    CASES.append(Case(_go, _want, lambda s=_s, f=_f: phase_of(s, f, True)[0]))

for _go, _value, _field, _cond, _words in (
    (
        "TestEvaluateResultErrorMessageWithNilResult",
        None,
        "successCondition",
        "result[0] >= 0.95",
        "metric result is nil or empty",
    ),
    (
        "TestEvaluateResultErrorMessageWithEmptySlice",
        [],
        "successCondition",
        "result[0] >= 0.95",
        "metric result is nil or empty",
    ),
    (
        "TestEvaluateResultErrorMessageWithInvalidExpression",
        True,
        "successCondition",
        "a == true",
        "could not evaluate successCondition",
    ),
    (
        "TestEvaluateResultErrorMessageOnFailureCondition",
        True,
        "failureCondition",
        "invalidVar == true",
        "could not evaluate failureCondition",
    ),
):
    CASES.append(
        Case(
            _go,
            ("Error", True, True),
            lambda v=_value, f=_field, c=_cond, w=_words: (
                lambda out: (out[0], w in out[1], c in out[1])
            )(
                phase_of(
                    c if f == "successCondition" else "true",
                    c if f == "failureCondition" else "",
                    v,
                )
            ),
        )
    )


def cond(source: str, value: Any) -> Any:
    """The condition's value, or the words of its error."""
    from okra_controllers.analysis.expr import ExprError, evaluate_condition

    try:
        return evaluate_condition(source, value)
    except ExprError as e:
        return f"error: {e}"


for _go, _source, _value, _want in (
    ("TestEvaluateConditionWithSuccess", "result == true", True, True),
    ("TestEvaluateConditionWithFailure", "result == false", True, False),
    (
        "TestEvaluateArray",
        "all(result.service_apdex.values.values, {# > 1})",
        {"service_apdex": {"label": None, "values": {"values": [2.0, 2.0]}}},
        True,
    ),
    ("TestEvaluateInOperator", "2 in result", [2.0, 2.0], True),
    ("TestEvaluateFloat64", "result > 1", 5.0, True),
    ("TestEvaluateAsInt (string)", "asInt(result) == 1", "1", True),
    ("TestEvaluateAsInt (int)", "asInt(result) == 1", 1, True),
    ("TestEvaluateAsInt (float)", "asInt(result) == 1", 1.123, True),
    ("TestEvaluateAsFloat (1.1 ==)", "asFloat(result) == 1.1", "1.1", True),
    ("TestEvaluateAsFloat (1.1 >=)", "asFloat(result) >= 1.1", "1.1", True),
    ("TestEvaluateAsFloat (1.1 <=)", "asFloat(result) <= 1.1", "1.1", True),
    ("TestEvaluateAsFloat (float 1.1)", "asFloat(result) == 1.1", 1.1, True),
    ("TestEvaluateAsFloat (int ==)", "asFloat(result) == 1", 1, True),
    ("TestEvaluateAsFloat (int >=)", "asFloat(result) >= 1", 1, True),
):
    CASES.append(Case(_go, _want, lambda s=_source, v=_value: cond(s, v)))

for _go, _source, _value, _words in (
    ("TestErrorWithNonBoolReturn", "1", True, "expected bool, but got int"),
    ("TestErrorWithInvalidReference", "invalidVariable", True, "unknown name invalidVariable"),
    ("TestEvaluateInvalidStruct", "result.Name() == 'hi'", True, ""),
    ("TestEvaluateAsIntPanic", "asInt(result) == 1.1", "1.1", ""),
    (
        "TestEvaluateAsFloatError (NotANum)",
        "asFloat(result) == 1.1",
        "NotANum",
        'strconv.ParseFloat: parsing "NotANum": invalid syntax',
    ),
    (
        "TestEvaluateAsFloatError (string operand)",
        'asFloat(result) == "1.1"',
        "1.1",
        "invalid operation: == (mismatched types float64 and string)",
    ),
):
    CASES.append(
        Case(
            _go,
            (True, True),
            lambda s=_source, v=_value, w=_words: (
                lambda out: (isinstance(out, str) and out.startswith("error:"), w in str(out))
            )(cond(s, v)),
        )
    )


# --- the differences -------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    okra: Any
    """okra's outcome."""
    why: str
    safe: str
    """Why okra's outcome is never more lenient than Argo's."""


DIFFERENT: dict[str, Difference] = {
    "TestAssessRunStatusUpdateResult": Difference(
        (
            "Failed",
            'Metric "fail-after-30" assessed Failed due to failed (1) > failureLimit (0)',
            "Failed",
        ),
        "okra ends the run when a metric fails in the same pass; Argo on its next pass "
        "(after terminating the in-flight measurement of the sibling)",
        "the same verdict, Failed, one pass earlier",
    ),
    "TestReconcileAnalysisRunTerminateSiblingAfterFail (Failed): the sibling": Difference(
        "Running",
        "okra's providers answer within one reconcile, so it has no in-flight measurement to "
        "cancel; a measurement left unfinished by a crash is neither taken nor counted once "
        "the run is ending",
        "the run's phase is Argo's (the case above); only the sibling's own phase differs",
    ),
    "TestReconcileAnalysisRunTerminateSiblingAfterFail (Inconclusive): the sibling": Difference(
        "Running",
        "as for Failed",
        "the run's phase is Argo's",
    ),
    "TestReconcileAnalysisRunTerminateSiblingAfterFail (Error): the sibling": Difference(
        "Running",
        "as for Failed",
        "the run's phase is Argo's",
    ),
    "TestCalculateNextReconcileTimeInterval (in-flight measurement: no requeue)": Difference(
        -30 * _S,
        "an unfinished measurement without resumeAt is one a crash interrupted (okra's "
        "providers never leave one): okra takes it again at once instead of waiting",
        "it measures sooner, never passes sooner",
    ),
}


def fails_safe(go: str, argo: Any, okra: Any) -> bool:
    """okra is not more lenient than Argo: not Successful where Argo is not, not still
    measuring where Argo has ended the metric otherwise, not later to measure; for any other
    outcome (a message's words), the same outcome. A run's sibling metric left Running in a
    run that ends as Argo's does is not lenient: the run's phase is the verdict."""
    phases = {"Successful", "Running", "Pending", "Failed", "Error", "Inconclusive"}
    if isinstance(argo, tuple) and isinstance(okra, tuple) and argo and okra:
        return fails_safe(go, argo[0], okra[0])
    if isinstance(argo, str) and isinstance(okra, str) and {argo, okra} <= phases:
        if okra == "Successful":
            return argo == "Successful"
        if okra in ("Running", "Pending") and argo in ("Failed", "Error", "Inconclusive"):
            return go.endswith(": the sibling")
        return True
    if isinstance(okra, datetime.timedelta):
        return argo is None or okra <= argo
    return bool(okra == argo)


def agrees(argo: Any, okra: Any) -> bool:
    if isinstance(argo, str) and isinstance(okra, str) and argo != okra:
        # Argo's message, to which okra may add detail after
        return okra.startswith(argo) and argo != ""
    return bool(okra == argo)


@pytest.mark.parametrize("c", CASES, ids=[c.go for c in CASES])
def test_argo_case(c: Case) -> None:
    okra = c.run()
    if c.go in DIFFERENT:
        assert okra == DIFFERENT[c.go].okra, f"the documented difference changed: {okra!r}"
        assert not agrees(c.argo, okra)
    else:
        assert agrees(c.argo, okra), f"Argo: {c.argo!r}, okra: {okra!r}"


def test_every_difference_fails_safe() -> None:
    unsafe = [
        go
        for go, d in DIFFERENT.items()
        if not fails_safe(go, next(c.argo for c in CASES if c.go == go), d.okra)
    ]
    assert unsafe == []
    assert set(DIFFERENT) <= {c.go for c in CASES}


def test_case_names_are_unique() -> None:
    names = [c.go for c in CASES]
    assert len(names) == len(set(names))


def counts() -> dict[str, int]:
    """The figures of the closing note: `python -c 'from test.unit.test_argo_rollouts_cases
    import counts; print(counts())'`."""
    return {
        "cases": len(CASES),
        "agree": len(CASES) - len(DIFFERENT),
        "differ (fail safe)": len(DIFFERENT),
        "go tests": len({c.go.split(" (")[0].split("/")[0] for c in CASES}),
    }
