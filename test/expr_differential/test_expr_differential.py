"""okra's condition evaluator against expr-lang, the engine Argo Rollouts runs conditions on.

`exprlang` (./exprlang, Go, built once and cached by hack/build-exprlang.sh) is Argo
Rollouts' EvalCondition on github.com/expr-lang/expr v1.17.7 (the version Argo Rollouts
v1.10.2 pins). Every generated (condition, result) pair must give the same verdict in both:
the same bool, or an error in both. A difference is a bug in okra, unless it is one of the
deviations written down in okra_controllers.analysis.expr (matched by `_deliberate` here,
and counted).

expr-lang's own test expressions (expr_differential.corpus: its fuzz corpus and generated
expressions, read from the pinned module in Go's module cache) are compared too, by value in
their own environment; the test prints how many were compared, the same, and different (each
difference explained by a documented deviation, or the test fails).

Sizes: OKRA_EXPR_DIFFERENTIAL_EXAMPLES batches (default 100) of 50 pairs each: 5,000 pairs,
a few seconds. Each batch prints nothing; the session prints the count at the end.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from expr_differential.conditions import CASES
from expr_differential.corpus import corpus
from expr_differential.exprlang import ExprLang, Opaque, exprlang_binary
from okra_controllers.analysis.expr import ExprError, compile_condition, evaluate_condition
from okra_controllers.analysis.exprtypes import type_of

BATCH = 50
EXAMPLES = int(os.environ.get("OKRA_EXPR_DIFFERENTIAL_EXAMPLES", "100"))
TALLY: Counter[str] = Counter()
UNSUPPORTED = [
    "toJSON",
    "fromJSON",
    "toBase64",
    "fromBase64",
    "toPairs",
    "fromPairs",
    "groupBy",
    "sortBy",
    "sort",
    "uniq",
    "flatten",
    "concat",
    "reverse",
    "splitAfter",
    "date",
    "duration",
    "now",
    "bitand",
    "bitor",
    "bitxor",
    "bitnand",
    "bitnot",
    "bitshl",
    "bitshr",
    "bitushr",
]
"""expr-lang built-ins okra does not implement (listed in okra_controllers.analysis.expr)."""


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


def documented_deviation(
    expression: str, ok: bool, ours: Any, their_ok: bool, their: Any
) -> str | None:
    """The deviation written down in okra_controllers.analysis.expr ("Where this knowingly
    differs") that explains a difference on expr-lang's corpus, by a short name, or None."""
    ours_s, their_s = str(ours), str(their)
    if not ok and (
        re.match(rf"unknown function (?:{'|'.join(UNSUPPORTED)}) ", ours_s)
        or re.search(r"(?:^|[\[(,]\s*)if\s", expression)
        or ";" in expression
    ):
        return "unsupported built-in or syntax"
    if _deliberate(expression):
        return "findIndex without a match"
    if (
        ok
        and their_ok
        and isinstance(ours, float)
        and isinstance(their, float)
        and re.search(r"\*\*|\^", expression)
        and math.isclose(ours, their, rel_tol=1e-15)
    ):
        return "pow in the last bit"
    typed = re.search(
        r"\b(?:min|max|mean|median|sum|find|findLast|first|last|map|reduce)\(", expression
    )
    if typed and (
        (
            not ok
            and re.match(
                r"invalid (?:argument|operation)|array elements can only|\w+ needs an array", ours_s
            )
        )
        or (ok and not their_ok and "interface conversion" in their_s)
        or (ok and their_ok and isinstance(ours, str) and len(ours) == 1 and their == ord(ours))
    ):
        return "typed built-ins"
    return None


def okra_value(expression: str, env: dict[str, Any]) -> tuple[bool, Any]:
    try:
        condition = compile_condition(expression)
        condition.check({k: type_of(v) for k, v in env.items()})
        return True, condition.evaluate(env)
    except ExprError as e:
        return False, str(e)


def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same kind (int is not float; NaN is NaN), element-wise."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):  # okra's lists may be typed (a Go []int)
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is not type(b) and not (isinstance(b, Opaque) and isinstance(a, str)):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return bool(a == b)


def test_expr_lang_own_test_expressions(exprlang: ExprLang) -> None:
    """expr-lang's own test expressions (see expr_differential.corpus), evaluated in both with
    their environment: the same value, or an error in both. Differences of a kind written down
    in okra_controllers.analysis.expr are counted apart; any other fails the test."""
    found = corpus()
    counts: Counter[str] = Counter()
    undocumented: list[str] = []
    for start in range(0, len(found.cases), 500):
        batch = found.cases[start : start + 500]
        theirs = exprlang.values([(e, env) for _, e, env in batch])
        for (name, expression, env), (their_ok, their) in zip(batch, theirs, strict=True):
            ok, ours = okra_value(expression, env)
            counts["expressions"] += 1
            if ok == their_ok and (not ok or same_value(ours, their)):
                counts["same"] += 1
                continue
            counts["different"] += 1
            kind = documented_deviation(expression, ok, ours, their_ok, their)
            if kind:
                counts[kind] += 1
                continue
            undocumented.append(
                f"{name}: {expression!r}: okra {'=' if ok else 'error'} {ours!r},"
                f" expr-lang {'=' if their_ok else 'error'} {their!r}"
            )
    documented = {k: v for k, v in counts.items() if k not in ("expressions", "same", "different")}
    print(
        f"\nexpr-lang {found.version} own test expressions: {counts['expressions']} compared"
        f" ({found.left_out} left out: they name Go functions or structs, or $env);"
        f" {counts['same']} same,"
        f" {counts['different']} different: {len(undocumented)} undocumented,"
        f" documented {documented or 'none'}"
    )
    assert not undocumented, f"{len(undocumented)} undocumented differences:\n" + "\n".join(
        undocumented[:200]
    )
