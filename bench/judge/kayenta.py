"""Kayenta's NetflixACAJudge metric classifier, ported to Python for the bench only.

What `make bench-judge` sets beside okra's judge: Kayenta's MannWhitneyClassifier
(kayenta-judge) on its MannWhitney confidence interval (kayenta-mannwhitney), including
what makes it Kayenta's: the interval and the Hodges-Lehmann estimate are roots found by a
Brent solver with an absolute tolerance of 1e-4, the bounds are `tolerance * |estimate|`,
the effect size is the mean ratio, and two one-valued samples get Gaussian noise of
1e-5 of their value. Read from spinnaker/kayenta; okra's own judge is
src/okra_controllers/analysis/judge.py and does not use this.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

import numpy as np
from scipy.stats import norm, rankdata  # type: ignore[import-untyped]

Label = Literal["Pass", "High", "Low", "NoData"]

_TOLERANCE = 1e-4
_EPSILON = 2.220446049250313e-16


def wilcoxon_diff(mu: float, quantile: float, x: np.ndarray, y: np.ndarray) -> float:
    """Kayenta's MannWhitney.wilcoxonDiff: the continuity-corrected, tie-corrected
    standardised rank-sum statistic of x - mu against y, less `quantile`."""
    m, n = float(x.size), float(y.size)
    ranks = rankdata(np.concatenate((x - mu, y)))
    dz = float(ranks[: x.size].sum()) - m * (m + 1) / 2 - m * n / 2
    correction = math.copysign(0.5, dz) if dz != 0 else 0.0
    _, counts = np.unique(ranks, return_counts=True)
    ties = float((counts.astype(float) ** 3 - counts).sum())
    sigma = math.sqrt((m * n / 12) * ((m + n + 1) - ties / ((m + n) * (m + n - 1))))
    if sigma == 0:
        raise ValueError("cannot compute confidence interval when all observations are tied")
    return (dz - correction) / sigma - quantile


def brent(ax: float, bx: float, fa: float, fb: float, f: Callable[[float], float]) -> float:
    """Kayenta's BrentSolver.solve (R's zeroin): absolute tolerance 1e-4."""
    a, b, c, fc = ax, bx, ax, fa
    if fa == 0:
        return a
    if fb == 0:
        return b
    for _ in range(1001):
        prev_step = b - a
        if abs(fc) < abs(fb):
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol_act = 2 * _EPSILON * abs(b) + _TOLERANCE / 2
        new_step = (c - b) / 2
        if abs(new_step) <= tol_act or fb == 0:
            return b
        if abs(prev_step) >= tol_act and abs(fa) > abs(fb):
            cb = c - b
            if a == c:
                t1 = fb / fa
                p = cb * t1
                q = 1.0 - t1
            else:
                q = fa / fc
                t1 = fb / fc
                t2 = fb / fa
                p = t2 * (cb * q * (q - t1) - (b - a) * (t1 - 1.0))
                q = (q - 1.0) * (t1 - 1.0) * (t2 - 1.0)
            if p > 0:
                q = -q
            else:
                p = -p
            if p < (0.75 * cb * q - abs(tol_act * q) / 2) and p < abs(prev_step * q / 2):
                new_step = p / q
        if abs(new_step) < tol_act:
            new_step = tol_act if new_step > 0 else -tol_act
        a, fa = b, fb
        b += new_step
        fb = f(b)
        if (fb > 0 and fc > 0) or (fb < 0 and fc < 0):
            c, fc = a, fa
    return b


def interval(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Kayenta's MannWhitney.mannWhitneyUTest: (lower, upper, estimate) of x - y."""
    alpha = 1.0 - confidence
    mu_min, mu_max = float(x.min() - y.max()), float(x.max() - y.min())

    def root(zq: float) -> float:
        f_lower = wilcoxon_diff(mu_min, zq, x, y)
        f_upper = wilcoxon_diff(mu_max, zq, x, y)
        if f_lower <= 0:
            return mu_min
        if f_upper >= 0:
            return mu_max
        return brent(mu_min, mu_max, f_lower, f_upper, lambda mu: wilcoxon_diff(mu, zq, x, y))

    z = float(norm.ppf(alpha / 2))
    low, high = root(-z), root(z)
    f_lower, f_upper = wilcoxon_diff(mu_min, 0, x, y), wilcoxon_diff(mu_max, 0, x, y)
    estimate = brent(mu_min, mu_max, f_lower, f_upper, lambda mu: wilcoxon_diff(mu, 0, x, y))
    return low, high, estimate


def classify(
    canary: np.ndarray,
    baseline: np.ndarray,
    *,
    direction: Literal["increase", "decrease", "either"] = "either",
    confidence: float = 0.98,
    tolerance: float = 0.25,
    allowed: tuple[float, float] = (1.0, 1.0),
    rng: np.random.Generator | None = None,
) -> Label:
    """Kayenta's MannWhitneyClassifier.classify with `nanStrategy: remove`, not critical,
    the mean ratio as effect size; `allowed` is (allowedDecrease, allowedIncrease)."""
    x, y = canary[~np.isnan(canary)], baseline[~np.isnan(baseline)]
    if x.size == 0 or y.size == 0:
        return "NoData"
    if x.size == y.size and np.array_equal(np.sort(x), np.sort(y)):
        return "Pass"
    if np.unique(np.concatenate((x, y))).size == 1:
        return "Pass"
    if np.unique(x).size == 1 and np.unique(y).size == 1:
        rng = rng or np.random.default_rng()
        x = x + rng.normal(0.0, abs(x[0]) * 1e-5, x.size)
        y = y + rng.normal(0.0, abs(y[0]) * 1e-5, y.size)
    low, high, estimate = interval(x, y, confidence)
    bound = tolerance * abs(estimate)
    mx, my = float(x.mean()), float(y.mean())
    ratio = math.nan if mx == 0 or my == 0 else mx / my
    if direction != "decrease" and low > bound and (math.isnan(ratio) or ratio >= allowed[1]):
        return "High"
    if direction != "increase" and high < -bound and (math.isnan(ratio) or ratio <= allowed[0]):
        return "Low"
    return "Pass"
