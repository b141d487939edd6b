"""bench/judge: how often the canary judge is wrong, how often it is right, and what it costs.

Measured, not asserted (DESIGN §6: 50 metrics x 300 points per side in < 0.1 s CPU; false
positives <= 2 % at confidence 0.98 on equal distributions). Samples are generated: a
log-normal latency-like distribution (median 100, sigma 0.3), the canary drawn from the same
distribution (false positives) or shifted by +10/+25/+50 % (detection). Every judgment uses
Kayenta's NetflixACAJudge defaults (confidence 0.98, tolerance 0.25), printed beside the figures.

    make bench-judge            # or: .venv/bin/python bench/judge/run.py [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from okra_controllers.analysis.judge import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MARGINAL_SCORE,
    DEFAULT_PASS_SCORE,
    DEFAULT_TOLERANCE,
    Classification,
    classify,
    score,
)

SIGMA = 0.3
MEDIAN = 100.0


def draw(rng: np.random.Generator, n: int, shift: float = 0.0) -> np.ndarray:
    sample: np.ndarray = MEDIAN * (1 + shift) * rng.lognormal(0.0, SIGMA, n)
    return sample


def false_positive_rate(
    rng: np.random.Generator, trials: int, n: int, tolerance: float = DEFAULT_TOLERANCE
) -> float:
    wrong = 0
    for _ in range(trials):
        j = classify(draw(rng, n), draw(rng, n), tolerance=tolerance)
        wrong += j.classification != "Pass"
    return wrong / trials


def detection_rate(
    rng: np.random.Generator,
    trials: int,
    n: int,
    shift: float,
    tolerance: float = DEFAULT_TOLERANCE,
) -> float:
    found = 0
    for _ in range(trials):
        j = classify(draw(rng, n, shift), draw(rng, n), direction="increase", tolerance=tolerance)
        found += j.classification == "High"
    return found / trials


def scraped_miss_rate(rng: np.random.Generator, trials: int, sigma: float) -> float:
    """test/integration/analysis/test_judge.py's slower canary as Prometheus shows it: each
    version's latency redrawn every 0.3 s (median 100 and 130, log-normal `sigma`), scraped
    every 1 s at a random phase, read by a range query every 1 s, 20 points a side, judged
    with tolerance 0.1. The share of runs not judged High (the test's failure rate)."""
    draws = np.arange(0.0, 40.0, 0.3)
    missed = 0
    for _ in range(trials):
        series = {m: m * rng.lognormal(0.0, sigma, draws.size) for m in (100.0, 130.0)}
        scrapes = np.arange(rng.random(), 40.0, 1.0)
        steps = 5.0 + rng.random() + np.arange(20)
        scraped = scrapes[np.searchsorted(scrapes, steps, side="right") - 1]
        at = np.searchsorted(draws, scraped, side="right") - 1
        j = classify(series[130.0][at], series[100.0][at], direction="increase", tolerance=0.1)
        missed += j.classification != "High"
    return missed / trials


def judge_cpu(rng: np.random.Generator, metrics: int, points: int, repeat: int) -> float:
    """Best CPU seconds (process time) to classify `metrics` metrics and score the run."""
    sides = [(draw(rng, points), draw(rng, points)) for _ in range(metrics)]
    classify(*sides[0])  # first call imports scipy: not part of a judgment
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        labels: list[tuple[str, Classification, bool]] = []
        for i, (canary, baseline) in enumerate(sides):
            labels.append((f"m{i}", classify(canary, baseline).classification, False))
        score(labels)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)

    print(
        f"judge defaults: confidence {DEFAULT_CONFIDENCE}, tolerance {DEFAULT_TOLERANCE}, "
        f"score pass {DEFAULT_PASS_SCORE:g} / marginal {DEFAULT_MARGINAL_SCORE:g}"
    )
    print(
        "Kayenta (NetflixACAJudge-v1.0): confLevel 0.98, tolerance 0.25; "
        "scoreThresholds pass/marginal as set by the pipeline (Netflix: 90/75)"
    )
    print(f"samples: log-normal, median {MEDIAN:g}, sigma {SIGMA}; {args.trials} trials per cell")
    print()
    print(f"{'':28}{'10/side':>10}{'30/side':>10}{'100/side':>10}{'300/side':>10}   goal")
    sizes = (10, 30, 100, 300)
    fp = [false_positive_rate(rng, args.trials, n) for n in sizes]
    print(f"{'false positives (equal)':28}" + "".join(f"{r:>10.1%}" for r in fp) + "   <= 2 %")
    bare = [false_positive_rate(rng, args.trials, n, tolerance=0.0) for n in sizes]
    print(
        f"{'  same, tolerance 0':28}"
        + "".join(f"{r:>10.1%}" for r in bare)
        + "   (the bare test: about 1 - confidence)"
    )
    for shift in (0.10, 0.25, 0.50):
        rates = [detection_rate(rng, args.trials, n, shift) for n in sizes]
        label = f"detected High, +{shift:.0%}"
        note = "   (within tolerance: should pass)" if shift < DEFAULT_TOLERANCE else ""
        if shift == DEFAULT_TOLERANCE:
            note = "   (at the tolerance)"
        print(f"{label:28}" + "".join(f"{r:>10.1%}" for r in rates) + note)
    for shift in (0.10, 0.25, 0.50):
        rates = [detection_rate(rng, args.trials, n, shift, tolerance=0.0) for n in sizes]
        label = f"  same, tolerance 0, +{shift:.0%}"
        print(f"{label:28}" + "".join(f"{r:>10.1%}" for r in rates))
    print()
    for sigma in (0.1, 0.05):
        miss = scraped_miss_rate(rng, args.trials * 5, sigma)
        print(
            f"test_judge's +30 % canary through Prometheus, sigma {sigma}: not High in "
            f"{miss:.2%} of {args.trials * 5} runs"
        )
    print()
    cpu = judge_cpu(rng, 50, 300, 5)
    print(f"CPU to judge 50 metrics x 300 points per side: {cpu * 1000:.1f} ms   (goal < 100 ms)")


if __name__ == "__main__":
    main()
