"""AnalysisTemplate, ClusterAnalysisTemplate, AnalysisRun and Check.

Field names and meaning follow Argo Rollouts' `argoproj.io/v1alpha1` analysis
types, so a template written for Argo Rollouts is also a valid okra template
(only `apiVersion` differs), and okra can read Argo's templates directly.
"""

from __future__ import annotations

import datetime
import json
import re
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1.common import (
    ApiModel,
    Condition,
    OkraObject,
    okra_crd,
)
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_runtime.crdgen import CRDInfo, PrinterColumn

Phase = Literal["", "Pending", "Running", "Successful", "Failed", "Error", "Inconclusive"]
IntOrString = int | str
DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
ARG_PATTERN = r"\{\{\s*args\.[^{}]+\}\}"
DURATION_OR_ARG_PATTERN = (
    rf"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+|.*{ARG_PATTERN}.*)$"
)
"""A Go duration (unsigned), or text with an `{{args.NAME}}` placeholder (checked once
substituted, by `ValidateMetrics`' rules)."""


def _duration_or_arg(description: str) -> Any:
    """A duration field Argo Rollouts substitutes arguments into: the CRD takes a Go duration
    or a placeholder; the substituted value is checked when the run starts (`ValidateMetrics`)."""
    return Field(
        default=None,
        description=description,
        json_schema_extra={"pattern": DURATION_OR_ARG_PATTERN},
    )


class SecretKeyRef(ApiModel):
    name: str
    key: str


class FieldRef(ApiModel):
    field_path: str
    """A path into the object that owns the run, e.g. `metadata.labels['app']`."""


class ValueFrom(ApiModel):
    secret_key_ref: SecretKeyRef | None = None
    field_ref: FieldRef | None = None


class Argument(ApiModel):
    """A template argument; metrics refer to it as `{{args.NAME}}`."""

    name: str = Field(min_length=1)
    value: str | None = None
    value_from: ValueFrom | None = None


class EffectSize(ApiModel):
    """Kayenta's `effectSize`: how large a significant shift must also be to count. High
    needs the effect size at least `allowedIncrease`, Low at most `allowedDecrease`; a
    critical metric fails the run only when its High (Low) is at least `criticalIncrease`
    (at most `criticalDecrease`). An effect size that cannot be computed (a mean of 0) is
    not checked."""

    measure: Literal["meanRatio", "cles"] = "meanRatio"
    """`meanRatio`: mean(canary) / mean(baseline), thresholds default 1.0; `cles`: the
    share of (canary, baseline) pairs where the canary is higher, thresholds default 0.5."""
    allowed_increase: float | None = Field(default=None, ge=0)
    allowed_decrease: float | None = Field(default=None, ge=0)
    critical_increase: float | None = Field(default=None, ge=0)
    critical_decrease: float | None = Field(default=None, ge=0)


class Outliers(ApiModel):
    """Kayenta's `outliers`: `remove` drops each side's values outside
    [min(p1, p25 - outlierFactor * IQR), max(p99, p75 + outlierFactor * IQR)] before
    judging; `keep` (the default) judges them all."""

    strategy: Literal["remove", "keep"] = "keep"
    outlier_factor: float = Field(default=3.0, gt=0)


