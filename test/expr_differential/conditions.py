"""Hypothesis strategies for Argo-style analysis conditions and provider-shaped results.

Conditions are drawn from a small typed grammar (numbers, booleans, strings over `result`),
with deliberate type mismatches mixed in, so both engines' errors are compared too. Results
have the shapes Argo's providers hand to EvalCondition: float64 (Prometheus scalar, CloudWatch,
Datadog), []float64 (vectors, series), nil (an empty Datadog answer), and JSON documents from
the web provider (maps, strings, booleans; numbers as float64).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

_FLOATS = st.sampled_from(
    [0.0, -0.0, 0.5, 0.95, 1.0, 2.0, -1.0, 100.0, 1e-9, 3.7, 1e300, -2.5]
) | st.sampled_from([float("nan"), float("inf"), float("-inf")])
_STRINGS = st.sampled_from(["ok", "OK", "error", "", "a.b", "1", "2.5", "x y", "NaN"])
_KEYS = ["count", "ok", "value", "name", "items"]

RESULTS: st.SearchStrategy[Any] = st.one_of(
    _FLOATS,
    st.lists(_FLOATS, max_size=4),
    st.none(),
    _STRINGS,
    st.booleans(),
    st.dictionaries(
        st.sampled_from(_KEYS),
        st.one_of(_FLOATS, _STRINGS, st.booleans(), st.lists(_FLOATS, max_size=3), st.none()),
        max_size=4,
    ),
)

_NUM_LITERALS = ["0", "1", "2", "0.5", "0.95", "100", "-1", "2.5e-1", "1_000", "0x10", "3"]
_NUM_ATOMS = [
    "result",
    "asFloat(result)",
    "asInt(result)",
    "result[0]",
    "result[1]",
    "result[-1]",
    "len(result)",
    "sum(result)",
    "max(result)",
    "min(result)",
    "mean(result)",
    "median(result)",
    "default(result, 0)",
    "result.value",
    "result.count",
    'result["count"]',
    "result?.count",
    "result ?? 0",
    "first(result)",
    "last(result)",
    "count(result, # > 0.5)",
    "findIndex(result, # > 1)",
    "findLastIndex(result, # < 1)",
    "abs(result)",
    "float(result)",
    "int(result)",
    "ceil(result)",
    "floor(result)",
    "round(result)",
    "reduce(result, #acc + #, 0)",
    "sum(result, # * 2)",
    "len(filter(result, # > 0.5))",
    "map(result, # * 2)[0]",
    "find(result, # > 0.5)",
    "result.items[0]",
    "len(result.items)",
]
_STR_ATOMS = [
    '"ok"',
    "'error'",
    "result",
    "result.name",
    "string(result)",
    "upper(result)",
    "lower(result)",
    "trim(result)",
    "result + 'x'",
    "type(result)",
]
_BOOL_ATOMS = [
    "true",
    "false",
    "isNil(result)",
    "result == nil",
    "result != nil",
    "isNaN(result)",
    "isInf(result)",
    "isNaN(asFloat(result))",
    "result",
    "result.ok",
    "'count' in result",
    "'ok' in result",
    "0.5 in result",
    "all(result, {# > 0.5})",
    "any(result, # < 1)",
    "none(result, # == 0)",
    "one(result, # >= 1)",
    "all(result, #index < 2)",
    "any(result, isNaN(#))",
    "len(result) == 0",
    "result == []",
    "result.items == nil",
    "result contains 'o'",
    "result startsWith 'o'",
    "result endsWith 'r'",
    "result matches '^[a-z]+$'",
    "result not contains 'x'",
]
_CMP = ["==", "!=", "<", ">", "<=", ">="]
_ARITH = ["+", "-", "*", "/", "%", "**"]


@st.composite
def numbers(draw: st.DrawFn, depth: int = 2) -> str:
    kind = draw(st.integers(0, 5 if depth > 0 else 1))
    if kind == 0:
        return draw(st.sampled_from(_NUM_LITERALS))
    if kind == 1:
        return draw(st.sampled_from(_NUM_ATOMS))
    if kind == 2:
        op = draw(st.sampled_from(_ARITH))
        return f"{draw(numbers(depth - 1))} {op} {draw(numbers(depth - 1))}"
    if kind == 3:
        return f"({draw(numbers(depth - 1))})"
    if kind == 4:
        return f"-{draw(numbers(depth - 1))}"
    c, a, b = draw(conditions(depth - 1)), draw(numbers(depth - 1)), draw(numbers(depth - 1))
    return f"({c} ? {a} : {b})"


@st.composite
def conditions(draw: st.DrawFn, depth: int = 2) -> str:
    kind = draw(st.integers(0, 9 if depth > 0 else 2))
    if kind == 0:
        return draw(st.sampled_from(_BOOL_ATOMS))
    if kind == 1:
        op = draw(st.sampled_from(_CMP))
        return f"{draw(numbers(max(depth - 1, 0)))} {op} {draw(numbers(max(depth - 1, 0)))}"
    if kind == 2:
        op = draw(st.sampled_from(["==", "!=", "<", ">="]))
        return f"{draw(st.sampled_from(_STR_ATOMS))} {op} {draw(st.sampled_from(_STR_ATOMS))}"
    if kind == 3:
        op = draw(st.sampled_from(["&&", "||", "and", "or"]))
        return f"{draw(conditions(depth - 1))} {op} {draw(conditions(depth - 1))}"
    if kind == 4:
        return f"{draw(st.sampled_from(['!', 'not ']))}{draw(conditions(depth - 1))}"
    if kind == 5:
        return f"({draw(conditions(depth - 1))})"
    if kind == 6:  # chains: expr-lang chains only < > <= >=
        a, b, c = (draw(numbers(0)) for _ in range(3))
        op1, op2 = draw(st.sampled_from(_CMP)), draw(st.sampled_from(_CMP))
        return f"{a} {op1} {b} {op2} {c}"
    if kind == 7:
        op = draw(st.sampled_from(["==", "!="]))
        return f"{draw(numbers(0))} {draw(st.sampled_from(_CMP))} {draw(numbers(0))} {op} true"
    if kind == 8:
        where = draw(st.sampled_from(["[1, 2, 0.5]", "0..3", "[]", "result", "['ok', 1]"]))
        neg = draw(st.sampled_from(["", "not "]))
        return f"{draw(numbers(0))} {neg}in {where}"
    c, a, b = (draw(conditions(depth - 1)) for _ in range(3))
    return f"{c} ? {a} : {b}"


CASES = st.tuples(conditions(), RESULTS)
"""(condition, result) pairs."""
