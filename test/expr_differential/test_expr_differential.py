"""okra's condition evaluator against expr-lang, the engine Argo Rollouts runs conditions on.

`exprlang` (./exprlang, Go, built once and cached by hack/build-exprlang.sh) is Argo
Rollouts' EvalCondition on github.com/expr-lang/expr v1.17.7 (the version Argo Rollouts
v1.10.2 pins). Every generated (condition, result) pair must give the same verdict in both:
the same bool, or an error in both. A difference is a bug in okra, unless it is one of the
deviations written down in okra_controllers.analysis.expr (matched by `_deliberate` here,
and counted).

Sizes: OKRA_EXPR_DIFFERENTIAL_EXAMPLES batches (default 100) of 50 pairs each: 5,000 pairs,
a few seconds. Each batch prints nothing; the session prints the count at the end.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from expr_differential.conditions import CASES
from expr_differential.exprlang import ExprLang, exprlang_binary
from okra_controllers.analysis.expr import ExprError, evaluate_condition

BATCH = 50
EXAMPLES = int(os.environ.get("OKRA_EXPR_DIFFERENTIAL_EXAMPLES", "100"))
TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module")
def exprlang() -> Iterator[ExprLang]:
    proc = ExprLang(exprlang_binary())
    yield proc
    proc.close()
    print(
        f"\nexpr differential: {TALLY['pairs']} (condition, result) pairs compared with expr-lang;"
        f" {TALLY['different']} different, {TALLY['deliberate']} deliberate deviations"
    )


def okra_verdict(condition: str, result: Any) -> bool | str:
    try:
        return evaluate_condition(condition, result)
    except ExprError as e:
        return f"error: {e}"


def _deliberate(condition: str) -> bool:
    """expr-lang v1.17.7's findIndex/findLastIndex give nil when nothing matches, okra -1 (the
    documented value): a condition using them may differ where nothing matches."""
    return "findIndex" in condition or "findLastIndex" in condition


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # a batch fails whole, listing every difference
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(CASES, min_size=BATCH, max_size=BATCH))
def test_okra_and_expr_lang_agree_on_every_verdict(
    exprlang: ExprLang, cases: list[tuple[str, Any]]
) -> None:
    theirs = exprlang.verdicts(cases)
    different = []
    for (condition, result), their in zip(cases, theirs, strict=True):
        ours = okra_verdict(condition, result)
        TALLY["pairs"] += 1
        same = ours == their if isinstance(their, bool) else isinstance(ours, str)
        if same:
            continue
        if _deliberate(condition):
            TALLY["deliberate"] += 1
            continue
        TALLY["different"] += 1
        different.append(f"{condition!r} with result={result!r}: okra {ours}, expr-lang {their}")
    assert not different, "\n".join(different)


ARGO_SHAPES = [
    # The shapes Argo Rollouts' docs and users write, on every kind of provider result.
    "result[0] >= 0.95",
    "result < 0.01",
    "result > 0.9 == true",
    "isNaN(result) || result >= 0.95",
    "isNil(result) || result < 1",
    "default(result, 0) < 5",
    "len(result) == 0 || result[0] < 1",
    "all(result, {# < 0.1})",
    "any(result, isNaN(#))",
    "asInt(result) == 0",
    "asFloat(result) >= 0.5",
    "result.ok && result.value >= 0.9",
    "'count' in result",
    "result == 'ok'",
    "isInf(result)",
]
RESULTS: list[Any] = [
    0.97,
    0.0,
    float("nan"),
    float("inf"),
    None,
    [],
    [0.5],
    [0.05, 0.2],
    {"ok": True, "value": 0.95},
    "ok",
    True,
]


def test_argo_condition_shapes_on_every_result_shape(exprlang: ExprLang) -> None:
    cases = [(c, r) for c in ARGO_SHAPES for r in RESULTS]
    theirs = exprlang.verdicts(cases)
    different = []
    for (condition, result), their in zip(cases, theirs, strict=True):
        ours = okra_verdict(condition, result)
        TALLY["pairs"] += 1
        if (ours == their) if isinstance(their, bool) else isinstance(ours, str):
            continue
        different.append(f"{condition!r} with result={result!r}: okra {ours}, expr-lang {their}")
    assert not different, "\n".join(different)
