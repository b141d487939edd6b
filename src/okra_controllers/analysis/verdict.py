"""Argo Rollouts' verdict rules, in one place, as pure functions.

- A measurement's phase from its conditions (`measurement_phase`): with neither
  condition a measurement succeeds; with only `successCondition`, false means
  Failed; with only `failureCondition`, false means Successful; with both, the
  failure condition wins, and neither holding is Inconclusive. A condition that
  cannot be evaluated makes the measurement an Error.
- A metric's phase (`assess_metric`): Failed when failed > failureLimit (default
  0; -1: no limit), Inconclusive when inconclusive > inconclusiveLimit (default 0),
  Error when consecutive errors > consecutiveErrorLimit (default 4) (later rules
  win); otherwise Successful at `consecutiveSuccessLimit` successes in a row, or
  once `count` measurements are taken (count defaults to 1 when there is no
  interval, and is unbounded with an interval) -- then, with a
  consecutiveSuccessLimit not reached, Inconclusive (Failed when failureLimit is
  -1); a terminating run ends a still-running metric as Successful.
- `dryRun` and `measurementRetention` rules match metric names as Go regular
  expressions (`rule_matches`); one that matches none is an error (`rule_problems`).
- A run's phase (`assess_run`): Running until every metric completes, then the
  worst metric phase (Successful < Inconclusive < Error < Failed); dry-run metrics
  never affect it. A run terminates early when asked (`spec.terminate`) or when
  any non-dry-run metric has Failed, Errored or is Inconclusive.
- Scheduling (`due_metrics`, `next_reconcile_time`): a metric's next measurement
  is `interval` after the last one finished (10 s after an Error when no interval
  is set), its first after `initialDelay` from the run's start.

Where okra departs from Argo, on purpose (docs/judge.md):

- A metric that ends with no measurement but errors (the run terminated, or another
  metric failed first) is Inconclusive, not Successful: errors are no evidence.
- Judged metrics (`judge`, compared with the baseline) take `count` judgments that
  have data; a NoData judgment is not counted and the metric measures again (at
  `interval`, else every 10 s) until `judge.waitForData` from the run's start, then
  ends Inconclusive. A judged metric's phase follows its last judgment (Pass:
  Successful, High/Low: Failed, NoData: Inconclusive) but, unless it is a critical
  failure (a critical metric's High/Low past its critical effect size, or a critical
  metric ending without data), it neither ends the run early nor fails it: the run's
  judged metrics are scored together (`judge.score`, Kayenta's scorer: half or more
  NoData fails) once all are done, and the score's outcome (Pass: Successful,
  Marginal or NoData: Inconclusive, Fail: Failed) joins the other metrics' phases.
  failureLimit and inconclusiveLimit do not apply to judged metrics;
  consecutiveErrorLimit does.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from okra_controllers.analysis import judge
from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.expr import ExprError, evaluate_condition
from okra_controllers.analysis.expr.errors import _Fault
from okra_controllers.analysis.expr.regex import _regex
from okra_controllers.api.v1alpha1.analysis import (
    DryRun,
    Judgment,
    Measurement,
    MeasurementRetention,
    Metric,
    MetricResult,
    Phase,
    RunJudgmentStatus,
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
    for field, cond in (
        ("successCondition", metric.success_condition),
        ("failureCondition", metric.failure_condition),
    ):
        if not cond:
            continue
        try:
            holds = evaluate_condition(cond, result)
        except ExprError as e:
            return "Error", evaluation_error(field, cond, result, e)
        if field == "successCondition":
            success = holds
        else:
            failure = holds
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


def evaluation_error(field: str, condition: str, result: object, error: Exception) -> str:
    """Argo's message for a condition that could not be evaluated (`formatEvalError`)."""
    if result is None or (isinstance(result, (list, tuple)) and not result):
        return (
            f'could not evaluate {field} "{condition}": metric result is nil or empty: '
            f"no data returned from the metric provider ({error})"
        )
    return f'could not evaluate {field} "{condition}": {error}'