class MetricJudge(ApiModel):
    """Judge this metric by comparison instead of by a threshold: okra queries `provider`
    once for the canary version and once for the stable version (the baseline) over the
    same window, and compares the two samples with a Mann-Whitney U test, as Kayenta's
    NetflixACAJudge does (docs/judge.md). The query names its side with `{{judge.version}}`
    (or `{{judge.targetGroups}}`, `{{judge.side}}`); a CloudWatch query needs none: okra
    adds the `TargetGroup` dimension of each of the side's target groups."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.critical) && self.critical) || !has(self.effectSize) || "
                    "!(has(self.effectSize.criticalIncrease) || "
                    "has(self.effectSize.criticalDecrease))",
                    "message": "judge.effectSize.criticalIncrease and criticalDecrease are read "
                    "only for a critical metric: set judge.critical: true, or remove them",
                },
                {
                    "rule": "!(has(self.critical) && self.critical && has(self.mustHaveData) "
                    "&& self.mustHaveData)",
                    "message": "judge.mustHaveData: a critical metric already fails the run "
                    "when it has no data: remove mustHaveData (or critical)",
                },
            ]
        }
    }

    direction: Literal["increase", "decrease", "either"] = "either"
    """Which change is a regression (Kayenta `direction`): `increase` for latency and
    errors, `decrease` for throughput or success rate, `either` for both."""
    confidence: float = Field(default=0.98, gt=0.5, lt=1)
    """Confidence level of the test (Kayenta `confLevel`, Netflix 0.98)."""
    tolerance: float = Field(default=0.25, ge=0)
    """Kayenta's `tolerance`: High (Low) only when the shift's confidence interval lies
    wholly above (below) `tolerance` times the estimated shift (its Hodges-Lehmann
    estimate)."""
    critical: bool = False
    """A High or Low here fails the run whatever the score, and so does no data
    (Kayenta `critical`)."""
    must_have_data: bool = False
    """No data here counts as a failing metric in the score (Kayenta `mustHaveData`)."""
    nan_strategy: Literal["remove", "replace"] = "remove"
    """NaN values are dropped (`remove`) or read as 0 (`replace`) (Kayenta `nanStrategy`);
    either way a side without values is NoData."""
    effect_size: EffectSize | None = None
    outliers: Outliers | None = None
    groups: list[str] | None = None
    """Kayenta metric groups: the score is the weighted sum of each group's score
    (`judgment.groupWeights`); a metric without groups is in the group `default`."""
    min_samples: int = Field(default=10, ge=1)
    """Points each side needs before the metric can be judged; fewer is NoData."""
    min_total: float | None = Field(default=None, ge=0)
    """The least each side's values must sum to (requests, for a RequestCount-style
    query); less is NoData."""
    wait_for_data: str = Field(default="10m", pattern=DURATION_PATTERN)
    """How long a NoData metric keeps measuring (from the run's start) before it ends
    Inconclusive; NoData never passes."""
    lookback: str | None = Field(default=None, pattern=DURATION_PATTERN)
    """Window compared, ending at each measurement (default: since the run started)."""
    step: str = Field(default="1m", pattern=DURATION_PATTERN)
    """Prometheus range-query resolution: one point per step and series."""
    unit: str | None = None
    """Unit shown beside the medians in messages, e.g. `ms`."""


class Metric(ApiModel):
    """One measurement loop: query `provider` every `interval`, `count` times (forever
    when `interval` is set without `count`; once when neither is), judging each result
    with `successCondition` / `failureCondition`, or, with `judge`, comparing the canary
    with the baseline."""

    name: str = Field(min_length=1)
    interval: str | None = _duration_or_arg(
        "Time between measurements (a Go duration such as 30s or 5m, or {{args.NAME}})."
    )
    initial_delay: str | None = _duration_or_arg(
        "Wait this long after the run starts before the first measurement."
    )
    count: IntOrString | None = None
    success_condition: str | None = None
    failure_condition: str | None = None
    failure_limit: IntOrString | None = None
    """Failed measurements allowed before the metric fails (default 0; -1: no limit, which
    needs consecutiveSuccessLimit)."""
    inconclusive_limit: IntOrString | None = None
    consecutive_error_limit: IntOrString | None = None
    consecutive_success_limit: IntOrString | None = None
    """Successful measurements in a row that end the metric Successful (Argo Rollouts 1.8;
    default 0: not used). With `count`, reaching `count` without them ends the metric
    Inconclusive (Failed when failureLimit is -1)."""
    provider: MetricProvider
    judge: MetricJudge | None = None


class DryRun(ApiModel):
    metric_name: str
    """A regular expression (Go syntax, unanchored) matching the names of the metrics whose
    failures are recorded but never fail the run, e.g. `.*` for all; a rule matching no
    metric ends the run in Error."""


class MeasurementRetention(ApiModel):
    metric_name: str
    """A regular expression (Go syntax, unanchored) matching metric names; a rule matching no
    metric ends the run in Error."""
    limit: int = Field(ge=1)


class JudgmentSide(ApiModel):
    """One side of a comparison; `{{args.NAME}}` may be used."""

    version: str | None = None
    target_groups: list[str] | None = None
    """Target group ARNs (CloudWatch's `TargetGroup` dimension is derived from them)."""


class ScoreThresholds(ApiModel):
    """Kayenta's `scoreThresholds`: score >= pass passes, below marginal fails, between
    is Inconclusive (the Cell pauses until `okra promote` or `okra abort`)."""

    pass_: float = Field(default=90, ge=0, le=100, alias="pass")
    marginal: float = Field(default=75, ge=0, le=100)


class Judgment(ApiModel):
    """Run-wide settings of the metrics that have `judge`. Each side defaults to what the
    owning Cell says: its canary (or stable) version and that version's target groups."""

    canary: JudgmentSide | None = None
    baseline: JudgmentSide | None = None
    score_thresholds: ScoreThresholds | None = None
    group_weights: dict[str, float] | None = None
    """Kayenta's `groupWeights`, in percent, by `judge.groups` name; groups without a
    weight share what is left equally. At most 100 in all, and exactly 100 when every
    group has a weight."""


_JUDGMENT_NEEDS_JUDGE: dict[str, Any] = {
    "x-kubernetes-validations": [
        {
            "rule": "!has(self.judgment) || self.metrics.exists(m, has(m.judge))",
            "message": "spec.judgment is read only for metrics with judge, and no metric has "
            "one: add judge to the metrics to compare, or remove spec.judgment",
        }
    ]
}


class AnalysisTemplateSpec(ApiModel):
    model_config = ApiModel.model_config | {"json_schema_extra": _JUDGMENT_NEEDS_JUDGE}
    metrics: list[Metric] = Field(min_length=1, max_length=32)
    args: list[Argument] | None = None
    dry_run: list[DryRun] | None = None
    measurement_retention: list[MeasurementRetention] | None = None
    judgment: Judgment | None = None


class AnalysisTemplate(OkraObject):
    """Metrics to run, with arguments; instantiated as AnalysisRuns."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AnalysisTemplate",
        "analysistemplates",
        short_names=("okat",),
    )
    kind: str = "AnalysisTemplate"
    spec: AnalysisTemplateSpec


class ClusterAnalysisTemplate(OkraObject):
    """An AnalysisTemplate usable from every namespace."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "ClusterAnalysisTemplate",
        "clusteranalysistemplates",
        scope="Cluster",
        short_names=("okcat",),
    )
    kind: str = "ClusterAnalysisTemplate"
    spec: AnalysisTemplateSpec


class AnalysisRunSpec(ApiModel):
    model_config = ApiModel.model_config | {"json_schema_extra": _JUDGMENT_NEEDS_JUDGE}
    metrics: list[Metric] = Field(min_length=1, max_length=32)
    args: list[Argument] | None = None
    terminate: bool = False
    """Set to stop the run: in-flight measurements finish, no new ones start."""
    dry_run: list[DryRun] | None = None
    measurement_retention: list[MeasurementRetention] | None = None
    judgment: Judgment | None = None


class Measurement(ApiModel):
    phase: Phase
    message: str | None = None
    started_at: datetime.datetime | None = None
    finished_at: datetime.datetime | None = None
    value: str | None = None
    metadata: dict[str, str] | None = None
    resume_at: datetime.datetime | None = None


class SampleSummary(ApiModel):
    """One side's sample as the judge compared it (finite values, outliers removed): its
    size and the values a box plot shows."""

    count: int = 0
    median: float | None = None
    p90: float | None = None
    min: float | None = None
    p25: float | None = None
    p75: float | None = None
    max: float | None = None


class MetricJudgmentStatus(ApiModel):
    """The last comparison of a judged metric."""

    classification: Literal["Pass", "High", "Low", "NoData"]
    canary: SampleSummary
    baseline: SampleSummary
    p_value: float | None = None
    """Two-sided Mann-Whitney p-value of "no shift"."""
    effect_size: float | None = None
    """Relative change of the medians: (canary - baseline) / |baseline|."""
    ratio: float | None = None
    """mean(canary) / mean(baseline), Kayenta's reported deviation."""
    critical: bool | None = None
    critical_failure: bool | None = None
    """A critical High/Low past the critical effect size: it fails the run."""
    message: str | None = None


class RunJudgmentStatus(ApiModel):
    """The score of the run's judged metrics (Kayenta's canary score)."""

    outcome: Literal["Pass", "Marginal", "Fail", "NoData"]
    score: float | None = None
    """Weighted sum of the groups' shares of passing metrics, 0 to 100 (0 when a critical
    metric failed or half or more of the judged metrics have no data)."""
    pass_: float = Field(alias="pass")
    marginal: float
    message: str | None = None


class MetricResult(ApiModel):
    name: str
    phase: Phase
    measurements: list[Measurement] = Field(default_factory=list)
    message: str | None = None
    count: int = 0
    successful: int = 0
    failed: int = 0
    inconclusive: int = 0
    error: int = 0
    consecutive_error: int = 0
    consecutive_success: int = 0
    dry_run: bool | None = None
    metadata: dict[str, str] | None = None
    judgment: MetricJudgmentStatus | None = None


class RunSummary(ApiModel):
    count: int = 0
    successful: int = 0
    failed: int = 0
    inconclusive: int = 0
    error: int = 0


class AnalysisRunStatus(ApiModel):
    phase: Phase = ""
    message: str | None = None
    metric_results: list[MetricResult] | None = None
    started_at: datetime.datetime | None = None
    completed_at: datetime.datetime | None = None
    run_summary: RunSummary | None = None
    dry_run_summary: RunSummary | None = None
    observed_generation: int | None = None
    judgment: RunJudgmentStatus | None = None


class AnalysisRun(OkraObject):
    """One execution of metrics; its status holds every measurement, so a restarted
    controller continues exactly where the last one stopped."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AnalysisRun",
        "analysisruns",
        PrinterColumn("Status", "string", ".status.phase", "AnalysisRun status"),
        PrinterColumn("Message", "string", ".status.message", priority=1),
        short_names=("okar",),
    )
    kind: str = "AnalysisRun"
    spec: AnalysisRunSpec
    status: AnalysisRunStatus | None = None


class CheckAnalysisSpelling(ApiModel):
    """The original okra's spelling of a Check's spec, under `spec.analysis`: read as the
    same fields of the spec."""

    interval: str | None = Field(default=None, pattern=DURATION_PATTERN)
    provider: MetricProvider | None = None
    query: str | None = None
    success_condition: str | None = None
    failure_condition: str | None = None
    min: float | None = None
    max: float | None = None


STORED_INTERVAL = "30s"
"""The interval an earlier okra's schema stored by default in every Check, one written
under spec.analysis too: beside spec.analysis it is accepted with a warning (refusing it
would refuse the next apply of a Check stored then), any other value refused."""
_ANALYSIS_KEYS = (
    "interval",
    "provider",
    "query",
    "successCondition",
    "failureCondition",
    "min",
    "max",
)
"""The fields spec.analysis takes: each refused beside it, by name."""


class CheckSpec(ApiModel):
    """A standing metric check: `provider`'s query (templated with `{{.Vars.NAME}}`
    from `vars`) runs every `interval`; it passes when `successCondition` holds and
    `failureCondition` does not, and, for a numeric result, when it is within
    `min` / `max`. The same written under `spec.analysis` (`interval`, `query`, `max`, ...)
    is read as these fields."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": f"!has(self.analysis) || !has(self.{key})"
                    + (f" || self.{key} == '{STORED_INTERVAL}'" if key == "interval" else ""),
                    "message": f"spec.{key} beside spec.analysis (the original okra's spelling, "
                    f"read as the spec's own fields): write spec.analysis.{key}, or write the "
                    "whole check in spec without spec.analysis",
                }
                for key in _ANALYSIS_KEYS
            ]
        }
    }
    interval: str = Field(default_factory=lambda: "30s", pattern=DURATION_PATTERN)
    """Time between runs (default 30s, filled in by okra rather than the API server, so
    that one written beside spec.analysis is refused)."""
    provider: MetricProvider | None = None
    """Where the query runs. None: okra-manager's default metrics provider
    (`--default-metrics-provider`)."""
    query: str | None = None
    """The query, written beside the provider: it goes into the provider's
    `prometheus.query` or `datadog.query`."""
    vars: dict[str, str] = Field(default_factory=dict)
    success_condition: str | None = None
    failure_condition: str | None = None
    min: float | None = None
    max: float | None = None
    history_limit: int = Field(default=10, ge=1, le=100)
    analysis: CheckAnalysisSpelling | None = None
    """Another spelling of the spec's fields, `spec.analysis.{interval, query, max, ...}`: read
    as them."""

    def unused_vars(self) -> list[str]:
        """The names in `vars` that no `{{.Vars.NAME}}` of the provider or the query (or
        of spec.analysis's, folded in) refers to: a var okra would not read (a misspelt
        name, most often)."""
        written = json.dumps(
            [
                self.provider.model_dump(mode="json") if self.provider else None,
                self.query,
                self.analysis.model_dump(mode="json") if self.analysis else None,
            ]
        )
        used = set(re.findall(r"\.Vars\.([A-Za-z_][A-Za-z0-9_]*)", written))
        return sorted(set(self.vars) - used)

    @model_validator(mode="after")
    def _analysis_spelling(self) -> CheckSpec:
        a = self.analysis
        if a is None:
            return self
        for key in ("provider", "query", "success_condition", "failure_condition", "min", "max"):
            if getattr(a, key) is not None:
                setattr(self, key, getattr(a, key))
        if a.interval is not None:
            self.interval = a.interval
        self.analysis = None
        return self


