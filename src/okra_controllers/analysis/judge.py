"""The canary judge: compare the canary version's samples of a metric with the stable
version's (the baseline) and score the comparison, as Kayenta's NetflixACAJudge does.

Pure functions, no I/O: `classify` judges one metric, `score` judges the run. Where a
setting has Kayenta's name it has Kayenta's meaning; where okra is stricter it says so
(docs/judge.md lists every difference, each failing safe).

One metric (`classify`)
    NaN is dropped (`nan_strategy` "remove", Kayenta's default) or read as 0 ("replace").
    An infinite canary value on the regression's side (+Inf where the metric must not
    increase, -Inf where it must not decrease; `either`: both) is a High (Low) at once,
    whatever else the samples hold (a p99 past the histogram's last bucket is a
    regression, and cannot be compared); for a critical metric it is a critical failure
    (its mean ratio is infinite). The canary's ±Inf on the harmless side are dropped
    (they could only make it look better), and so are all of the baseline's: the
    baseline is judged by its finite values, and an infinite one never excuses the
    canary. Kayenta keeps them all, and its root solver then answers NaN, a Pass.
    With `outlier_factor`, values outside Kayenta's IQR fences
    are dropped (its `outliers.strategy: remove`). Either side then with fewer than
    `min_samples` values (Kayenta: 1, okra: 10 by default), or whose values sum to less
    than `min_total`, is **NoData** (with "replace" too: Kayenta passes an empty side
    there, okra never passes on no data). Both sides the same values, or one value
    everywhere, is a Pass. Otherwise, as Kayenta's MannWhitneyClassifier:

    - the tolerated shift is `tolerance * |HL|`, HL the Hodges-Lehmann estimate of the
      shift (the median of the pairwise differences canary - baseline);
    - **High** when the shift's confidence interval lies wholly above it (asked as: the
      one-sided Mann-Whitney test of that shift rejects at (1 - confidence) / 2,
      scale-free; analysis/shift.py) and the effect size (`effect_measure`: mean ratio
      canary/baseline, or CLES) is at least `allowed_increase`; **Low** the same
      downwards with `allowed_decrease`. An effect size that cannot be computed (a mean
      of 0) is not checked. `direction` keeps only the regression's side.
    - a critical metric's High (Low) is a critical failure when its effect size is at
      least `critical_increase` (at most `critical_decrease`).

The run (`score`)
    Kayenta's WeightedSumScorer. A critical failure, or a critical metric without data,
    makes the score 0 (Fail). So does NoData in half or more of the judged metrics
    (a metric with `must_have_data` counts as failing instead, as in Kayenta). Otherwise
    each group scores 100 * passing / (passing + High + Low + must-have-data NoData);
    a group whose metrics are all NoData scores 0 (Kayenta: 100; okra never passes on no
    data). The score is the weighted sum of the group scores: `group_weights` in
    percent, groups without a weight share what is left equally; a metric without groups
    is in the group `default`. Score >= `pass_score` is a Pass, >= `marginal_score`
    Marginal (Inconclusive: a person decides), below it Fail. A run with no judged
    metric at all is NoData (Inconclusive), never a Pass.

numpy and scipy are imported on the first judgment, not with the module: importing
`scipy.stats` takes about 1.5 s and 80 MiB, which a manager that never judges should not pay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from okra_controllers.analysis import shift

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MARGINAL_SCORE",
    "DEFAULT_MIN_SAMPLES",
    "DEFAULT_OUTLIER_FACTOR",
    "DEFAULT_PASS_SCORE",
    "DEFAULT_TOLERANCE",
    "NODATA_THRESHOLD",
    "Classification",
    "Direction",
    "EffectMeasure",
    "MetricJudgment",
    "RunScore",
    "Scored",
    "Summary",
    "classify",
    "default_effect",
    "describe",
    "score",
    "summarize",
]

Classification = Literal["Pass", "High", "Low", "NoData"]
Direction = Literal["increase", "decrease", "either"]
Outcome = Literal["Pass", "Marginal", "Fail", "NoData"]
EffectMeasure = Literal["meanRatio", "cles"]
NaNStrategy = Literal["remove", "replace"]

DEFAULT_CONFIDENCE = 0.98
DEFAULT_TOLERANCE = 0.25
DEFAULT_PASS_SCORE = 90.0
DEFAULT_MARGINAL_SCORE = 75.0
DEFAULT_MIN_SAMPLES = 10
DEFAULT_OUTLIER_FACTOR = 3.0
NODATA_THRESHOLD = 50.0
"""Percent of judged metrics without data at which the run fails (Kayenta's)."""
DEFAULT_GROUP = "default"


def default_effect(measure: EffectMeasure) -> float:
    """Kayenta's default effect-size threshold: a ratio of 1, or a CLES of 0.5."""
    return 0.5 if measure == "cles" else 1.0


@dataclass(frozen=True)
class Summary:
    """One side's sample, summarised (after NaN handling and outlier removal)."""

    count: int
    median: float | None
    p90: float | None
    total: float
    low: float | None = None
    """The smallest value; `high` the largest, `q1` and `q3` the quartiles (what a box
    plot of the side shows)."""
    q1: float | None = None
    q3: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class MetricJudgment:
    classification: Classification
    canary: Summary
    baseline: Summary
    p_value: float | None
    """Two-sided Mann-Whitney p-value of "no shift" (None without data)."""
    effect_size: float | None
    """(median(canary) - median(baseline)) / |median(baseline)|; None if undefined."""
    reason: str
    """Why, in words: what was missing for NoData, or the comparison."""
    critical: bool = False
    """A critical failure: a critical metric High (Low) with an effect size at least
    `critical_increase` (at most `critical_decrease`)."""
    ratio: float | None = None
    """mean(canary) / mean(baseline), Kayenta's reported deviation (None when undefined)."""
    estimate: float | None = None
    """Hodges-Lehmann estimate of the shift canary - baseline."""
    infinite: int = 0
    """Canary values that were infinite on the regression's side: when not 0 they decided
    the classification (and `reason` says so), and the summaries are of the finite ones."""


@dataclass(frozen=True)
class Scored:
    """One judged metric as the run's score sees it."""

    name: str
    classification: Classification
    critical: bool = False
    """The metric is critical (`judge.critical`)."""
    critical_failure: bool = True
    """For a critical High/Low: its effect size is past the critical threshold."""
    must_have_data: bool = False
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunScore:
    outcome: Outcome
    score: float | None
    """0 to 100; None when there was no judged metric."""
    judged: int
    passed: int
    failed_critical: tuple[str, ...]
    reason: str = ""
    groups: tuple[tuple[str, float], ...] = ()
    """Each group's score."""


def _clean(values: Iterable[float], nan_strategy: NaNStrategy) -> np.ndarray:
    """The values with NaN removed or read as 0; ±Inf kept."""
    import numpy as np

    arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    if nan_strategy == "replace":
        return np.where(np.isnan(arr), 0.0, arr)
    kept: np.ndarray = arr[~np.isnan(arr)]
    return kept


def _finite(values: np.ndarray) -> np.ndarray:
    import numpy as np

    finite: np.ndarray = values[np.isfinite(values)]
    return finite


def _infinite(
    canary: np.ndarray, direction: Direction, cs: Summary, bs: Summary, critical: bool
) -> MetricJudgment | None:
    """High (Low) when the canary has a +Inf (-Inf) value on the regression's side, a
    critical failure for a critical metric; None when it has none."""
    import numpy as np

    sides: tuple[tuple[Classification, str, Direction], ...] = (
        ("High", "+", "decrease"),
        ("Low", "-", "increase"),
    )
    for label, sign, harmless in sides:
        n = int(np.count_nonzero(canary == (np.inf if sign == "+" else -np.inf)))
        if n and direction != harmless:
            reason = (
                label
                + (" (critical)" if critical else "")
                + f": {n} of {canary.size} canary values are {sign}Inf"
            )
            return MetricJudgment(label, cs, bs, None, None, reason, critical=critical, infinite=n)
    return None


def summarize(values: np.ndarray) -> Summary:
    import numpy as np

    if values.size == 0:
        return Summary(0, None, None, 0.0)
    low, q1, median, q3, p90, high = (
        float(v) for v in np.percentile(values, [0, 25, 50, 75, 90, 100])
    )
    return Summary(int(values.size), median, p90, float(values.sum()), low, q1, q3, high)


def _or_none(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else value


def _too_little(cs: Summary, bs: Summary, min_samples: int, min_total: float | None) -> list[str]:
    """What either side lacks to be judged (empty: enough)."""
    short = [
        f"{side} has {s.count} samples (at least {max(min_samples, 1)} needed)"
        for side, s in (("canary", cs), ("baseline", bs))
        if s.count < max(min_samples, 1)
    ]
    if min_total is not None:
        short += [
            f"{side} totals {s.total:g} (at least {min_total:g} needed)"
            for side, s in (("canary", cs), ("baseline", bs))
            if s.total < min_total
        ]
    return short


def classify(
    canary: Iterable[float],
    baseline: Iterable[float],
    *,
    direction: Direction = "either",
    confidence: float = DEFAULT_CONFIDENCE,
    tolerance: float = DEFAULT_TOLERANCE,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    min_total: float | None = None,
    nan_strategy: NaNStrategy = "remove",
    outlier_factor: float | None = None,
    effect_measure: EffectMeasure = "meanRatio",
    allowed_increase: float | None = None,
    allowed_decrease: float | None = None,
    critical: bool = False,
    critical_increase: float | None = None,
    critical_decrease: float | None = None,
) -> MetricJudgment:
    """Judge one metric's canary sample against its baseline sample."""
    import numpy as np

    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if tolerance < 0:
        raise ValueError(f"tolerance must not be negative, not {tolerance}")
    if outlier_factor is not None and outlier_factor <= 0:
        raise ValueError(f"outlierFactor must be greater than 0, not {outlier_factor}")
    raw = _clean(canary, nan_strategy)
    x, y = _finite(raw), _finite(_clean(baseline, nan_strategy))
    if outlier_factor is not None:
        x, y = shift.iqr_keep(x, outlier_factor), shift.iqr_keep(y, outlier_factor)
    cs, bs = summarize(x), summarize(y)
    infinite = _infinite(raw, direction, cs, bs, critical)
    if infinite is not None:  # fails safe: no data or test can excuse an infinite canary
        return infinite
    short = _too_little(cs, bs, min_samples, min_total)
    if short:
        return MetricJudgment("NoData", cs, bs, None, None, "; ".join(short))
    assert cs.median is not None
    assert bs.median is not None
    effect = (cs.median - bs.median) / abs(bs.median) if bs.median != 0 else None
    ratio = _or_none(shift.mean_ratio(x, y))
    if x.size == y.size and np.array_equal(np.sort(x), np.sort(y)):
        return MetricJudgment("Pass", cs, bs, 1.0, effect, "the same values", ratio=1.0)
    p_value = shift.p_value(x, y, "two-sided")
    alpha = (1.0 - confidence) / 2
    if p_value >= 2 * alpha:
        # Not even a shift of zero is significant, and moving the canary towards the
        # baseline by the tolerance only weakens the evidence: a Pass without more tests.
        return MetricJudgment("Pass", cs, bs, p_value, effect, "Pass", ratio=ratio)
    estimate = shift.hodges_lehmann(x, y)
    allowed = tolerance * abs(estimate)
    size = shift.cles(x, y) if effect_measure == "cles" else shift.mean_ratio(x, y)
    default = default_effect(effect_measure)
    up = default if allowed_increase is None else allowed_increase
    down = default if allowed_decrease is None else allowed_decrease
    high = (
        direction != "decrease"
        and (math.isnan(size) or size >= up)
        and shift.p_value(x, y, "greater", allowed) < alpha
    )
    low = (
        not high
        and direction != "increase"
        and (math.isnan(size) or size <= down)
        and shift.p_value(x, y, "less", -allowed) < alpha
    )
    label: Classification = "High" if high else "Low" if low else "Pass"
    crit_up = default if critical_increase is None else critical_increase
    crit_down = default if critical_decrease is None else critical_decrease
    failure = critical and (
        (high and (math.isnan(size) or size >= crit_up))
        or (low and (math.isnan(size) or size <= crit_down))
    )
    reason = label + (" (critical)" if failure else "")
    return MetricJudgment(
        label, cs, bs, p_value, effect, reason, critical=failure, ratio=ratio, estimate=estimate
    )


def _group_weights(groups: Sequence[str], weights: Mapping[str, float]) -> dict[str, float]:
    unweighted = [g for g in groups if g not in weights]
    share = (100.0 - sum(weights.values())) / len(unweighted) if unweighted else 0.0
    return {g: weights.get(g, share) for g in groups}


def score(
    judgments: Sequence[Scored | tuple[str, Classification, bool]],
    *,
    pass_score: float = DEFAULT_PASS_SCORE,
    marginal_score: float = DEFAULT_MARGINAL_SCORE,
    group_weights: Mapping[str, float] | None = None,
) -> RunScore:
    """The run's outcome from each judged metric (a `Scored`, or (name, classification,
    critical))."""
    metrics = [j if isinstance(j, Scored) else Scored(*j) for j in judgments]
    if not metrics:
        return RunScore("NoData", None, 0, 0, (), "no judged metric")
    critical = tuple(
        m.name
        for m in metrics
        if m.critical
        and (m.classification == "NoData" or (m.classification != "Pass" and m.critical_failure))
    )
    counted = [m for m in metrics if m.classification != "NoData" or m.must_have_data]
    passed = sum(1 for m in counted if m.classification == "Pass")
    names: list[str] = []
    for m in metrics:
        for g in m.groups or (DEFAULT_GROUP,):
            if g not in names:
                names.append(g)
    group_scores: list[tuple[str, float]] = []
    for g in names:
        members = [m for m in counted if g in (m.groups or (DEFAULT_GROUP,))]
        good = sum(1 for m in members if m.classification == "Pass")
        group_scores.append((g, 100.0 * good / len(members) if members else 0.0))
    nodata = sum(1 for m in metrics if m.classification == "NoData" and not m.must_have_data)
    reason = ""
    if critical:
        value, reason = 0.0, f"critical: {', '.join(critical)}"
    elif 100.0 * nodata / len(metrics) >= NODATA_THRESHOLD:
        value = 0.0
        reason = f"{nodata} of {len(metrics)} judged metrics have no data (50 % or more fails)"
    else:
        weights = _group_weights(names, group_weights or {})
        value = round(sum(s * weights[g] / 100.0 for g, s in group_scores), 2)
    outcome: Outcome
    if reason:  # a critical failure, or too little data: whatever the thresholds
        outcome = "Fail"
    elif value >= pass_score:
        outcome = "Pass"
    elif value >= marginal_score:
        outcome = "Marginal"
    else:
        outcome = "Fail"
    return RunScore(outcome, value, len(counted), passed, critical, reason, tuple(group_scores))


def _number(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    text = f"{value:.4g}"
    return f"{text} {unit}" if unit else text


def describe(name: str, j: MetricJudgment, unit: str = "") -> str:
    """One line saying what the judge saw, for status messages and Events:
    `latency-p99 High: canary median 212 ms vs baseline 161 ms, +32 %, p = 0.001`."""
    if j.classification == "NoData":
        return f"{name} NoData: {j.reason}"
    if j.infinite:
        return (
            f"{name} {j.reason}; finite canary median {_number(j.canary.median, unit)} vs "
            f"baseline {_number(j.baseline.median, unit)}"
        )
    change = "" if j.effect_size is None else f", {j.effect_size * 100:+.0f} %"
    p = "" if j.p_value is None else f", p = {j.p_value:.2g}"
    crit = " (critical)" if j.critical else ""
    return (
        f"{name} {j.classification}{crit}: canary median {_number(j.canary.median, unit)} vs "
        f"baseline {_number(j.baseline.median, unit)}{change}{p}"
    )