def limits_verdict(metric: Metric, result: MetricResult) -> tuple[Phase | None, str]:
    phase: Phase | None = None
    message = ""
    failure_limit = _int(metric.failure_limit, 0, "failureLimit")
    if failure_limit >= 0 and result.failed > failure_limit:  # -1: no limit
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


def count_verdict(metric: Metric, result: MetricResult) -> Phase | None:
    """The phase of a metric no limit has ended: Successful once `consecutiveSuccessLimit`
    successes in a row are seen; at `count` measurements, Successful, or, when a
    consecutiveSuccessLimit was not reached, Inconclusive (Failed when failureLimit is -1);
    None while it keeps measuring."""
    success_limit = _int(metric.consecutive_success_limit, 0, "consecutiveSuccessLimit")
    if success_limit > 0 and result.consecutive_success >= success_limit:
        return "Successful"
    count = effective_count(metric)
    if count is None or result.count < count:
        return None
    if success_limit > 0:
        failure_limit = _int(metric.failure_limit, 0, "failureLimit")
        return "Inconclusive" if failure_limit >= 0 else "Failed"
    return "Successful"


CLASSIFICATION = "classification"
"""Measurement metadata key of a judged measurement's classification."""
CRITICAL_FAILURE = "criticalFailure"
"""Measurement metadata key set ("true") on a critical metric's High/Low past its critical
effect size: it fails the run."""
_CLASS_PHASE: dict[str, Phase] = {
    "Pass": "Successful",
    "High": "Failed",
    "Low": "Failed",
    "NoData": "Inconclusive",
}


def classification(m: Measurement) -> str | None:
    return (m.metadata or {}).get(CLASSIFICATION)


def is_no_data(m: Measurement) -> bool:
    return classification(m) == "NoData"


def _last_with_data(result: MetricResult) -> Measurement | None:
    for m in reversed(result.measurements):
        c = classification(m)
        if c is not None and c != "NoData":
            return m
    return None


def last_judged(result: MetricResult) -> str:
    """The classification of the metric's last judgment with data (NoData if none)."""
    m = _last_with_data(result)
    return "NoData" if m is None else classification(m) or "NoData"


def critical_failed(result: MetricResult) -> bool:
    """The metric's last judgment with data is a critical failure."""
    m = _last_with_data(result)
    return m is not None and (m.metadata or {}).get(CRITICAL_FAILURE) == "true"


def _data_deadline(metric: Metric, started_at: datetime.datetime) -> datetime.datetime:
    assert metric.judge is not None
    delay = parse_duration(metric.initial_delay) if metric.initial_delay else 0.0
    wait = parse_duration(metric.judge.wait_for_data)
    return started_at + datetime.timedelta(seconds=delay + wait)


def _assess_judged(
    metric: Metric,
    result: MetricResult,
    terminating: bool,
    started_at: datetime.datetime | None,
    now: datetime.datetime | None,
) -> Phase:
    assert metric.judge is not None
    if not result.measurements:
        return "Inconclusive" if terminating else "Pending"
    last = result.measurements[-1]
    if last.phase not in COMPLETED:
        return "Running"
    error_limit = _int(
        metric.consecutive_error_limit, DEFAULT_CONSECUTIVE_ERROR_LIMIT, "consecutiveErrorLimit"
    )
    if result.consecutive_error > error_limit:
        return "Error"
    judged = last_judged(result)
    if metric.judge.critical and critical_failed(result):
        return "Failed"
    count = effective_count(metric)
    if count is not None and result.count >= count:
        return _CLASS_PHASE[judged]
    if (
        is_no_data(last)
        and started_at is not None
        and now is not None
        and now >= _data_deadline(metric, started_at)
    ):
        return "Inconclusive"
    if terminating:
        return _CLASS_PHASE[judged]
    return "Running"


