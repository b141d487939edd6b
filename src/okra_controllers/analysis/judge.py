"""The canary judge: compare the canary version's samples of a metric with the stable
version's (the baseline) and score the comparison, as Kayenta's NetflixACAJudge does.

Pure functions, no I/O: `classify` judges one metric, `score` judges the run.

One metric (`classify`)
    Non-finite values (NaN, ±Inf) are dropped first (Kayenta's `nanStrategy: remove`).
    Either side with fewer than `min_samples` values, or whose values sum to less than
    `min_total` (a RequestCount-style metric: so many requests at least), is **NoData**:
    too little evidence to pass or fail. Otherwise the Mann-Whitney U test
    (`scipy.stats.mannwhitneyu`, tie-corrected) asks whether the canary's values are
    shifted from the baseline's by more than the tolerance:

    - the tolerated shift is `tolerance * |median(baseline)|` (Kayenta's `tolerance`,
      0.25: a quarter of the baseline's median);
    - **High** when the canary, less the tolerated shift, is still greater than the
      baseline at the confidence level (one-sided p < (1 - confidence) / 2, i.e. the
      two-sided confidence interval of the shift lies wholly above the tolerance, which is
      Kayenta's rule); **Low** the same downwards; otherwise **Pass**;
    - `direction` says which change is a regression: `increase` (latency, errors) turns a
      Low into a Pass, `decrease` (throughput, success rate) a High, `either` keeps both.

    Both sides all one and the same value is a Pass (p = 1), whatever the tolerance.
    The reported p-value is the plain two-sided test of "no shift"; the effect size is the
    relative change of the medians, (canary - baseline) / |baseline| (None when the
    baseline median is 0).

The run (`score`)
    NoData metrics are left out; the score is 100 * passing / judged. A **critical** metric
    that is High or Low fails the run by itself (score 0); a critical metric without data
    keeps the run from passing (NoData at best: it cannot be vouched for). Score >=
    `pass_score` is a Pass, >= `marginal_score` Marginal (the run is Inconclusive: a person
    decides), below it Fail.
    A run with no judged metric at all is NoData (Inconclusive), never a Pass.

numpy and scipy are imported on the first judgment, not with the module: importing
`scipy.stats` takes about 1.5 s and 80 MiB, which a manager that never judges should not pay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MARGINAL_SCORE",
    "DEFAULT_MIN_SAMPLES",
    "DEFAULT_PASS_SCORE",
    "DEFAULT_TOLERANCE",
    "Classification",
    "Direction",
    "MetricJudgment",
    "RunScore",
    "Summary",
    "classify",
    "describe",
    "score",
    "summarize",
]

Classification = Literal["Pass", "High", "Low", "NoData"]
Direction = Literal["increase", "decrease", "either"]
Outcome = Literal["Pass", "Marginal", "Fail", "NoData"]

DEFAULT_CONFIDENCE = 0.98
DEFAULT_TOLERANCE = 0.25
DEFAULT_PASS_SCORE = 90.0
DEFAULT_MARGINAL_SCORE = 75.0
DEFAULT_MIN_SAMPLES = 10


@dataclass(frozen=True)
class Summary:
    """One side's sample, summarised (after dropping non-finite values)."""

    count: int
    median: float | None
    p90: float | None
    total: float


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


@dataclass(frozen=True)
class RunScore:
    outcome: Outcome
    score: float | None
    """0 to 100; None when no metric had data."""
    judged: int
    passed: int
    failed_critical: tuple[str, ...]


def _finite(values: Iterable[float]) -> np.ndarray:
    import numpy as np

    arr = np.asarray(values if isinstance(values, np.ndarray) else list(values), dtype=float)
    finite: np.ndarray = arr[np.isfinite(arr)]
    return finite


def summarize(values: np.ndarray) -> Summary:
    import numpy as np

    if values.size == 0:
        return Summary(0, None, None, 0.0)
    median, p90 = np.percentile(values, [50, 90])
    return Summary(int(values.size), float(median), float(p90), float(values.sum()))


def _p(x: np.ndarray, y: np.ndarray, alternative: Literal["two-sided", "less", "greater"]) -> float:
    import numpy as np
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    if np.ptp(np.concatenate((x, y))) == 0:
        return 1.0  # one value everywhere: no evidence of any shift
    p = float(mannwhitneyu(x, y, alternative=alternative, method="asymptotic").pvalue)
    return 1.0 if math.isnan(p) else p


def classify(
    canary: Iterable[float],
    baseline: Iterable[float],
    *,
    direction: Direction = "either",
    confidence: float = DEFAULT_CONFIDENCE,
    tolerance: float = DEFAULT_TOLERANCE,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    min_total: float | None = None,
) -> MetricJudgment:
    """Judge one metric's canary sample against its baseline sample."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence}")
    if tolerance < 0:
        raise ValueError(f"tolerance must not be negative, not {tolerance}")
    x, y = _finite(canary), _finite(baseline)
    cs, bs = summarize(x), summarize(y)
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
    if short:
        return MetricJudgment("NoData", cs, bs, None, None, "; ".join(short))
    assert cs.median is not None
    assert bs.median is not None
    effect = (cs.median - bs.median) / abs(bs.median) if bs.median != 0 else None
    p_value = _p(x, y, "two-sided")
    alpha = (1.0 - confidence) / 2
    if p_value >= 2 * alpha:
        # Not even a shift of zero is significant, and moving the canary towards the
        # baseline by the tolerance only weakens the evidence: a Pass without more tests.
        return MetricJudgment("Pass", cs, bs, p_value, effect, "Pass")
    allowed = tolerance * abs(bs.median)
    high = direction != "decrease" and _p(x - allowed, y, "greater") < alpha
    low = direction != "increase" and _p(x + allowed, y, "less") < alpha
    label: Classification = "High" if high else "Low" if low else "Pass"
    return MetricJudgment(label, cs, bs, p_value, effect, label)


def score(
    judgments: Sequence[tuple[str, Classification, bool]],
    *,
    pass_score: float = DEFAULT_PASS_SCORE,
    marginal_score: float = DEFAULT_MARGINAL_SCORE,
) -> RunScore:
    """The run's outcome from (metric name, classification, critical) of each metric."""
    judged = [(n, c, crit) for n, c, crit in judgments if c != "NoData"]
    critical = tuple(n for n, c, crit in judged if crit and c in ("High", "Low"))
    passed = sum(1 for _, c, _ in judged if c == "Pass")
    if not judged:
        return RunScore("NoData", None, 0, 0, ())
    value = 0.0 if critical else round(100.0 * passed / len(judged), 2)
    outcome: Outcome
    if critical or value < marginal_score:
        outcome = "Fail"
    elif value < pass_score:
        outcome = "Marginal"
    elif any(crit and c == "NoData" for _, c, crit in judgments):
        outcome = "NoData"
    else:
        outcome = "Pass"
    return RunScore(outcome, value, len(judged), passed, critical)


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
    change = "" if j.effect_size is None else f", {j.effect_size * 100:+.0f} %"
    p = "" if j.p_value is None else f", p = {j.p_value:.2g}"
    return (
        f"{name} {j.classification}: canary median {_number(j.canary.median, unit)} vs "
        f"baseline {_number(j.baseline.median, unit)}{change}{p}"
    )
