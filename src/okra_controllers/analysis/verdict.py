"""Argo Rollouts' verdict rules, in one place, as pure functions.

- A measurement's phase from its conditions (`measurement_phase`): with neither
  condition a measurement succeeds; with only `successCondition`, false means
  Failed; with only `failureCondition`, false means Successful; with both, the
  failure condition wins, and neither holding is Inconclusive. A condition that
  cannot be evaluated makes the measurement an Error.
- A metric's phase (`assess_metric`): Failed when failed > failureLimit (default
  0), Inconclusive when inconclusive > inconclusiveLimit (default 0), Error when
  consecutive errors > consecutiveErrorLimit (default 4) (later rules win);
  otherwise Successful once `count` measurements are taken (count defaults to 1
  when there is no interval, and is unbounded with an interval); a terminating
  run ends a still-running metric as Successful.
- A run's phase (`assess_run`): Running until every metric completes, then the
  worst metric phase (Successful < Inconclusive < Error < Failed); dry-run metrics
  never affect it. A run terminates early when asked (`spec.terminate`) or when
  any non-dry-run metric has Failed, Errored or is Inconclusive.
- Scheduling (`due_metrics`, `next_reconcile_time`): a metric's next measurement
  is `interval` after the last one finished (10 s after an Error when no interval
  is set), its first after `initialDelay` from the run's start.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.expr import ExprError, evaluate_condition
from okra_controllers.api.v1alpha1.analysis import (
    DryRun,
    MeasurementRetention,
    Metric,
    MetricResult,
    Phase,
    RunSummary,
)

DEFAULT_CONSECUTIVE_ERROR_LIMIT = 4
DEFAULT_ERROR_RETRY_INTERVAL = 10.0
DEFAULT_MEASUREMENT_HISTORY_LIMIT = 10
COMPLETED: frozenset[str] = frozenset({"Successful", "Failed", "Error", "Inconclusive"})
_ORDER = ("", "Pending", "Running", "Successful", "Inconclusive", "Error", "Failed")


def is_worse(current: str, new: str) -> bool:
    return _ORDER.index(new) > _ORDER.index(current)


def _int(value: int | str | None, default: int, field: str) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{field} must be an integer, not {value!r}") from None


def effective_count(metric: Metric) -> int | None:
    count = _int(metric.count, 0, f"metrics[{metric.name}].count")
    if count == 0:
        return 1 if not metric.interval else None
    return count


def measurement_phase(metric: Metric, result: object) -> tuple[Phase, str | None]:
    """The phase of one measurement whose provider returned `result`."""
    success = failure = False
    try:
        if metric.success_condition:
            success = evaluate_condition(metric.success_condition, result)
        if metric.failure_condition:
            failure = evaluate_condition(metric.failure_condition, result)
    except ExprError as e:
        return "Error", str(e)
    if not metric.success_condition and not metric.failure_condition:
        return "Successful", None
    if metric.success_condition and not metric.failure_condition:
        failure = not success
    elif metric.failure_condition and not metric.success_condition:
        success = not failure
    if failure:
        return "Failed", None
    if not success:
        return "Inconclusive", None
    return "Successful", None


def limits_verdict(metric: Metric, result: MetricResult) -> tuple[Phase | None, str]:
    phase: Phase | None = None
    message = ""
    failure_limit = _int(metric.failure_limit, 0, "failureLimit")
    if result.failed > failure_limit:
        phase, message = "Failed", f"failed ({result.failed}) > failureLimit ({failure_limit})"
    inconclusive_limit = _int(metric.inconclusive_limit, 0, "inconclusiveLimit")
    if result.inconclusive > inconclusive_limit:
        phase = "Inconclusive"
        message = f"inconclusive ({result.inconclusive}) > inconclusiveLimit ({inconclusive_limit})"
    error_limit = _int(
        metric.consecutive_error_limit, DEFAULT_CONSECUTIVE_ERROR_LIMIT, "consecutiveErrorLimit"
    )
    if result.consecutive_error > error_limit:
        phase = "Error"
        message = (
            f"consecutiveErrors ({result.consecutive_error}) > "
            f"consecutiveErrorLimit ({error_limit})"
        )
    return phase, message


def assess_metric(metric: Metric, result: MetricResult, terminating: bool) -> Phase:
    if result.phase in COMPLETED:
        return result.phase
    if not result.measurements:
        return "Successful" if terminating else "Pending"
    if result.measurements[-1].phase not in COMPLETED:
        return "Running"
    phase, _ = limits_verdict(metric, result)
    if phase is not None:
        return phase
    count = effective_count(metric)
    if count is not None and result.count >= count:
        return "Successful"
    return "Successful" if terminating else "Running"


def dry_run_names(metrics: Iterable[Metric], dry_run: Sequence[DryRun] | None) -> set[str]:
    names = {d.metric_name for d in dry_run or ()}
    if "*" in names:
        return {m.name for m in metrics}
    return names


def is_terminating(terminate: bool, results: Iterable[MetricResult], dry: set[str]) -> bool:
    if terminate:
        return True
    return any(
        r.phase in ("Failed", "Error", "Inconclusive") and r.name not in dry for r in results
    )


@dataclass
class RunVerdict:
    phase: Phase
    message: str
    summary: RunSummary
    dry_run_summary: RunSummary
    transitions: list[tuple[str, str, str]]  # (metric, old phase, new phase)


def assess_run(
    metrics: Sequence[Metric], results: dict[str, MetricResult], terminate: bool, dry: set[str]
) -> RunVerdict:
    """Update each result's phase (and message) in place and return the run's verdict."""
    terminating = is_terminating(terminate, results.values(), dry)
    worst: Phase | None = None
    worst_message = "Run Terminated" if terminate else ""
    summary, dry_summary = RunSummary(), RunSummary()
    completed_all = True
    transitions: list[tuple[str, str, str]] = []
    for metric in metrics:
        is_dry = metric.name in dry
        (dry_summary if is_dry else summary).count += 1
        result = results.get(metric.name)
        if result is None:
            completed_all = False
            continue
        phase = assess_metric(metric, result, terminating)
        if phase != result.phase:
            transitions.append((metric.name, result.phase, phase))
            if result.measurements:
                result.message = result.measurements[-1].message
            result.phase = phase
        if phase not in COMPLETED:
            completed_all = False
            continue
        limit_phase, why = limits_verdict(metric, result)
        bucket = dry_summary if is_dry else summary
        counted = limit_phase or "Successful"
        setattr(bucket, counted.lower(), getattr(bucket, counted.lower()) + 1)
        if is_dry:
            if worst is None:
                worst = "Successful"
            if why:
                result.message = f"Metric assessed {phase} due to {why}"
            continue
        if worst is None or is_worse(worst, phase):
            worst = phase
            if why:
                worst_message = f'Metric "{metric.name}" assessed {phase} due to {why}'
                if result.message:
                    worst_message += f': "Error Message: {result.message}"'
    if not terminating and is_terminating(terminate, results.values(), dry):
        # A metric just failed: Argo ends the others on its next pass; do it now.
        again = assess_run(metrics, results, terminate, dry)
        again.transitions[:0] = transitions
        return again
    if terminating:
        return RunVerdict(
            worst or "Successful", worst_message.strip(), summary, dry_summary, transitions
        )
    if not completed_all or worst is None:
        return RunVerdict("Running", "", summary, dry_summary, transitions)
    return RunVerdict(worst, worst_message.strip(), summary, dry_summary, transitions)


def _interval(metric: Metric) -> float | None:
    return parse_duration(metric.interval) if metric.interval else None


def due_metrics(
    metrics: Sequence[Metric],
    results: dict[str, MetricResult],
    started_at: datetime.datetime,
    now: datetime.datetime,
    terminating: bool,
    error_retry: float = DEFAULT_ERROR_RETRY_INTERVAL,
) -> list[Metric]:
    """The metrics to measure now."""
    due = []
    for metric in metrics:
        result = results.get(metric.name)
        if result is not None and result.phase in COMPLETED:
            continue
        if terminating:
            continue
        last = result.measurements[-1] if result and result.measurements else None
        if last is None:
            delay = parse_duration(metric.initial_delay) if metric.initial_delay else 0.0
            if now >= started_at + datetime.timedelta(seconds=delay):
                due.append(metric)
            continue
        count = effective_count(metric)
        if result is not None and count is not None and result.count >= count:
            continue
        if last.finished_at is None:
            due.append(metric)  # an unfinished measurement (crash mid-way): take it again
            continue
        wait = error_retry if last.phase == "Error" else _interval(metric)
        if wait is None:
            wait = error_retry
        if now >= last.finished_at + datetime.timedelta(seconds=wait):
            due.append(metric)
    return due


def next_reconcile_time(
    metrics: Sequence[Metric],
    results: dict[str, MetricResult],
    started_at: datetime.datetime,
    error_retry: float = DEFAULT_ERROR_RETRY_INTERVAL,
) -> datetime.datetime | None:
    """When the next measurement of any metric falls due (None: nothing scheduled)."""
    times: list[datetime.datetime] = []
    for metric in metrics:
        result = results.get(metric.name)
        if result is not None and result.phase in COMPLETED:
            continue
        last = result.measurements[-1] if result and result.measurements else None
        if last is None:
            delay = parse_duration(metric.initial_delay) if metric.initial_delay else 0.0
            times.append(started_at + datetime.timedelta(seconds=delay))
            continue
        if last.finished_at is None:
            times.append(last.resume_at or started_at)
            continue
        count = effective_count(metric)
        if result is not None and count is not None and result.count >= count:
            continue
        if last.phase == "Error":
            wait: float | None = error_retry
        else:
            wait = _interval(metric)
        if wait is None:
            continue
        times.append(last.finished_at + datetime.timedelta(seconds=wait))
    return min(times) if times else None


def record(result: MetricResult, phase: Phase) -> None:
    """Count a completed measurement into its metric result."""
    if phase == "Error":
        result.error += 1
        result.consecutive_error += 1
        return
    result.count += 1
    result.consecutive_error = 0
    if phase == "Successful":
        result.successful += 1
    elif phase == "Failed":
        result.failed += 1
    elif phase == "Inconclusive":
        result.inconclusive += 1


def retention_limit(name: str, retention: Sequence[MeasurementRetention] | None) -> int:
    for r in retention or ():
        if r.metric_name in (name, "*"):
            return r.limit
    return DEFAULT_MEASUREMENT_HISTORY_LIMIT