def assess_metric(
    metric: Metric,
    result: MetricResult,
    terminating: bool,
    started_at: datetime.datetime | None = None,
    now: datetime.datetime | None = None,
) -> Phase:
    if result.phase in COMPLETED:
        return result.phase
    if metric.judge is not None:
        return _assess_judged(metric, result, terminating, started_at, now)
    if not result.measurements:
        return "Successful" if terminating else "Pending"
    if result.measurements[-1].phase not in COMPLETED:
        return "Running"
    phase, _ = limits_verdict(metric, result)
    if phase is not None:
        return phase
    counted = count_verdict(metric, result)
    if counted is not None:
        return counted
    if terminating and result.count == 0 and result.error > 0:
        return "Inconclusive"  # nothing but errors: no evidence either way
    return "Successful" if terminating else "Running"


def _unlimited_why(metric: Metric, result: MetricResult) -> str:
    """Why a metric no limit ended is Inconclusive or Failed."""
    success_limit = _int(metric.consecutive_success_limit, 0, "consecutiveSuccessLimit")
    if success_limit > 0:
        return (
            f"consecutiveSuccess ({result.consecutive_success}) < "
            f"consecutiveSuccessLimit ({success_limit}) after count ({result.count})"
        )
    return "no measurement succeeded" if result.phase == "Inconclusive" else ""


def _is_soft(metric: Metric, result: MetricResult | None) -> bool:
    if metric.judge is None:
        return False
    if not metric.judge.critical or result is None:
        return True
    return result.phase != "Inconclusive" and not critical_failed(result)


def soft_metrics(
    metrics: Iterable[Metric], results: dict[str, MetricResult] | None = None
) -> set[str]:
    """Judged metrics whose High/Low/NoData ends nothing early and counts through the
    score: all but a critical one that failed critically or ended without data."""
    return {m.name for m in metrics if _is_soft(m, (results or {}).get(m.name))}


def rule_matches(pattern: str, name: str) -> bool:
    """Go's `regexp.MatchString(pattern, name)` as Argo calls it: unanchored; a pattern Go
    cannot compile (such as `*`) matches nothing. RE2's meaning, as the condition language's
    `matches` gives it."""
    try:
        return _regex(pattern).search(name) is not None
    except _Fault:
        return False


def rule_problems(
    metrics: Sequence[Metric],
    dry_run: Sequence[DryRun] | None,
    retention: Sequence[MeasurementRetention] | None,
) -> list[str]:
    """Argo's errors for `dryRun` and `measurementRetention` rules that match no metric."""
    problems = []
    named: tuple[tuple[str, Sequence[DryRun | MeasurementRetention]], ...] = (
        ("dryRun", dry_run or ()),
        ("measurementRetention", retention or ()),
    )
    for field, rules in named:
        for i, rule in enumerate(rules):
            if not any(rule_matches(rule.metric_name, m.name) for m in metrics):
                hint = ""
                if rule.metric_name == "*":
                    hint = " (a regular expression: `.*` matches every metric)"
                problems.append(
                    f"{field}[{i}]: Rule didn't match any metric name(s): "
                    f"metricName {rule.metric_name!r}{hint}"
                )
    return problems


def dry_run_names(metrics: Iterable[Metric], dry_run: Sequence[DryRun] | None) -> set[str]:
    """Names of the metrics some `dryRun` rule's regular expression matches."""
    return {
        m.name for m in metrics if any(rule_matches(d.metric_name, m.name) for d in dry_run or ())
    }


def is_terminating(
    terminate: bool,
    results: Iterable[MetricResult],
    dry: set[str],
    soft: set[str] | frozenset[str] = frozenset(),
) -> bool:
    if terminate:
        return True
    return any(
        r.name not in dry
        and (r.phase == "Error" or (r.phase in ("Failed", "Inconclusive") and r.name not in soft))
        for r in results
    )


@dataclass
class RunVerdict:
    phase: Phase
    message: str
    summary: RunSummary
    dry_run_summary: RunSummary
    transitions: list[tuple[str, str, str]]  # (metric, old phase, new phase)
    judgment: RunJudgmentStatus | None = None


_OUTCOME_PHASE: dict[str, Phase] = {
    "Pass": "Successful",
    "Marginal": "Inconclusive",
    "NoData": "Inconclusive",
    "Fail": "Failed",
}


