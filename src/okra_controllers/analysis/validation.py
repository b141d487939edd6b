"""Is an AnalysisRun's spec usable? Argo Rollouts' `ValidateMetrics`, on the metrics with
their arguments substituted, then okra's own checks.

Argo's rules, with its words (`metrics[I]: ...`), each after the substitution of
`{{args.NAME}}` (so `count: "{{args.count}}"` is checked as the number it becomes):

- no metrics; a duplicate metric name;
- `consecutiveSuccessLimit` < 0; `failureLimit` < -1; `failureLimit` -1 (no limit) without a
  `consecutiveSuccessLimit`; `inconclusiveLimit` < 0; `consecutiveErrorLimit` < 0;
- with `count` > 0: `count` < `failureLimit + consecutiveSuccessLimit` (or
  < `consecutiveSuccessLimit` when failureLimit is -1), `count` < `inconclusiveLimit`;
- `count` > 1 without `interval`; an `interval` or `initialDelay` that is not a Go duration;
- no provider, or more than one.

Where okra is stricter (each ends the run in Error before the first measurement, where Argo
would measure): a count or limit that is not an integer (Argo reads it as 0); a
`successCondition` / `failureCondition` that does not compile (Argo errors each measurement,
and the metric ends in Error after `consecutiveErrorLimit`); a judged metric with conditions or
a `web` provider. Pure functions only.
"""

from __future__ import annotations

from collections.abc import Sequence

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.expr import ExprError, compile_condition
from okra_controllers.analysis.providers.base import ProviderError
from okra_controllers.analysis.providers.registry import provider_for
from okra_controllers.api.v1alpha1.analysis import IntOrString, Metric


class _NotAnIntegerError(ValueError):
    pass


def _int(raw: IntOrString | None, field: str) -> int:
    """Argo's `IntOrString.IntValue()` of a set field (0 when unset); okra refuses text that
    is not an integer, which Argo would read as 0."""
    if raw is None:
        return 0
    if isinstance(raw, int):
        return raw
    text = raw.strip()
    if text.lstrip("-+").isdigit():
        return int(text)
    raise _NotAnIntegerError(f"{field} must be an integer, not {raw!r}")


_GO_UNITS = ("ns", "us", "\u00b5s", "\u03bcs", "ms", "s", "m", "h")  # both micro signs


def _go_duration(text: str) -> str | None:
    """Go's `time.ParseDuration` error for `text` (its words), None when it is a duration.
    okra takes no sign: a negative interval or delay is refused (Go would take `-5s`)."""
    quoted = '"' + text + '"'
    s = text
    if s[:1] in ("+", "-"):
        return f"time: invalid duration {quoted} (okra takes no sign)"
    if s == "0":
        return None
    if not s:
        return f"time: invalid duration {quoted}"
    while s:
        if not (s[0] == "." or s[0].isdigit()):
            return f"time: invalid duration {quoted}"
        i = 0
        while i < len(s) and s[i].isdigit():
            i += 1
        digits = i
        if i < len(s) and s[i] == ".":
            i += 1
            while i < len(s) and s[i].isdigit():
                i += 1
                digits += 1
        if digits == 0:
            return f"time: invalid duration {quoted}"
        s = s[i:]
        j = 0
        while j < len(s) and s[j] != "." and not s[j].isdigit():
            j += 1
        if j == 0:
            return f"time: missing unit in duration {quoted}"
        if s[:j] not in _GO_UNITS:
            return f'time: unknown unit "{s[:j]}" in duration {quoted}'
        s = s[j:]
    try:
        parse_duration(text.replace("\u03bcs", "\u00b5s"))
    except ValueError:
        return f"time: invalid duration {quoted}"
    return None


def validate_metric(metric: Metric) -> str | None:
    """Argo's `ValidateMetric`: the first problem of one (substituted) metric, in its words."""
    try:
        count = _int(metric.count, "count")
        failure_limit = _int(metric.failure_limit, "failureLimit")
        success_limit = _int(metric.consecutive_success_limit, "consecutiveSuccessLimit")
        inconclusive_limit = _int(metric.inconclusive_limit, "inconclusiveLimit")
        error_limit = _int(metric.consecutive_error_limit, "consecutiveErrorLimit")
    except _NotAnIntegerError as e:
        return str(e)
    if success_limit < 0:
        return "consecutiveSuccessLimit must be >= 0"
    if failure_limit < -1:
        return "failureLimit must be >= 0, or -1 to be disabled"
    if success_limit == 0 and failure_limit == -1:
        return "failureLimit and consecutiveSuccessLimit cannot both be disabled"
    if inconclusive_limit < 0:
        return "inconclusiveLimit must be >= 0"
    if metric.consecutive_error_limit is not None and error_limit < 0:
        return "consecutiveErrorLimit must be >= 0"
    if count > 0:
        if failure_limit >= 0 and count < failure_limit + success_limit:
            return (
                f"count ({count}) must be >= failureLimit + consecutiveSuccessLimit "
                f"({failure_limit} + {success_limit}) if both >= 0"
            )
        if failure_limit < 0 and count < success_limit:
            return "count must be >= consecutiveSuccessLimit"
        if count < inconclusive_limit:
            return "count must be >= inconclusiveLimit"
    if count > 1 and not metric.interval:
        return "interval must be specified when count > 1"
    if metric.interval and (err := _go_duration(metric.interval)):
        return f"invalid interval string: {err}"
    if metric.initial_delay and (err := _go_duration(metric.initial_delay)):
        return f"invalid startDelay string: {err}"
    providers = sum(
        1 for p in type(metric.provider).model_fields if getattr(metric.provider, p) is not None
    )
    if providers == 0:
        return "no provider specified"
    if providers > 1:
        return "multiple providers specified"
    return None


def okra_problems(metric: Metric) -> list[str]:
    """What okra refuses beyond Argo: conditions that do not compile, judged-metric rules."""
    problems: list[str] = []
    try:
        provider_for(metric.provider)
    except ProviderError as e:
        problems.append(f"provider: {e}")
    for field, cond in (
        ("successCondition", metric.success_condition),
        ("failureCondition", metric.failure_condition),
    ):
        if cond:
            try:
                compile_condition(cond)
            except ExprError as e:
                problems.append(f'could not evaluate {field} "{cond}": {e}')
    if metric.judge is not None:
        if metric.success_condition or metric.failure_condition:
            problems.append(
                "judge: a judged metric is compared with the baseline; "
                "remove successCondition and failureCondition"
            )
        if metric.provider.web is not None:
            problems.append("judge: compares prometheus, cloudWatch or datadog metrics, not web")
    return problems


def validate_metrics(metrics: Sequence[Metric]) -> list[str]:
    """Every problem of the (substituted) metrics, Argo's first: `metrics[I]: ...` followed by
    the metric's name. Empty when the run can start."""
    if not metrics:
        return ["no metrics specified"]
    problems: list[str] = []
    seen: set[str] = set()
    for i, m in enumerate(metrics):
        if m.name in seen:
            problems.append(f"metrics[{i}]: duplicate name '{m.name}'")
        seen.add(m.name)
        argo = validate_metric(m)
        if argo is not None:
            problems.append(f"metrics[{i}]: {argo} (metric {m.name!r})")
        problems.extend(f"metrics[{i}]: {p} (metric {m.name!r})" for p in okra_problems(m))
    return problems
