"""One pass of an AnalysisRun, without I/O: the pure steps the AnalysisRun controller
(`run_controller`) takes around measuring, in Argo Rollouts' order.

- `checked_metrics`: the metrics with their arguments substituted, and what is wrong with
  them (checked on every pass: a spec edited mid-run is checked too);
- `to_measure`: the metrics due now (and the names of the dry-run ones);
- `judgment_with`, `judged_measurement`: a judged metric's settings with its arguments,
  and the measurement its comparison makes;
- `add_measurement`: one new measurement recorded in the metric's result;
- `conclude`: the run's verdict, measurements trimmed to their retention, the status.

The controller measures in between (`measure`, or `compare` for a judged metric); the
field-walking test does the same with scripted results.
"""

from __future__ import annotations

import datetime

from okra_controllers.analysis import judge, verdict
from okra_controllers.analysis.args import ArgumentError, substitute
from okra_controllers.analysis.compare import Side
from okra_controllers.analysis.validation import validate_metrics
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisRunSpec,
    AnalysisRunStatus,
    Judgment,
    Measurement,
    Metric,
    MetricJudgmentStatus,
    MetricResult,
    Phase,
    SampleSummary,
)
from okra_controllers.templating import ARGS, TemplateError, render


def checked_metrics(
    spec: AnalysisRunSpec, values: dict[str, str]
) -> tuple[list[Metric], list[str]]:
    """The spec's metrics with `values` substituted, and the problems of the run."""
    metrics = [substitute(m, values) for m in spec.metrics]
    problems = (
        validate_metrics(metrics)
        + verdict.rule_problems(metrics, spec.dry_run, spec.measurement_retention)
        + verdict.judgment_problems(metrics, spec.judgment)
    )
    return metrics, problems


def to_measure(
    spec: AnalysisRunSpec,
    metrics: list[Metric],
    results: dict[str, MetricResult],
    started_at: datetime.datetime,
    now: datetime.datetime,
    error_retry: float = verdict.DEFAULT_ERROR_RETRY_INTERVAL,
) -> tuple[set[str], list[Metric]]:
    """The dry-run metrics' names (marked on their results) and the metrics due now."""
    dry = verdict.dry_run_names(metrics, spec.dry_run)
    for r in results.values():
        r.dry_run = r.name in dry or None
    terminating = verdict.is_terminating(
        spec.terminate, results.values(), dry, verdict.soft_metrics(metrics, results)
    )
    return dry, verdict.due_metrics(metrics, results, started_at, now, terminating, error_retry)


def add_measurement(
    results: dict[str, MetricResult],
    metric: Metric,
    measurement: Measurement,
    metric_meta: dict[str, str],
    dry: set[str],
) -> None:
    """`measurement` of `metric` recorded in its result (made on its first)."""
    result = results.setdefault(
        metric.name,
        MetricResult(name=metric.name, phase="Running", dry_run=metric.name in dry or None),
    )
    result.measurements.append(measurement)
    if metric_meta and metric.judge is None:
        result.metadata = {**(result.metadata or {}), **metric_meta}
    if metric.judge is not None and measurement.phase != "Error":
        result.judgment = MetricJudgmentStatus.model_validate_json(metric_meta["judgment"])
    verdict.record(result, measurement.phase, not verdict.is_no_data(measurement))


def conclude(
    spec: AnalysisRunSpec,
    status: AnalysisRunStatus,
    metrics: list[Metric],
    results: dict[str, MetricResult],
    dry: set[str],
    started_at: datetime.datetime,
    now: datetime.datetime,
) -> verdict.RunVerdict:
    """The run judged: `status` written (phase, message, results trimmed to their
    retention, summaries), and the verdict returned for the Events."""
    ordered = [results[m.name] for m in metrics if m.name in results]
    judged = verdict.assess_run(
        metrics, results, spec.terminate, dry, started_at, now, spec.judgment
    )
    for r in ordered:
        keep = verdict.retention_limit(r.name, spec.measurement_retention)
        r.measurements = r.measurements[-keep:]
    status.metric_results = ordered
    status.started_at = started_at
    status.run_summary = judged.summary
    status.dry_run_summary = judged.dry_run_summary
    status.judgment = judged.judgment
    status.phase = judged.phase
    status.message = judged.message or None
    if judged.phase in verdict.COMPLETED:
        status.completed_at = now
    return judged


def judgment_with(judgment: Judgment | None, values: dict[str, str]) -> Judgment | None:
    """The run's judgment settings with `{{args.NAME}}` replaced."""
    if judgment is None:
        return None
    raw = judgment.model_dump_json(by_alias=True, exclude_none=True)
    try:
        return Judgment.model_validate_json(render(raw, {"args": values}, ARGS, escape="json"))
    except TemplateError as e:
        raise ArgumentError(f"judgment: {e}") from None


def _summary(s: judge.Summary) -> SampleSummary:
    return SampleSummary(
        count=s.count, median=s.median, p90=s.p90, min=s.low, p25=s.q1, p75=s.q3, max=s.high
    )


def judged_measurement(
    metric: Metric,
    j: judge.MetricJudgment,
    pair: tuple[Side, Side],
    started: datetime.datetime,
    finished: datetime.datetime,
) -> tuple[Measurement, dict[str, str]]:
    """The measurement a comparison makes, and the metric result's judgment (as JSON under
    `judgment`, for `add_measurement`)."""
    assert metric.judge is not None
    line = judge.describe(metric.name, j, metric.judge.unit or "")
    status = MetricJudgmentStatus(
        classification=j.classification,
        canary=_summary(j.canary),
        baseline=_summary(j.baseline),
        p_value=j.p_value,
        effect_size=j.effect_size,
        ratio=j.ratio,
        critical=metric.judge.critical or None,
        critical_failure=j.critical or None,
        message=line,
    )
    phase: Phase = {
        "Pass": "Successful",
        "High": "Failed",
        "Low": "Failed",
        "NoData": "Inconclusive",
    }[j.classification]  # type: ignore[assignment]
    measurement = Measurement(
        phase=phase,
        message=line,
        value=j.classification,
        metadata={
            verdict.CLASSIFICATION: j.classification,
            **({verdict.CRITICAL_FAILURE: "true"} if j.critical else {}),
            "canary": f"{pair[0].version} ({j.canary.count} points)",
            "baseline": f"{pair[1].version} ({j.baseline.count} points)",
        },
        started_at=started,
        finished_at=finished,
    )
    return measurement, {"judgment": status.model_dump_json(by_alias=True)}
