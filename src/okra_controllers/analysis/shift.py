"""The statistics under the canary judge (analysis/judge.py), scale-free.

Kayenta's MannWhitneyClassifier asks for the confidence interval of the location shift
between canary and baseline (the values d such that `canary - d` and `baseline` do not
differ at the confidence level) and its Hodges-Lehmann estimate, both found by a root
solver whose absolute tolerance is 1e-4. At error-rate scales (values near 1e-4) that
tolerance is as large as the data, and the interval can come back with its lower end
above its upper end (Kayenta's own "Intermediate Values" test case).

Here nothing has an absolute tolerance:

- the Hodges-Lehmann estimate is the median of the pairwise differences, computed exactly;
- "the interval lies above b" is asked as "the one-sided Mann-Whitney test of a shift b
  rejects at the confidence level" (`scipy.stats.mannwhitneyu`, tie-corrected, with the
  continuity correction Kayenta's statistic uses): the same question, answered at any scale;
- `shift_interval` finds each end by bisection on the shift until the two bounds are
  neighbouring floating-point numbers, for reports and for the port of Kayenta's suites.

Multiplying both samples by any positive factor multiplies every shift by it and changes
no p-value, ratio or rank: no decision depends on the metric's unit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

Alternative = Literal["two-sided", "less", "greater"]

_EXACT_PAIRS = 4_000_000
"""Above this many pairs the estimate is found by bisection instead of materialising them."""


def p_value(x: np.ndarray, y: np.ndarray, alternative: Alternative, shift: float = 0.0) -> float:
    """Mann-Whitney p-value of "x - shift and y have the same location"."""
    import numpy as np
    from scipy.stats import mannwhitneyu  # type: ignore[import-untyped]

    xs = x - shift if shift else x
    if np.ptp(np.concatenate((xs, y))) == 0:
        return 1.0  # one value everywhere: no evidence of any shift
    p = float(mannwhitneyu(xs, y, alternative=alternative, method="asymptotic").pvalue)
    return 1.0 if math.isnan(p) else p


def _count_at_most(x: np.ndarray, y_sorted: np.ndarray, t: float) -> int:
    """How many pairwise differences x_i - y_j are <= t."""
    import numpy as np

    return int((y_sorted.size - np.searchsorted(y_sorted, x - t, side="left")).sum())


def hodges_lehmann(x: np.ndarray, y: np.ndarray) -> float:
    """The Hodges-Lehmann estimate of the shift x - y: the median of all x_i - y_j."""
    import numpy as np

    if x.size * y.size <= _EXACT_PAIRS:
        return float(np.median(np.subtract.outer(x, y)))
    y_sorted = np.sort(y)
    total = x.size * y.size

    def kth(k: int) -> float:  # the k-th smallest difference (0-based), by bisection
        lo, hi = float(x.min() - y.max()), float(x.max() - y.min())
        if _count_at_most(x, y_sorted, lo) > k:
            return lo
        while True:  # count(lo) <= k < count(hi)
            mid = lo + (hi - lo) / 2
            if mid in (lo, hi):
                return hi
            if _count_at_most(x, y_sorted, mid) > k:
                hi = mid
            else:
                lo = mid

    if total % 2:
        return kth(total // 2)
    return (kth(total // 2 - 1) + kth(total // 2)) / 2


def _bisect(x: np.ndarray, y: np.ndarray, alpha: float, upper: bool) -> float:
    """The end of the shift's confidence interval: the shift where the one-sided test
    ("greater" for the lower end, "less" for the upper end) stops rejecting at alpha."""
    lo, hi = float(x.min() - y.max()), float(x.max() - y.min())
    side: Alternative = "less" if upper else "greater"

    def rejects(d: float) -> bool:
        return p_value(x, y, side, d) < alpha

    # The lower end: tests of shifts below it reject ("greater"), above it do not.
    # The upper end: tests of shifts above it reject ("less"), below it do not.
    if upper:
        if not rejects(hi):
            return hi
        if rejects(lo):
            return lo
    else:
        if not rejects(lo):
            return lo
        if rejects(hi):
            return hi
    for _ in range(200):
        mid = lo + (hi - lo) / 2
        if mid in (lo, hi):
            break
        if rejects(mid) != upper:
            lo = mid
        else:
            hi = mid
    # The test's answer changes only where x - d ties with y: at a pairwise difference.
    return _nearest_difference(x, y, lo + (hi - lo) / 2)


def _nearest_difference(x: np.ndarray, y: np.ndarray, t: float) -> float:
    """The pairwise difference x_i - y_j nearest to t."""
    import numpy as np

    ys = np.sort(y)
    at = np.searchsorted(ys, x - t)
    below = ys[np.clip(at - 1, 0, ys.size - 1)]
    above = ys[np.clip(at, 0, ys.size - 1)]
    candidates = np.concatenate((x - below, x - above))
    return float(candidates[np.argmin(np.abs(candidates - t))])


def shift_interval(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """(lower, upper, estimate) of the shift x - y at the two-sided confidence level."""
    alpha = (1.0 - confidence) / 2
    estimate = hodges_lehmann(x, y)
    return _bisect(x, y, alpha, upper=False), _bisect(x, y, alpha, upper=True), estimate


def mean_ratio(x: np.ndarray, y: np.ndarray) -> float:
    """mean(x) / mean(y), Kayenta's `meanRatio`; NaN when either mean is 0."""
    mx, my = float(x.mean()), float(y.mean())
    return math.nan if mx == 0.0 or my == 0.0 else mx / my


def cles(x: np.ndarray, y: np.ndarray) -> float:
    """Common-language effect size: the share of pairs where x is higher (ties count
    half), Kayenta's `cles` (Vargha and Delaney's A)."""
    from scipy.stats import rankdata

    ranks = rankdata(list(x) + list(y))
    m, n = x.size, y.size
    r1 = float(ranks[:m].sum())
    return (2 * r1 - m * (m + 1)) / (2 * n * m)


def iqr_keep(values: np.ndarray, factor: float) -> np.ndarray:
    """Kayenta's outlier removal (IQRDetector with reduced sensitivity): keep the values
    within [min(p1, p25 - factor*IQR), max(p99, p75 + factor*IQR)] (linear percentiles)."""
    import numpy as np

    if values.size == 0:
        return values
    p1, p25, p75, p99 = np.percentile(values, [1, 25, 75, 99])
    iqr = p75 - p25
    low, high = min(p1, p25 - factor * iqr), max(p99, p75 + factor * iqr)
    kept: np.ndarray = values[(values >= low) & (values <= high)]
    return kept
