"""AnalysisRun, AnalysisTemplate and ClusterAnalysisTemplate: shapes and judges for the field
walk (test_every_field_acts.py).

What a run does with its spec, without I/O: the passes of the AnalysisRun controller
(`analysis/run_pass.py`), one a second for a minute, measuring what is due with scripted
results instead of a provider's answers. Its arguments are resolved against a Secret and
the owning Cell as the controller does; each measurement's provider, as it is given to
`measure` (a judged metric's: each side's `compare.sample_query`), is part of what the
run does, beside the status each pass writes. A template is judged by the run it makes
(`templates.flatten`) for callers that give none, some or all of its arguments.

Worlds: results that always pass, always fail, always error, and a mix of all four phases;
for a judged metric, a canary like its baseline, one twice as high, and too few points
(the number of points follows the window and the step, as a range query's does).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from typing import Any

from okra_controllers.analysis import compare, run_pass, verdict
from okra_controllers.analysis.args import ArgumentError, merge_args, resolve_args, substitute
from okra_controllers.analysis.providers.base import ProviderError
from okra_controllers.analysis.templates import TemplateError, flatten
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisRunSpec,
    AnalysisRunStatus,
    AnalysisTemplateSpec,
    Argument,
    Measurement,
    MetricResult,
)

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
NAMESPACE = "walked"
TG = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web-{}/1"
OWNER: dict[str, Any] = {
    "apiVersion": "okra.mumo.co/v1alpha1",
    "kind": "Cell",
    "metadata": {"name": "web", "namespace": NAMESPACE, "labels": {"app": "web"}},
    "status": {
        "canaryVersion": "v2",
        "stableVersion": "v1",
        "targetGroups": [
            {"version": "v1", "arn": TG.format("v1")},
            {"version": "v2", "arn": TG.format("v2")},
        ],
    },
}
ERROR = object()
"""A provider that does not answer."""


async def read_secret(namespace: str, name: str) -> dict[str, str]:
    return {"token": f"{namespace}/{name}-token", "walked": f"{namespace}/{name}-walked"}


# -- the worlds ---------------------------------------------------------------------------

MIX = [[0.01], [0.9], [0.3], ERROR, [0.01], [0.01], [0.01], [0.9], [0.3], [0.01]]
WORLDS: dict[str, Callable[[int], Any]] = {
    "passing": lambda n: [0.01],
    "failing": lambda n: [0.9],
    "erroring": lambda n: ERROR,
    "inconclusive": lambda n: [0.3],
    "mixed": lambda n: MIX[n % len(MIX)],
}
"""The n-th result of a threshold metric (a Prometheus vector of one sample)."""


def _points(q: compare.SampleQuery, level: float, at_most: int | None = None) -> list[float]:
    n = int((q.end - q.start).total_seconds() / (q.step or 1.0)) + 1
    n = min(n, at_most) if at_most is not None else n
    return [level + 0.01 * (i % 7) for i in range(n)]


def _canary_at(level: float) -> Callable[[compare.SampleQuery, str], Any]:
    return lambda q, side: _points(q, level if side == "canary" else 1.0)


def _odd(q: compare.SampleQuery, side: str) -> list[float]:
    """Many points, NaNs among them, and on the canary two values just past 3 IQRs (within
    3.5) and one far out."""
    points = [1.0 + 0.01 * (i % 7) for i in range(297)] + [math.nan, math.nan]
    return points + ([1.18, 1.18, 100.0] if side == "canary" else [1.0, 1.0, 1.0])


def _noisy(shift: float) -> Callable[[compare.SampleQuery, str], list[float]]:
    """A shift in noise of 0.6: near the edge of significance (0.26), or significant with
    its interval close to the estimate (0.3)."""
    return lambda q, side: [
        (1.0 + (shift if side == "canary" else 0.0)) + 0.1 * (i % 7) for i in range(16)
    ]


def _with_nans(q: compare.SampleQuery, side: str) -> list[float]:
    points = _points(q, 1.0)
    return [math.nan if i in (3, 8) else p for i, p in enumerate(points)]


SIDES: dict[str, Callable[[compare.SampleQuery, str], Any]] = {
    **{
        f"canary-at-{level}": _canary_at(level)
        for level in (1.0, 1.1, 1.3, 1.6, 2.5, 0.9, 0.7, 0.4)
    },
    "noisy-0.26": _noisy(0.26),
    "noisy-0.3": _noisy(0.3),
    "nans": _with_nans,
    "sparse": lambda q, side: _points(q, 1.0, at_most=4),
    "odd": _odd,
    "tiny": lambda q, side: [p / 100 for p in _points(q, 1.0)],
    "erroring": lambda q, side: ERROR,
}
"""A judged metric's samples of each side: the canary at several levels of the baseline,
in noise, too few points, NaNs and outliers, values summing to little, no answer."""


# -- a run, pass by pass ------------------------------------------------------------------


async def simulate(
    spec: AnalysisRunSpec, values_of: Callable[[int], Any], side_of: Any
) -> list[Any]:
    """What the run does over a minute: a pass a second, as the controller makes them."""
    out: list[Any] = []
    try:
        planned, _ = await resolve_args(merge_args(None, spec.args), NAMESPACE, None, OWNER)
        metrics, problems = run_pass.checked_metrics(spec, planned)
        values, _ = await resolve_args(merge_args(None, spec.args), NAMESPACE, read_secret, OWNER)
        judgment = run_pass.judgment_with(spec.judgment, values)
    except ArgumentError as e:
        return [f"Unable to resolve metric arguments: {e}"]
    if problems:
        return [f"Analysis spec invalid: {problems}"]
    status = AnalysisRunStatus()
    results: dict[str, MetricResult] = {}
    taken: dict[str, int] = {}
    index = {m.name: i for i, m in enumerate(metrics)}
    for t in range(60):
        now = T0 + datetime.timedelta(seconds=t)
        dry, due = run_pass.to_measure(spec, metrics, results, T0, now)
        for m in due:
            metric = substitute(spec.metrics[index[m.name]], values)
            n = taken[m.name] = taken.get(m.name, -1) + 1
            if metric.judge is None:
                out.append(metric.provider.model_dump(by_alias=True, exclude_none=True))
                result = values_of(n)
                if result is ERROR:
                    measurement = Measurement(
                        phase="Error", message="no answer", started_at=now, finished_at=now
                    )
                else:
                    phase, message = verdict.measurement_phase(metric, result)
                    measurement = Measurement(
                        phase=phase,
                        message=message,
                        value=repr(result),
                        started_at=now,
                        finished_at=now,
                    )
                run_pass.add_measurement(results, metric, measurement, {}, dry)
                continue
            try:
                pair = compare.sides(judgment, OWNER)
                start, end = compare.window(metric.judge, T0, now)
                queries = [
                    compare.sample_query(metric.provider, metric.judge, side, start, end)
                    for side in pair
                ]
            except ProviderError as e:
                measurement = Measurement(
                    phase="Error", message=str(e), started_at=now, finished_at=now
                )
                run_pass.add_measurement(results, metric, measurement, {}, dry)
                continue
            out.append([repr(q) for q in queries])
            canary, baseline = (
                side_of(q, side.name) for q, side in zip(queries, pair, strict=True)
            )
            if canary is ERROR or baseline is ERROR:
                measurement = Measurement(
                    phase="Error", message="no answer", started_at=now, finished_at=now
                )
                run_pass.add_measurement(results, metric, measurement, {}, dry)
                continue
            j = compare.classify(metric.judge, canary, baseline)
            measurement, meta = run_pass.judged_measurement(metric, j, pair, now, now)
            run_pass.add_measurement(results, metric, measurement, meta, dry)
        judged = run_pass.conclude(spec, status, metrics, results, dry, T0, now)
        out.append(status.model_dump(by_alias=True, exclude_none=True, mode="json"))
        out.append(judged.transitions)
        if judged.phase in verdict.COMPLETED:
            break
    return out


async def run_outputs(raw: dict[str, Any]) -> list[Any]:
    spec = AnalysisRunSpec.model_validate(raw["spec"])
    return await _in_worlds(spec)


async def _in_worlds(spec: AnalysisRunSpec) -> list[Any]:
    out: list[Any] = []
    judged = any(m.judge is not None for m in spec.metrics)
    if judged:
        worlds = [(s, WORLDS["passing"], SIDES[s]) for s in SIDES]
    else:
        worlds = [(w, WORLDS[w], SIDES["canary-at-1.0"]) for w in WORLDS]
    for name, values_of, side_of in worlds:
        out += [name, *await simulate(spec, values_of, side_of)]
    return out


CALLERS: list[list[Argument]] = [
    [],
    [Argument(name="version", value="v2")],
    [Argument(name="version", value="v2"), Argument(name="threshold", value="0.5")],
]
"""What a Cell's analysis step gives a template: nothing, the version, both arguments."""