def judge_run(
    metrics: Sequence[Metric],
    results: dict[str, MetricResult],
    dry: set[str],
    judgment: Judgment | None,
) -> RunJudgmentStatus | None:
    """The score of the run's judged metrics (None when it has none)."""
    judged = [m for m in metrics if m.judge is not None and m.name not in dry]
    if not judged:
        return None
    labels: list[judge.Scored] = []
    lines: list[str] = []
    for m in judged:
        assert m.judge is not None
        r = results.get(m.name)
        label = last_judged(r) if r is not None else "NoData"
        labels.append(
            judge.Scored(
                m.name,
                label,  # type: ignore[arg-type]
                critical=m.judge.critical,
                critical_failure=r is not None and critical_failed(r),
                must_have_data=m.judge.must_have_data,
                groups=tuple(m.judge.groups or ()),
            )
        )
        if label != "Pass" and r is not None and r.judgment is not None and r.judgment.message:
            lines.append(r.judgment.message)
        elif label == "NoData":
            lines.append(f"{m.name} NoData")
    thresholds = judgment.score_thresholds if judgment and judgment.score_thresholds else None
    pass_score = thresholds.pass_ if thresholds else judge.DEFAULT_PASS_SCORE
    marginal = thresholds.marginal if thresholds else judge.DEFAULT_MARGINAL_SCORE
    weights = judgment.group_weights if judgment else None
    s = judge.score(labels, pass_score=pass_score, marginal_score=marginal, group_weights=weights)
    shown = "no data" if s.score is None else f"score {s.score:g}"
    message = f"judgment {s.outcome}: {shown} (pass {pass_score:g}, marginal {marginal:g})"
    if s.reason:
        message += f"; {s.reason}"
    if lines:
        message += ": " + "; ".join(lines)
    return RunJudgmentStatus.model_validate(
        {
            "outcome": s.outcome,
            "score": s.score,
            "pass": pass_score,
            "marginal": marginal,
            "message": message,
        }
    )


def judgment_problems(metrics: Sequence[Metric], judgment: Judgment | None) -> list[str]:
    """Judge settings a run cannot use, each naming the field."""
    problems: list[str] = []
    if judgment is not None and all(m.judge is None for m in metrics):
        problems.append(  # the CRD says so too; an object stored before it said may not
            "spec.judgment is read only for metrics with judge, and no metric has one: add "
            "judge to the metrics to compare, or remove spec.judgment"
        )
    for i, m in enumerate(metrics):
        effect = m.judge.effect_size if m.judge else None
        if effect is None or effect.measure != "cles":
            continue
        for field, value in (
            ("allowedIncrease", effect.allowed_increase),
            ("allowedDecrease", effect.allowed_decrease),
            ("criticalIncrease", effect.critical_increase),
            ("criticalDecrease", effect.critical_decrease),
        ):
            if value is not None and value > 1:
                problems.append(
                    f"spec.metrics[{i}] ({m.name}).judge.effectSize.{field}: a CLES is a "
                    f"share between 0 and 1, not {value:g}"
                )
    weights = judgment.group_weights if judgment else None
    if not weights:
        return problems
    groups: set[str] = set()
    for m in metrics:
        if m.judge is not None:
            groups.update(m.judge.groups or (judge.DEFAULT_GROUP,))
    where = "spec.judgment.groupWeights"
    for name, weight in weights.items():
        if name not in groups:
            problems.append(f"{where}.{name}: no judged metric is in this group (judge.groups)")
        if weight < 0:
            problems.append(f"{where}.{name}: must not be negative, not {weight:g}")
    total = sum(weights.values())
    if total > 100:
        problems.append(f"{where}: the weights add up to {total:g}, more than 100")
    elif groups <= set(weights) and total != 100:
        problems.append(f"{where}: every group has a weight and they add up to {total:g}, not 100")
    return problems


