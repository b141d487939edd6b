"""okra's condition evaluator against expr-lang, the engine Argo Rollouts runs conditions on.

`exprlang` (./exprlang, Go, built once and cached by hack/build-exprlang.sh) is Argo
Rollouts' EvalCondition on github.com/expr-lang/expr v1.17.7 (the version Argo Rollouts
v1.10.2 pins). Every generated (condition, result) pair must give the same verdict in both:
the same bool, or an error in both. okra saying true where expr-lang says false or fails is
"dangerous" (a wrongly promoted release): the test fails on any. Any other difference must be
one of the deviations docs/analysis-expr.md lists (its table between `<!-- deviations -->`
marks, read here: DEVIATIONS holds a matcher for each id, and the two must name the same ids),
counted by id.

expr-lang's own test expressions (expr_differential.corpus: its fuzz corpus and generated
expressions, read from the pinned module in Go's module cache) are compared too, by value in
their own environment; the test prints how many were compared, the same, and different (each
difference explained by a documented deviation, or the test fails).

Sizes: OKRA_EXPR_DIFFERENTIAL_EXAMPLES batches (default 400) of 50 pairs each (batch n drawn
from random.Random(n), see expr_differential.conditions): 20,000 pairs, a few seconds. The
session prints the counts at the end.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest

from expr_differential.conditions import cases
from expr_differential.corpus import corpus
from expr_differential.exprlang import REPO, ExprLang, Opaque, exprlang_binary
from okra_controllers.analysis.expr import ExprError, compile_condition, evaluate_condition
from okra_controllers.analysis.expr.types import type_of

EXAMPLES = int(os.environ.get("OKRA_EXPR_DIFFERENTIAL_EXAMPLES", "400"))
DOC = REPO / "docs" / "analysis-expr.md"
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
"""expr-lang built-ins okra does not implement (listed in docs/analysis-expr.md)."""


@pytest.fixture(scope="module")
def exprlang() -> Iterator[ExprLang]:
    proc = ExprLang(exprlang_binary())
    yield proc
    proc.close()
    documented = {k[4:]: v for k, v in sorted(TALLY.items()) if k.startswith("doc ")}
    print(
        f"\nexpr differential: {TALLY['pairs']} (condition, result) pairs compared with expr-lang"
        f" ({TALLY['generated']} generated); {TALLY['same']} same verdict,"
        f" {TALLY['dangerous']} dangerous (okra true, expr-lang false or an error),"
        f" {TALLY['undocumented']} undocumented, documented {documented or 'none'}"
    )


def okra_verdict(condition: str, result: Any) -> bool | str:
    try:
        return evaluate_condition(condition, result)
    except ExprError as e:
        return f"error: {e}"


def _unsupported(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and bool(
        re.search(rf"unknown function (?:{'|'.join(UNSUPPORTED)}) ", str(ours))
        or re.search(r"(?:^|[\[(,]\s*)if\s", expression)
        or (";" in expression and re.match(r"unexpected ';'", str(ours)))
    )


def _unchecked_any(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    typed = re.search(r"\b(?:min|max|mean|median|sum|find|findLast|map|reduce)\(", expression)
    okra_fails = re.match(
        r"invalid (?:argument|operation)|array elements can only|\w+ needs an array", str(ours)
    )
    return bool(typed and not ok and their_ok and okra_fails)


def _backward_loops(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and "evaluates it correctly" in str(ours)


def _pow_fraction(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and "with a fraction y other than 0.5 or -0.5 is not evaluated" in str(ours)


def _int_conversion(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and "converts NaN, ±Inf and floats beyond int64 differently" in str(ours)


def _regex_syntax(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and "regular expression" in str(ours)


def _map_keys(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and bool(re.search(r"map keys must be strings|as a map key", str(ours)))


def _limits(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> bool:
    return not ok and bool(
        re.search(r"the limit is|exceeds its budget|takes longer than|nests deeper", str(ours))
    )


Matcher = Callable[[str, bool, Any, bool, Any], bool]
DEVIATIONS: dict[str, Matcher | None] = {
    "unsupported": _unsupported,
    "unchecked-any": _unchecked_any,
    "backward-loops": _backward_loops,
    "pow-fraction": _pow_fraction,
    "regex-syntax": _regex_syntax,
    "map-keys": _map_keys,
    "limits": _limits,
    "int-conversion": _int_conversion,
}
"""Each deviation docs/analysis-expr.md lists, by id: whether a difference, (expression, okra
succeeded, okra's value or error, expr-lang succeeded, its value or error), is one."""


@cache
def documented_ids() -> list[str]:
    """The ids in the first column of docs/analysis-expr.md's table of deviations."""
    text = DOC.read_text()
    table = text.split("<!-- deviations -->", 1)[1].split("<!-- /deviations -->", 1)[0]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", table, re.M)


def deviation(expression: str, ok: bool, ours: Any, their_ok: bool, their: Any) -> str | None:
    """The documented deviation that explains a difference, by id, or None."""
    for name in documented_ids():
        matcher = DEVIATIONS.get(name)
        if matcher is not None and matcher(expression, ok, ours, their_ok, their):
            return name
    return None


def test_the_documented_deviations_are_those_the_test_knows() -> None:
    """docs/analysis-expr.md and DEVIATIONS name the same deviations, so neither can drift."""
    assert documented_ids(), f"no table of deviations in {DOC}"
    assert sorted(documented_ids()) == sorted(DEVIATIONS)


def compare_verdicts(
    exprlang: ExprLang, cases: list[tuple[str, Any]], *, generated: bool
) -> list[str]:
    """Compare the verdicts on `cases`, tally them, and describe each dangerous or undocumented
    difference."""
    theirs = exprlang.verdicts(cases)
    bad = []
    for (condition, result), their in zip(cases, theirs, strict=True):
        ours = okra_verdict(condition, result)
        TALLY["pairs"] += 1
        TALLY["generated"] += generated
        if (ours == their) if isinstance(their, bool) else isinstance(ours, str):
            TALLY["same"] += 1
            continue
        described = f"{condition!r} with result={result!r}: okra {ours}, expr-lang {their}"
        if ours is True:
            TALLY["dangerous"] += 1
            bad.append("dangerous: " + described)
            continue
        ok, their_ok = not isinstance(ours, str), isinstance(their, bool)
        kind = deviation(condition, ok, ours, their_ok, their)
        if kind is None:
            TALLY["undocumented"] += 1
            bad.append("undocumented: " + described)
        else:
            TALLY["doc " + kind] += 1
    return bad


def test_okra_and_expr_lang_agree_on_every_verdict(exprlang: ExprLang) -> None:
    bad: list[str] = []
    for batch in range(EXAMPLES):
        bad += compare_verdicts(exprlang, cases(batch), generated=True)
    assert not bad, f"{len(bad)} differences, the first 100:\n" + "\n".join(bad[:100])


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
    bad = compare_verdicts(
        exprlang, [(c, r) for c in ARGO_SHAPES for r in RESULTS], generated=False
    )
    assert not bad, "\n".join(bad)


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
    if isinstance(a, int) and type(b) is int and not isinstance(a, bool):  # a byte is an int
        return a == b
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
    in docs/analysis-expr.md are counted apart; any other fails the test."""
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
            kind = deviation(expression, ok, ours, their_ok, their)
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