async def template_outputs(raw: dict[str, Any]) -> list[Any]:
    spec = AnalysisTemplateSpec.model_validate(raw["spec"])
    out: list[Any] = []
    for args in CALLERS:
        try:
            run = flatten([("walked", spec)], args)
        except TemplateError as e:
            out.append(str(e))
            continue
        out += await _in_worlds(run)
    return out


# -- the shapes ---------------------------------------------------------------------------

PROMETHEUS = {"address": "http://prometheus:9090"}
THRESHOLD_METRIC: dict[str, Any] = {
    "name": "errors",
    "interval": "5s",
    "count": 8,
    "successCondition": "result[0] < {{args.threshold}}",
    "failureCondition": "result[0] > 0.5",
    "failureLimit": 1,
    "inconclusiveLimit": 1,
    "consecutiveErrorLimit": 2,
    "provider": {
        "prometheus": {
            **PROMETHEUS,
            "query": 'sum(rate(errors{version="{{args.version}}"}[1m]))',
        }
    },
}
JUDGED_METRIC: dict[str, Any] = {
    "name": "latency",
    "interval": "10s",
    "count": 4,
    "provider": {
        "prometheus": {
            **PROMETHEUS,
            "query": 'p99_latency{app="{{args.app}}", version="{{judge.version}}"}',
        }
    },
    "judge": {
        "critical": True,
        "minSamples": 5,
        "lookback": "30s",
        "step": "2s",
        "groups": ["latency"],
        "effectSize": {
            "allowedIncrease": 1.2,
            "allowedDecrease": 0.8,
            "criticalIncrease": 2.0,
            "criticalDecrease": 0.5,
        },
        "outliers": {"strategy": "remove", "outlierFactor": 3},
    },
}
"""A critical metric judged by comparison with effect sizes, outliers removed."""
THRESHOLD_RUN: dict[str, Any] = {
    "metrics": [THRESHOLD_METRIC],
    "args": [
        {"name": "version", "value": "v2"},
        {"name": "threshold", "value": "0.1"},
        {"name": "token", "valueFrom": {"secretKeyRef": {"name": "prom", "key": "token"}}},
        {"name": "app", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
    ],
    "dryRun": [{"metricName": "errors"}],
    "measurementRetention": [{"metricName": "errors", "limit": 3}],
}
"""A threshold metric with an argument of each source, in dry run, keeping 3 measurements."""
JUDGED_RUN: dict[str, Any] = {
    "metrics": [
        JUDGED_METRIC,
        {
            "name": "errors",
            "interval": "10s",
            "count": 4,
            "provider": {"prometheus": {**PROMETHEUS, "query": 'errors{v="{{judge.version}}"}'}},
            "judge": {"direction": "increase", "groups": ["errors"]},
        },
    ],
    "args": [{"name": "app", "value": "web"}],
    "judgment": {
        "scoreThresholds": {"pass": 80, "marginal": 60},
        "groupWeights": {"latency": 70, "errors": 30},
    },
}
"""Two metrics judged by comparison in two weighted groups, their sides taken from the
owning Cell."""

RUN_SHAPES: dict[str, dict[str, Any]] = {"threshold": THRESHOLD_RUN, "judged": JUDGED_RUN}
TEMPLATE_SHAPES: dict[str, dict[str, Any]] = {
    "threshold": {
        "metrics": [THRESHOLD_METRIC],
        "args": [{"name": "version"}, {"name": "threshold", "value": "0.1"}],
        "measurementRetention": [{"metricName": "errors", "limit": 3}],
    },
    "judged": JUDGED_RUN,
}
"""A template whose caller gives `version` (and may give `threshold`), and a judged one."""