def assess_run(
    metrics: Sequence[Metric],
    results: dict[str, MetricResult],
    terminate: bool,
    dry: set[str],
    started_at: datetime.datetime | None = None,
    now: datetime.datetime | None = None,
    judgment: Judgment | None = None,
) -> RunVerdict:
    """Update each result's phase (and message) in place and return the run's verdict."""
    soft = soft_metrics(metrics, results)
    terminating = is_terminating(terminate, results.values(), dry, soft)
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
        phase = assess_metric(metric, result, terminating, started_at, now)
        if phase != result.phase:
            transitions.append((metric.name, result.phase, phase))
            if result.measurements:
                result.message = result.measurements[-1].message
            result.phase = phase
        if phase not in COMPLETED:
            completed_all = False
            continue
        if metric.judge is not None:
            limit_phase: Phase | None = phase if phase != "Successful" else None
            why = ""
        else:
            limit_phase, why = limits_verdict(metric, result)
            if limit_phase is None and phase in ("Inconclusive", "Failed"):
                limit_phase, why = phase, _unlimited_why(metric, result)
        bucket = dry_summary if is_dry else summary
        counted = limit_phase or "Successful"
        setattr(bucket, counted.lower(), getattr(bucket, counted.lower()) + 1)
        if is_dry:
            if worst is None:
                worst = "Successful"
            if why:
                result.message = f"Metric assessed {phase} due to {why}"
            continue
        if _is_soft(metric, result) and phase != "Error":
            if worst is None:
                worst = "Successful"  # judged metrics count through the score, below
            continue
        if worst is None or is_worse(worst, phase):
            worst = phase
            if why:
                worst_message = f'Metric "{metric.name}" assessed {phase} due to {why}'
                if result.message:
                    worst_message += f': "Error Message: {result.message}"'
    if not terminating and is_terminating(
        terminate, results.values(), dry, soft_metrics(metrics, results)
    ):
        # A metric just failed: Argo ends the others on its next pass; do it now.
        again = assess_run(metrics, results, terminate, dry, started_at, now, judgment)
        again.transitions[:0] = transitions
        return again
    if not terminating and (not completed_all or worst is None):
        return RunVerdict("Running", "", summary, dry_summary, transitions)
    scored = judge_run(metrics, results, dry, judgment)
    worst, worst_message = _with_score(worst, worst_message, scored)
    return RunVerdict(
        worst or "Successful", worst_message.strip(), summary, dry_summary, transitions, scored
    )


def _with_score(
    worst: Phase | None, message: str, scored: RunJudgmentStatus | None
) -> tuple[Phase | None, str]:
    """The run's phase and message once the judge's score counts: the score's outcome
    where it is worse than the metrics' (or as bad, and they said nothing)."""
    if scored is None:
        return worst, message
    phase = _OUTCOME_PHASE[scored.outcome]
    # A critical judged metric that failed the run alone says nothing of its own (its
    # limits are not Argo's): the score, which it set to 0, names it and by how much.
    if worst is None or is_worse(worst, phase) or (worst == phase and not message):
        return phase, scored.message or ""
    return worst, message


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
            if last.resume_at is not None and last.resume_at > now:
                continue  # as Argo: not before its resumeAt
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
        if wait is None and is_no_data(last):
            wait = error_retry  # a judged metric waiting for data asks again
        if wait is None:
            continue
        times.append(last.finished_at + datetime.timedelta(seconds=wait))
    return min(times) if times else None


def record(result: MetricResult, phase: Phase, counted: bool = True) -> None:
    """Count a completed measurement into its metric result (a judged measurement without
    data is not counted: it neither uses up `count` nor is an error)."""
    if phase == "Error":
        result.error += 1
        result.consecutive_error += 1
        result.consecutive_success = 0
        return
    if not counted:
        result.consecutive_error = 0
        return
    result.count += 1
    result.consecutive_error = 0
    result.consecutive_success = result.consecutive_success + 1 if phase == "Successful" else 0
    if phase == "Successful":
        result.successful += 1
    elif phase == "Failed":
        result.failed += 1
    elif phase == "Inconclusive":
        result.inconclusive += 1


def retention_limit(name: str, retention: Sequence[MeasurementRetention] | None) -> int:
    """Measurements kept for metric `name`: the limit of the last rule that matches it."""
    for r in reversed(retention or ()):
        if rule_matches(r.metric_name, name) and r.limit > 0:
            return r.limit
    return DEFAULT_MEASUREMENT_HISTORY_LIMIT
