"""Take one judged measurement: the canary's and the baseline's samples of a metric over the
same window, fetched through its provider, then compared by the judge (`judge.classify`).

Which side is which: `spec.judgment.canary` / `.baseline` when the run sets them, otherwise
the owning Cell's status: its canary and stable versions and the target groups of each. A
query names its side with `{{judge.version}}`, `{{judge.side}}` (canary or baseline) or
`{{judge.targetGroups}}` (the side's AWS target group names joined by `|`, for a PromQL
regex); a CloudWatch query needs none of them: each `metricStat` is asked once per target
group of the side, with its `TargetGroup` dimension.

A provider failure on either side is an error (the measurement is an Error); too few points
is not: the judge says NoData.
"""

from __future__ import annotations

import asyncio
import datetime
import json
from dataclasses import dataclass
from typing import Any, Literal

from okra_controllers.analysis import judge
from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.providers import cloudwatch, datadog, prometheus
from okra_controllers.analysis.providers.base import ProviderContext, ProviderError
from okra_controllers.api.kinds import CELL
from okra_controllers.api.v1alpha1.analysis import EffectSize, Judgment, Metric, MetricJudge
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_controllers.templating import Syntax, TemplateError, render

__all__ = ["JUDGE", "Side", "classify", "for_side", "sample_query", "sides", "take", "window"]

JUDGE = Syntax(dot="none", roots=frozenset({"judge"}))
"""`{{judge.version}}`, `{{judge.side}}`, `{{judge.targetGroups}}`."""


@dataclass(frozen=True)
class Side:
    name: Literal["canary", "baseline"]
    version: str
    target_groups: tuple[str, ...]  # ARNs

    def variables(self) -> dict[str, Any]:
        names = [arn.rsplit(":", 1)[-1].split("/")[1] for arn in self.target_groups if "/" in arn]
        return {
            "judge": {
                "version": self.version,
                "side": self.name,
                "targetGroups": "|".join(names),
            }
        }


def sides(judgment: Judgment | None, owner: dict[str, Any] | None) -> tuple[Side, Side]:
    """(canary, baseline): from the run's `judgment`, else from the owning Cell's status."""
    status = (owner or {}).get("status") or {} if (owner or {}).get("kind") == CELL.kind else {}
    groups = status.get("targetGroups") or []
    out: list[Side] = []
    for name, given, field in (
        ("canary", judgment.canary if judgment else None, "canaryVersion"),
        ("baseline", judgment.baseline if judgment else None, "stableVersion"),
    ):
        version = (given.version if given else None) or status.get(field) or ""
        arns = list(given.target_groups or ()) if given and given.target_groups else []
        if not arns and version:
            arns = [g["arn"] for g in groups if g.get("version") == version and g.get("arn")]
        if not version and not arns:
            raise ProviderError(
                f"judge: no {name} to compare: set spec.judgment.{name}.version "
                "(or run the analysis from a Cell)"
            )
        out.append(Side(name, version, tuple(sorted(arns))))  # type: ignore[arg-type]
    if out[0].version and out[0].version == out[1].version:
        raise ProviderError(f"judge: canary and baseline are both version {out[0].version}")
    return out[0], out[1]


def for_side(provider: MetricProvider, side: Side) -> MetricProvider:
    raw = provider.model_dump_json(by_alias=True, exclude_none=True)
    try:
        rendered = render(raw, side.variables(), JUDGE, escape="json")
    except TemplateError as e:
        raise ProviderError(f"judge: {e}") from None
    return MetricProvider.model_validate(json.loads(rendered))


@dataclass(frozen=True)
class SampleQuery:
    """What one side's samples are fetched with."""

    provider: MetricProvider
    """The metric's provider, its `{{judge.*}}` rendered for the side."""
    start: datetime.datetime
    end: datetime.datetime
    step: float | None
    """Prometheus' range-query resolution (seconds); None for the other providers."""
    target_groups: tuple[str, ...]
    """The side's target groups (CloudWatch asks once per group, with its dimension)."""


def sample_query(
    provider: MetricProvider,
    settings: MetricJudge,
    side: Side,
    start: datetime.datetime,
    end: datetime.datetime,
) -> SampleQuery:
    spec = for_side(provider, side)
    step = parse_duration(settings.step) if spec.prometheus is not None else None
    return SampleQuery(spec, start, end, step, side.target_groups)


async def _samples(q: SampleQuery, ctx: ProviderContext) -> list[float]:
    spec, start, end = q.provider, q.start, q.end
    if spec.prometheus is not None:
        assert q.step is not None
        return await prometheus.PROVIDER.samples(
            spec.prometheus, ctx, start.timestamp(), end.timestamp(), q.step
        )
    if spec.cloud_watch is not None:
        return await cloudwatch.PROVIDER.samples(
            spec.cloud_watch, ctx, start, end, list(q.target_groups)
        )
    if spec.datadog is not None:
        return await datadog.PROVIDER.samples(spec.datadog, ctx, start.timestamp(), end.timestamp())
    raise ProviderError("judge: compares prometheus, cloudWatch or datadog metrics, not web")


def kind_of(provider: MetricProvider) -> str:
    if provider.prometheus is not None:
        return "prometheus"
    if provider.cloud_watch is not None:
        return "cloudwatch"
    if provider.datadog is not None:
        return "datadog"
    return "web"


async def take(
    metric: Metric,
    pair: tuple[Side, Side],
    ctx: ProviderContext,
    run_started: datetime.datetime,
    now: datetime.datetime,
) -> judge.MetricJudgment:
    """Fetch both sides over the same window and judge them; ProviderError if either
    side cannot be fetched."""
    settings = metric.judge or MetricJudge()
    start, end = window(settings, run_started, now)
    canary, baseline = await asyncio.gather(
        *(_samples(sample_query(metric.provider, settings, side, start, end), ctx) for side in pair)
    )
    return classify(settings, canary, baseline)


def window(
    settings: MetricJudge, run_started: datetime.datetime, now: datetime.datetime
) -> tuple[datetime.datetime, datetime.datetime]:
    """The window both sides are fetched over: since the run started, or `lookback`."""
    if settings.lookback:
        return now - datetime.timedelta(seconds=parse_duration(settings.lookback)), now
    return run_started, now


def classify(
    settings: MetricJudge, canary: list[float], baseline: list[float]
) -> judge.MetricJudgment:
    """The two sides' samples judged with the metric's `judge` settings."""
    effect = settings.effect_size or EffectSize()
    outliers = settings.outliers
    return judge.classify(
        canary,
        baseline,
        direction=settings.direction,
        confidence=settings.confidence,
        tolerance=settings.tolerance,
        min_samples=settings.min_samples,
        min_total=settings.min_total,
        nan_strategy=settings.nan_strategy,
        outlier_factor=(
            outliers.outlier_factor if outliers and outliers.strategy == "remove" else None
        ),
        effect_measure=effect.measure,
        allowed_increase=effect.allowed_increase,
        allowed_decrease=effect.allowed_decrease,
        critical=settings.critical,
        critical_increase=effect.critical_increase,
        critical_decrease=effect.critical_decrease,
    )
