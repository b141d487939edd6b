"""The canary judge's classification and scoring rules (analysis/judge.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.analysis import shift
from okra_controllers.analysis.judge import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGINAL_SCORE,
    DEFAULT_PASS_SCORE,
    DEFAULT_TOLERANCE,
    Classification,
    MetricJudgment,
    Scored,
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


def test_tolerance_is_a_share_of_the_estimated_shift_as_in_kayenta() -> None:
    # Kayenta bounds the shift's confidence interval by tolerance x |its estimate|: a
    # certain +10 % is High at the default 0.25 (the interval is far above 2.5)...
    canary, baseline = _normal(110, 1000, 1, sd=2), _normal(100, 1000, 2, sd=2)
    j = classify(canary, baseline)
    assert j.classification == "High"
    assert j.estimate == pytest.approx(10, abs=0.3)
    # ... and tolerance 1 never flags: the interval's lower end cannot exceed the estimate.
    assert classify(canary, baseline, tolerance=1).classification == "Pass"
    # To let a small certain change pass, Kayenta (and okra) set an effect-size threshold.
    assert classify(canary, baseline, allowed_increase=1.2).classification == "Pass"
    assert classify(canary, baseline, allowed_increase=1.05).classification == "High"


def test_the_judgment_does_not_depend_on_the_metrics_scale() -> None:
    # Kayenta's root solver has an absolute tolerance of 1e-4; okra's statistic has none.
    canary, baseline = np.array(_normal(112, 60, 5)), np.array(_normal(100, 60, 6))
    at_scale = classify(canary, baseline, direction="increase")
    assert at_scale.classification == "High"
    assert at_scale.estimate is not None
    for factor in (1e-4, 1e-6, 1e6):
        scaled = classify(canary * factor, baseline * factor, direction="increase")
        assert scaled.classification == "High"
        assert scaled.p_value == pytest.approx(at_scale.p_value)
        assert scaled.estimate == pytest.approx(at_scale.estimate * factor)


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


def test_nan_is_dropped_before_judging() -> None:
    j = classify([*_normal(100, 30, 1), math.nan], [*_normal(100, 30, 2), math.nan])
    assert (j.classification, j.canary.count, j.baseline.count) == ("Pass", 30, 30)


@pytest.mark.parametrize(
    ("infinity", "direction", "expected"),
    [
        (math.inf, "increase", "High"),
        (math.inf, "either", "High"),
        (math.inf, "decrease", "Pass"),  # harmless there: dropped
        (-math.inf, "decrease", "Low"),
        (-math.inf, "either", "Low"),
        (-math.inf, "increase", "Pass"),  # harmless there: dropped
    ],
)
def test_an_infinite_canary_value_on_the_regressions_side_counts_against_it(
    infinity: float, direction: str, expected: str
) -> None:
    # A canary's p99 past the last histogram bucket is +Inf: a regression, not a gap.
    canary, baseline = _normal(100, 30, 1), _normal(100, 30, 2)
    assert classify(canary, baseline, direction=direction).classification == "Pass"  # type: ignore[arg-type]
    j = classify([*canary, infinity], baseline, direction=direction)  # type: ignore[arg-type]
    assert j.classification == expected
    assert (j.canary.count, j.baseline.count) == (30, 30)  # the summaries are of finite values
    if expected != "Pass":
        sign = "+" if infinity > 0 else "-"
        assert j.reason == f"{expected}: 1 of 31 canary values are {sign}Inf"
        assert (j.infinite, j.p_value, j.effect_size, j.critical) == (1, None, None, False)


def test_an_infinite_canary_value_fails_a_critical_metric_whatever_the_data() -> None:
    # too few finite points for a judgment, and effect sizes that would excuse a shift:
    # an infinite value still fails, critically
    j = classify(
        [1.0, math.inf],
        _normal(100, 30, 2),
        direction="increase",
        critical=True,
        allowed_increase=10.0,
        critical_increase=10.0,
        effect_measure="meanRatio",
    )
    assert (j.classification, j.critical) == ("High", True)
    assert j.reason == "High (critical): 1 of 2 canary values are +Inf"
    both = classify([math.inf, -math.inf], [1.0] * 10)  # either: the first side found
    assert both.classification == "High"


def test_the_baselines_infinities_are_dropped_and_never_excuse_the_canary() -> None:
    canary, baseline = _normal(140, 30, 1), _normal(100, 30, 2)
    for infinity in (math.inf, -math.inf):
        j = classify(canary, [*baseline, infinity], direction="increase")
        assert (j.classification, j.baseline.count) == ("High", 30)
    # both sides infinite: the canary's still counts against it
    j = classify([*baseline, math.inf], [*baseline, math.inf, math.inf], direction="increase")
    assert j.classification == "High"


def test_nan_strategy_replace_reads_nan_as_zero() -> None:
    canary = [math.nan] * 25 + [1.0] * 5
    baseline = [0.0] * 25 + [1.0] * 5
    j = classify(canary, baseline, nan_strategy="replace")
    assert (j.classification, j.canary.count) == ("Pass", 30)  # the same values
    j = classify(canary, baseline)  # removed: 5 canary points, fewer than 10
    assert (j.classification, j.canary.count) == ("NoData", 5)
    # all NaN on a side is no data either way (Kayenta passes it with replace)
    assert classify([], _normal(100, 20, 2), nan_strategy="replace").classification == "NoData"


def test_outliers_remove_drops_values_beyond_kayentas_fences() -> None:
    baseline = _normal(100, 50, 2)
    canary = [*_normal(100, 48, 1), 10_000.0, 12_000.0]
    kept = classify(canary, baseline, direction="increase")
    removed = classify(canary, baseline, direction="increase", outlier_factor=3.0)
    # Kayenta's fences reach at least p1 and p99: of two far values only the farthest goes
    assert (kept.canary.count, removed.canary.count) == (50, 49)
    assert removed.canary.p90 is not None
    assert max(removed.canary.p90, 10_000.0) == 10_000.0
    assert classify(canary, baseline, outlier_factor=3.0).canary.total < kept.canary.total - 11e3


def test_cles_effect_size_thresholds() -> None:
    canary, baseline = _normal(115, 100, 1), _normal(100, 100, 2)
    assert classify(canary, baseline, effect_measure="cles").classification == "High"
    assert (
        classify(canary, baseline, effect_measure="cles", allowed_increase=0.95).classification
        == "Pass"
    )


def test_critical_effect_size_decides_a_critical_failure() -> None:
    canary, baseline = _normal(140, 100, 1), _normal(100, 100, 2)
    j = classify(canary, baseline, critical=True)
    assert (j.classification, j.critical) == ("High", True)
    j = classify(canary, baseline, critical=True, critical_increase=2.0)
    assert (j.classification, j.critical) == ("High", False)
    assert classify(canary, baseline).critical is False  # not a critical metric


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
    # Kayenta adds noise to two one-valued samples; the tie-corrected test needs none.
    assert classify([200.0] * 30, [100.0] * 30).classification == "High"
    # a certain +1 % is High, as in Kayenta (its tolerance is of the shift itself) ...
    assert classify([101.0] * 30, [100.0] * 30).classification == "High"
    # ... unless an effect size allows it
    assert classify([101.0] * 30, [100.0] * 30, allowed_increase=1.05).classification == "Pass"


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
    high = direction != "decrease" and math.inf in canary
    low = direction != "increase" and -math.inf in canary
    if high or low:  # an infinite canary value on the regression's side counts against it
        assert j.classification == ("High" if high else "Low")
        assert j.infinite > 0
    elif min(finite) < 3:
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


def test_no_data_metrics_are_left_out_of_the_score_below_half() -> None:
    s = score([("a", "Pass", False), ("b", "Pass", False), ("c", "NoData", False)])
    assert (s.outcome, s.score, s.judged) == ("Pass", 100.0, 2)


@pytest.mark.parametrize(("passing", "nodata"), [(1, 1), (9, 10), (0, 1), (0, 3), (2, 2)])
def test_half_or_more_without_data_fails_the_run(passing: int, nodata: int) -> None:
    # Kayenta's rule: 50 % or more of the metrics NoData fails the run (score 0).
    metrics: list[tuple[str, Classification, bool]] = [
        *((f"p{i}", "Pass", False) for i in range(passing)),
        *((f"n{i}", "NoData", False) for i in range(nodata)),
    ]
    s = score(metrics)
    assert (s.outcome, s.score) == ("Fail", 0.0)
    assert f"{nodata} of {passing + nodata} judged metrics have no data" in s.reason


def test_must_have_data_counts_no_data_as_a_failing_metric() -> None:
    s = score(
        [
            Scored("a", "Pass"),
            Scored("b", "Pass"),
            Scored("c", "Pass"),
            Scored("errors", "NoData", must_have_data=True),
        ]
    )
    assert (s.outcome, s.score, s.judged) == ("Marginal", 75.0, 4)  # Kayenta: NodataFailMetric


def test_a_critical_metric_without_data_fails_the_run() -> None:
    s = score([("a", "Pass", False), ("b", "Pass", False), ("errors", "NoData", True)])
    assert (s.outcome, s.score, s.failed_critical) == ("Fail", 0.0, ("errors",))


def test_critical_and_no_data_failures_fail_whatever_the_thresholds() -> None:
    for metrics in ([("a", "High", True)], [("a", "Pass", False), ("b", "NoData", False)]):
        s = score(metrics, pass_score=0, marginal_score=0)  # type: ignore[arg-type]
        assert (s.outcome, s.score) == ("Fail", 0.0)


def test_no_judged_metric_is_no_data_never_pass() -> None:
    assert score([]).outcome == "NoData"


def test_groups_are_weighted() -> None:
    metrics = [
        Scored("p99", "Pass", groups=("latency",)),
        Scored("p50", "High", groups=("latency",)),
        Scored("errors", "Pass", groups=("errors",)),
    ]
    assert score(metrics).score == 75.0  # 50 and 100, equal shares
    assert score(metrics, group_weights={"errors": 80}).score == 90.0  # 0.2 x 50 + 0.8 x 100
    s = score(metrics, group_weights={"latency": 100, "errors": 0})
    assert (s.score, s.outcome, dict(s.groups)) == (50.0, "Fail", {"latency": 50, "errors": 100})


def test_a_group_without_data_scores_zero_never_passes() -> None:
    metrics = [
        Scored("p99", "Pass", groups=("latency",)),
        Scored("p50", "Pass", groups=("latency",)),
        Scored("errors", "NoData", groups=("errors",)),
    ]
    s = score(metrics)  # Kayenta: 100 (the group weighs as 100)
    assert (s.score, s.outcome) == (50.0, "Fail")


def test_a_critical_high_below_its_critical_effect_size_only_counts_in_the_score() -> None:
    many = [Scored(f"m{i}", "Pass") for i in range(9)]
    s = score([*many, Scored("errors", "High", critical=True, critical_failure=False)])
    assert (s.outcome, s.score, s.failed_critical) == ("Pass", 90.0, ())


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
    infinite = classify([*[200.0] * 9, math.inf], [160.0] * 10, critical=True)
    assert describe("latency-p99", infinite, "ms") == (
        "latency-p99 High (critical): 1 of 10 canary values are +Inf; finite canary median "
        "200 ms vs baseline 160 ms"
    )


def _summary(median: float) -> Summary:
    return Summary(30, median, median * 1.2, median * 30)


@pytest.mark.parametrize(("m", "n"), [(30, 41), (40, 40), (1, 7), (25, 1)])
def test_the_estimate_without_materialising_the_pairs_is_the_median(
    m: int, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(m * 100 + n)
    x, y = rng.lognormal(0, 0.5, m).round(2), rng.lognormal(0.1, 0.5, n).round(2)  # with ties
    exact = shift.hodges_lehmann(x, y)
    assert exact == float(np.median(np.subtract.outer(x, y)))
    monkeypatch.setattr(shift, "_EXACT_PAIRS", 0)
    assert shift.hodges_lehmann(x, y) == pytest.approx(exact, rel=1e-12, abs=1e-12)
