"""The canary judge's classification and scoring rules (analysis/judge.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.analysis.judge import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGINAL_SCORE,
    DEFAULT_PASS_SCORE,
    DEFAULT_TOLERANCE,
    Classification,
    MetricJudgment,
    Summary,
    classify,
    describe,
    score,
)


def _normal(mean: float, n: int, seed: int, sd: float = 10.0) -> list[float]:
    return list(np.random.default_rng(seed).normal(mean, sd, n))


def test_defaults_are_netflix_judge_defaults() -> None:
    assert (DEFAULT_CONFIDENCE, DEFAULT_TOLERANCE) == (0.98, 0.25)
    assert (DEFAULT_PASS_SCORE, DEFAULT_MARGINAL_SCORE) == (90.0, 75.0)


def test_same_distribution_passes() -> None:
    j = classify(_normal(100, 100, 1), _normal(100, 100, 2))
    assert j.classification == "Pass"
    assert j.p_value is not None
    assert j.p_value > 0.02


def test_slower_canary_beyond_tolerance_is_high() -> None:
    j = classify(_normal(140, 100, 1), _normal(100, 100, 2))
    assert j.classification == "High"
    assert j.p_value is not None
    assert j.p_value < 0.001
    assert j.effect_size == pytest.approx(0.4, abs=0.05)


def test_faster_canary_beyond_tolerance_is_low() -> None:
    j = classify(_normal(60, 100, 1), _normal(100, 100, 2))
    assert j.classification == "Low"


def test_significant_shift_within_tolerance_passes() -> None:
    # +10 % is certainly significant at 1000 samples with this spread, but tolerated.
    j = classify(_normal(110, 1000, 1, sd=2), _normal(100, 1000, 2, sd=2))
    assert j.p_value is not None
    assert j.p_value < 1e-6
    assert j.classification == "Pass"
    # with no tolerance the same shift is High
    assert (
        classify(
            _normal(110, 1000, 1, sd=2), _normal(100, 1000, 2, sd=2), tolerance=0
        ).classification
        == "High"
    )


@pytest.mark.parametrize(
    ("canary_mean", "direction", "expected"),
    [
        (140, "increase", "High"),
        (60, "increase", "Pass"),
        (140, "decrease", "Pass"),
        (60, "decrease", "Low"),
        (140, "either", "High"),
        (60, "either", "Low"),
    ],
)
def test_direction_says_which_change_is_a_regression(
    canary_mean: float, direction: str, expected: str
) -> None:
    j = classify(_normal(canary_mean, 100, 1), _normal(100, 100, 2), direction=direction)  # type: ignore[arg-type]
    assert j.classification == expected


def test_higher_confidence_needs_stronger_evidence() -> None:
    canary, baseline = _normal(135, 12, 7), _normal(100, 12, 8)
    loose = classify(canary, baseline, confidence=0.8)
    strict = classify(canary, baseline, confidence=0.99999)
    assert loose.classification == "High"
    assert strict.classification == "Pass"


def test_nan_and_infinity_are_dropped_before_judging() -> None:
    base = _normal(100, 30, 2)
    j = classify([*_normal(100, 30, 1), math.nan, math.inf, -math.inf], [*base, math.nan])
    assert j.canary.count == 30
    assert j.baseline.count == 30
    assert j.classification == "Pass"


def test_only_nan_is_no_data() -> None:
    j = classify([math.nan] * 20, _normal(100, 20, 2))
    assert j.classification == "NoData"
    assert j.canary.count == 0
    assert j.canary.median is None
    assert "canary has 0 samples" in j.reason


def test_empty_samples_are_no_data_never_pass() -> None:
    for canary, baseline in (([], []), ([], [1.0] * 20), ([1.0] * 20, [])):
        j = classify(canary, baseline)
        assert j.classification == "NoData"
        assert j.p_value is None
        assert j.effect_size is None


def test_too_few_samples_is_no_data_even_when_obviously_different() -> None:
    j = classify([500.0] * 5, [100.0] * 5, min_samples=10)
    assert j.classification == "NoData"
    assert j.reason == (
        "canary has 5 samples (at least 10 needed); baseline has 5 samples (at least 10 needed)"
    )
    assert classify([500.0] * 10, [100.0] * 10, min_samples=10).classification == "High"


def test_min_total_counts_requests_not_points() -> None:
    # 20 one-minute RequestCount points of 3 requests each: 60 requests, fewer than 100
    j = classify([3.0] * 20, [50.0] * 20, min_samples=1, min_total=100, direction="increase")
    assert j.classification == "NoData"
    assert j.reason == "canary totals 60 (at least 100 needed)"


def test_min_samples_below_one_still_needs_one_sample() -> None:
    assert classify([], [1.0], min_samples=0).classification == "NoData"


def test_all_equal_on_both_sides_passes_with_p_one() -> None:
    j = classify([0.0] * 30, [0.0] * 30)
    assert j.classification == "Pass"
    assert j.p_value == 1.0
    assert j.effect_size is None  # baseline median 0: no relative change
    j = classify([5.0] * 30, [5.0] * 30, tolerance=0)
    assert (j.classification, j.p_value, j.effect_size) == ("Pass", 1.0, 0.0)


def test_all_equal_but_different_values_are_judged() -> None:
    assert classify([200.0] * 30, [100.0] * 30).classification == "High"
    assert classify([101.0] * 30, [100.0] * 30).classification == "Pass"  # within 25 %


def test_zero_baseline_has_no_tolerance_and_no_effect_size() -> None:
    # errors: baseline never errs; a canary erring steadily is High even by tolerance 0.25
    j = classify([0.0] * 10 + [1.0] * 20, [0.0] * 30, direction="increase")
    assert j.classification == "High"
    assert j.effect_size is None


def test_heavy_ties_are_tie_corrected() -> None:
    # integer counts with many repeats: the same distribution must pass
    rng = np.random.default_rng(3)
    j = classify(list(rng.poisson(2, 200)), list(rng.poisson(2, 200)))
    assert j.classification == "Pass"
    j = classify(list(rng.poisson(6, 200)), list(rng.poisson(2, 200)))
    assert j.classification == "High"


def test_summaries_hold_count_median_p90() -> None:
    j = classify([float(v) for v in range(1, 11)], [float(v) for v in range(1, 11)], min_samples=1)
    assert j.canary.count == 10
    assert j.canary.median == pytest.approx(5.5)
    assert j.canary.p90 == pytest.approx(9.1)
    assert j.canary.total == 55


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="confidence"):
        classify([1.0], [1.0], confidence=1.0)
    with pytest.raises(ValueError, match="tolerance"):
        classify([1.0], [1.0], tolerance=-0.1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=40),
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=40),
    st.sampled_from(["increase", "decrease", "either"]),
)
def test_any_input_gets_a_classification_and_never_passes_without_data(
    canary: list[float], baseline: list[float], direction: str
) -> None:
    j = classify(canary, baseline, direction=direction, min_samples=3)  # type: ignore[arg-type]
    finite = [sum(1 for v in s if math.isfinite(v)) for s in (canary, baseline)]
    if min(finite) < 3:
        assert j.classification == "NoData"
    else:
        assert j.classification in ("Pass", "High", "Low")
        assert j.p_value is not None
        assert 0 <= j.p_value <= 1


def test_score_is_the_share_of_judged_metrics_that_pass() -> None:
    s = score(
        [("a", "Pass", False), ("b", "Pass", False), ("c", "High", False), ("d", "Pass", False)]
    )
    assert (s.score, s.judged, s.passed) == (75.0, 4, 3)
    assert s.outcome == "Marginal"


def test_score_thresholds_pass_marginal_fail() -> None:
    ten: list[tuple[str, Classification, bool]] = [(f"m{i}", "Pass", False) for i in range(9)]
    assert score([*ten, ("x", "High", False)]).outcome == "Pass"  # 90
    assert score([*ten[:8], ("x", "High", False), ("y", "Low", False)]).outcome == "Marginal"  # 80
    assert score([("a", "Pass", False), ("b", "High", False)]).outcome == "Fail"  # 50
    assert score([("a", "Pass", False)], pass_score=100, marginal_score=100).outcome == "Pass"


def test_no_data_metrics_are_left_out_of_the_score() -> None:
    s = score([("a", "Pass", False), ("b", "NoData", False)])
    assert (s.outcome, s.score, s.judged) == ("Pass", 100.0, 1)


def test_a_critical_metric_without_data_keeps_the_run_from_passing() -> None:
    s = score([("a", "Pass", False), ("errors", "NoData", True)])
    assert (s.outcome, s.score) == ("NoData", 100.0)
    assert score([("a", "High", False), ("errors", "NoData", True)]).outcome == "Fail"


def test_only_no_data_is_no_data_never_pass() -> None:
    s = score([("a", "NoData", False), ("b", "NoData", True)])
    assert (s.outcome, s.score) == ("NoData", None)
    assert score([]).outcome == "NoData"


def test_a_critical_metric_fails_the_run_alone() -> None:
    many: list[tuple[str, Classification, bool]] = [(f"m{i}", "Pass", False) for i in range(99)]
    s = score([*many, ("errors", "High", True)])
    assert (s.outcome, s.score, s.failed_critical) == ("Fail", 0.0, ("errors",))
    assert score([*many, ("errors", "Pass", True)]).outcome == "Pass"


def test_describe_names_the_metric_and_by_how_much() -> None:
    j = MetricJudgment(
        "High",
        canary=_summary(212.0),
        baseline=_summary(161.0),
        p_value=0.001,
        effect_size=(212 - 161) / 161,
        reason="High",
    )
    assert describe("latency-p99", j, "ms") == (
        "latency-p99 High: canary median 212 ms vs baseline 161 ms, +32 %, p = 0.001"
    )
    nodata = classify([], [1.0])
    assert describe("errors", nodata).startswith("errors NoData: canary has 0 samples")


def _summary(median: float) -> Summary:
    return Summary(30, median, median * 1.2, median * 30)