class CheckResult(ApiModel):
    phase: Phase
    value: str | None = None
    message: str | None = None
    time: datetime.datetime


class CheckAnalysisStatus(ApiModel):
    observed_hash: str | None = None
    results: list[CheckResult] = Field(default_factory=list)


class CheckStatus(ApiModel):
    last_passed: bool | None = None
    last_run_time: datetime.datetime | None = None
    analysis: CheckAnalysisStatus | None = None
    conditions: list[Condition] | None = None
    observed_generation: int | None = None


class Check(OkraObject):
    """A metric check that runs on its own schedule; `status.lastPassed` says whether
    the last run passed, `status.analysis.observedHash` which spec it ran (the value of
    the `analysis-hash` annotation at the time)."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "Check",
        "checks",
        PrinterColumn("Passed", "boolean", ".status.lastPassed"),
        PrinterColumn("Last-Run", "date", ".status.lastRunTime"),
    )
    kind: str = "Check"
    spec: CheckSpec
    status: CheckStatus | None = None


ANALYSIS_MODELS: tuple[type[ApiModel], ...] = (
    AnalysisTemplate,
    ClusterAnalysisTemplate,
    AnalysisRun,
    Check,
)


def dump(model: ApiModel) -> dict[str, Any]:
    """The object as the API server wants it: aliases, no unset optionals."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")
