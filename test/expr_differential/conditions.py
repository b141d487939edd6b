"""Argo-style analysis conditions and provider-shaped results, drawn at random.

Conditions are drawn from a small typed grammar (numbers, booleans, strings over `result`),
with deliberate type mismatches mixed in, so both engines' errors are compared too. Results
have the shapes Argo's providers hand to EvalCondition: float64 (Prometheus scalar, CloudWatch,
Datadog), []float64 (vectors, series), nil (an empty Datadog answer), and JSON documents from
the web provider (maps, strings, booleans; numbers as float64).

Shapes where the two engines once differed are drawn on purpose (issue 28): vectors holding NaN
or ±Inf compared with themselves (`result == result`), int arrays under the float-only helpers
(`all([1, 2, 3], !isNaN(#))`), operands expr-lang's checker refuses under `==` and `in`
(`$env.result == "1"`, `result in [0, 1]`), string operators on missing fields
(`result.n matches "b$"`), a string built-in's result indexed (`trim("abc")[0]`),
`findIndex`/`findLastIndex` without a match, `isNil` of a missing field, `$env.result`, and ints
beyond 2^53 next to floats.

Batch n is drawn by plain Python from `random.Random(n)`: reproducible from its number alone,
and many times faster than composing Hypothesis strategies for every node (the comparison
needs no shrinking: it lists every difference of a batch).
"""

from __future__ import annotations

import random
from typing import Any

_PLAIN_FLOATS = [0.0, -0.0, 0.5, 0.95, 1.0, 2.0, -1.0, 100.0, 1e-9, 3.7, 1e300, -2.5]
_ODD_FLOATS = [float("nan"), float("inf"), float("-inf")]
_PLAIN_STRINGS = ["ok", "OK", "error", "", "a.b", "1", "2.5", "x y", "NaN"]
_ODD_STRINGS = ["héllo", "ß", "ok\n", "١٢", "\x1cok", "AΣ", "İ", " ok\u2003"]
_KEYS = ["count", "ok", "value", "name", "items"]
_NAN, _INF = float("nan"), float("inf")
_BIG = 9007199254740992.0  # 2^53: the ints around it are not all floats
_SPECIAL_RESULTS: list[Any] = [
    [_NAN],
    [1.0, _NAN, 2.0],
    [0.5, _NAN],
    [_INF],
    [-_INF, 1.0],
    [_BIG],
    _BIG,
    -_BIG,
    9.223372036854776e18,
    {"count": _NAN, "items": [_NAN, 1.0]},
    {"value": _BIG, "name": "b"},
    {"items": []},
    {"": 1.0, "count": 2.0},
]


def _float(rng: random.Random) -> float:
    return rng.choice(_PLAIN_FLOATS if rng.random() < 0.5 else _ODD_FLOATS)


def _string(rng: random.Random) -> str:
    return rng.choice(_PLAIN_STRINGS if rng.random() < 0.5 else _ODD_STRINGS)


def _floats(rng: random.Random, most: int) -> list[float]:
    return [_float(rng) for _ in range(rng.randint(0, most))]


def _json_value(rng: random.Random) -> Any:
    kind = rng.randrange(5)
    if kind == 0:
        return _float(rng)
    if kind == 1:
        return _string(rng)
    if kind == 2:
        return rng.random() < 0.5
    return _floats(rng, 3) if kind == 3 else None


def result(rng: random.Random) -> Any:
    """A measurement as one of Argo's providers hands it to EvalCondition."""
    kind = rng.randrange(7)
    if kind == 0:
        return _float(rng)
    if kind == 1:
        return _floats(rng, 4)
    if kind == 2:
        return rng.choice(_SPECIAL_RESULTS)
    if kind == 3:
        return None
    if kind == 4:
        return _string(rng)
    if kind == 5:
        return rng.random() < 0.5
    keys = rng.sample(_KEYS, rng.randint(0, 4))
    return {k: _json_value(rng) for k in keys}


_NUM_LITERALS = [
    "0",
    "1",
    "2",
    "0.5",
    "0.95",
    "100",
    "-1",
    "2.5e-1",
    "1.5",  # a fractional power other than ±0.5 (okra fails it: pow-fraction)
    "1_000",
    "0x10",
    "3",
    "9007199254740993",
    "9223372036854775807",
    "-9007199254740993",
]
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
    "findIndex(result, # > 1e9)",
    "findLastIndex(result, isNaN(#))",
    "findIndex([1, 2, 3], # > 5)",
    "findIndex(result, # > 1e9) ?? -1",
    "$env.result",
    '$env["result"]',
    "$env?.result",
    "len(trim(result))",
    "indexOf(result, 'o')",
    "lastIndexOf(upper(result), 'K')",
    "count([1, 2, 3], # > 1)",
    "[1, 2, 3][1]",
    "(0..3)[-1]",
    "first(0..2)",
    "sum([1, 2, 3])",
    "asInt(result) + 9007199254740993",
    "result.missing",
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
    "trim('abc')[0]",
    "upper(result)[0]",
    "split(result, '.')[0]",
    "lower(result)[1:]",
    "result.missing",
    "$env.result",
    "string(result)[0]",
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
    "result == result",
    "result != result",
    "result == [result[0]]",
    "result.items == result.items",
    "result[0:2] == result[0:2]",
    "all([1, 2, 3], !isNaN(#))",
    "any(0..3, isInf(#))",
    "all(result, isNaN(#) || # > 0)",
    "isNaN(result.count)",
    "isNaN(1)",
    "!isNaN(len(result) + 1)",
    "!isInf(-(2 - 3))",
    "let x = [1, 2]; !isNaN(x[0])",
    "isNil(result.missing)",
    "isNil(result.count)",
    "isNil(result?.items?.x)",
    "result.missing matches 'b$'",
    "not (result.missing matches 'b$')",
    "result.missing contains 'x'",
    "not (result.missing startsWith 'x')",
    "result.name endsWith 'b'",
    "result in [0, 1]",
    "result not in [0, 1]",
    "result in ['ok', 'error']",
    "'k' in result",
    "result.items in [[1], []]",
    "nil in result",
    "$env.result == '1'",
    "$env.result != nil",
    "$env.result > 0.5",
    "$env.missing == nil",
    "indexOf(result, 'a') == true",
    "len(result) != '1'",
    "upper(result) == 1",
    "findIndex(result, # > 1e9) == -1",
    "findLastIndex(result, # < -1e9) != -1",
    "findIndex(result, # > 1e9) == nil",
    "findIndex(result, # > 1e9) < 0",
    "result == {'count': 1}",
    "result == {'value': 0.5, 'name': 'b'}",
    "result == 0..1",
    "[1.0, 2.0] == 1..2",
    "9007199254740993 == 9007199254740992.0",
    "result < 9007199254740993",
    "result != 9007199254740993",
    "result == -9223372036854775807 - 1",
    "result matches '^ok$'",
    "result matches '^\\\\d+$'",
    "result matches '\\\\w'",
    "result matches '\\\\bx'",
    "result matches '^[[:alpha:]]+$'",
    "result matches '(?i)^ok$'",
    "not (result matches '^\\\\s*ok\\\\s*$')",
    "result.name[0] == 'h'",
    "result.name[0] == 104",
    "first(result.name) == 104",
    "type(result.name[0]) == 'uint'",
    "result.name[0:2] == 'hé'",
    "result[1:3] == 'é'",
    "len(result) == 5",
    "indexOf(result, 'l') == 3",
    "upper(result) == 'SS'",
    "lower(result) == 'a\u03c3'",
    "trim(result) == 'ok'",
    "'isNaN' in $env",
    "len($env) == 7",
    "let result = 5; result > 1",
    "let x = 1; let x = 2; x > 1",
    "nil in ['', 'ok']",
    "result in ['', 'ok']",
    "result.name in ['ok', 'b']",
    "findIndex(result, # > 1e9) in [0, 1]",
    "findIndex(result, # > 1e9) in 0..3",
    "count(result, # > 0) in 0..1000000",
    "len(result) in [-1, 0]",
    "1 + findLast(result, # > 0) > 0",
    "findLast(result, # > 0) + 1 > 0",
    "max(1, findLastIndex(result, # > 0)) == 1",
    "findLastIndex(result, # > 0) == 0 && true",
    "0 < last(filter(result, # > 0))",
    "all(result, findLastIndex(result, # > 0) >= 0)",
    "result.missing in result",
    "nil not in result",
    "'' in result",
    "result.missing.x or true",
    "result.missing.x and 1 + 1 == 3",
    "not (result.missing.x and false)",
    "result.missing.x or 1 != 2",
    "all(result, # > 0) && all(result, result[3] > 0)",
    "any(result, # > 1) || any(result, result[3] > 0)",
    "none(result, # > 1) && none(result, result[3] > 0)",
    "true && all(result, # > 0) && all(result, result[3] > 0)",
    "result[0] > 0 && all(result, # > 0) && all(result, result[3] > 0)",
]
_ANY_ATOMS = [
    "result",
    "result.items",
    "result.count",
    "result.missing",
    "result[0]",
    "result[0:1]",
    "[1, 2]",
    "[0.5, 1.0]",
    "['ok']",
    "[]",
    "0..2",
    "{'count': 1}",
    "nil",
    "1",
    "0.5",
    "'ok'",
    "true",
    "map(result, #)",
    "filter(result, # > 0)",
    "split(result, '.')",
    "$env.result",
    "trim(result)",
    "indexOf(result, 'o')",
    "findIndex(result, # > 1e9)",
    "find(result, # > 1e9)",
]
_CMP = ["==", "!=", "<", ">", "<=", ">="]
_ARITH = ["+", "-", "*", "/", "%", "**"]


def numbers(rng: random.Random, depth: int = 2) -> str:
    """A numeric expression (or, on purpose now and then, something that is not one)."""
    kind = rng.randint(0, 5 if depth > 0 else 1)
    if kind == 0:
        return rng.choice(_NUM_LITERALS)
    if kind == 1:
        return rng.choice(_NUM_ATOMS)
    if kind == 2:
        op = rng.choice(_ARITH)
        return f"{numbers(rng, depth - 1)} {op} {numbers(rng, depth - 1)}"
    if kind == 3:
        return f"({numbers(rng, depth - 1)})"
    if kind == 4:
        return f"-{numbers(rng, depth - 1)}"
    c = conditions(rng, depth - 1)
    return f"({c} ? {numbers(rng, depth - 1)} : {numbers(rng, depth - 1)})"


def conditions(rng: random.Random, depth: int = 2) -> str:
    """A condition: mostly boolean, with type mismatches mixed in."""
    kind = rng.choice(range(12) if depth > 0 else (0, 1, 2, 10))
    if kind == 0:
        return rng.choice(_BOOL_ATOMS)
    if kind == 1:
        op = rng.choice(_CMP)
        return f"{numbers(rng, max(depth - 1, 0))} {op} {numbers(rng, max(depth - 1, 0))}"
    if kind == 2:
        op = rng.choice(["==", "!=", "<", ">="])
        return f"{rng.choice(_STR_ATOMS)} {op} {rng.choice(_STR_ATOMS)}"
    if kind == 3:
        op = rng.choice(["&&", "||", "and", "or"])
        return f"{conditions(rng, depth - 1)} {op} {conditions(rng, depth - 1)}"
    if kind == 4:
        return f"{rng.choice(['!', 'not '])}{conditions(rng, depth - 1)}"
    if kind == 5:
        return f"({conditions(rng, depth - 1)})"
    if kind == 6:  # chains: expr-lang chains only < > <= >=
        a, b, c = (numbers(rng, 0) for _ in range(3))
        return f"{a} {rng.choice(_CMP)} {b} {rng.choice(_CMP)} {c}"
    if kind == 10:  # loosely typed operands: expr-lang's checker refuses some pairs
        op = rng.choice(["==", "!=", "in", "not in"])
        return f"{rng.choice(_ANY_ATOMS)} {op} {rng.choice(_ANY_ATOMS)}"
    if kind == 7:
        op = rng.choice(["==", "!="])
        return f"{numbers(rng, 0)} {rng.choice(_CMP)} {numbers(rng, 0)} {op} true"
    if kind == 8:
        where = rng.choice(["[1, 2, 0.5]", "0..3", "[]", "result", "['ok', 1]"])
        return f"{numbers(rng, 0)} {rng.choice(['', 'not '])}in {where}"
    if kind == 11:  # powers: exact (integer, ±0.5) agree to the bit; other fractions fail
        power = rng.choice(["2", "3", "-1", "0.5", "-0.5", "1.5", "0.25", "-0.75", "0.95"])
        return f"{rng.choice(_NUM_ATOMS)} ** {power} {rng.choice(_CMP)} {numbers(rng, 0)}"
    c, a, b = (conditions(rng, depth - 1) for _ in range(3))
    return f"{c} ? {a} : {b}"


def cases(batch: int, size: int = 50) -> list[tuple[str, Any]]:
    """Batch number `batch` of (condition, result) pairs."""
    rng = random.Random(batch)
    return [(conditions(rng), result(rng)) for _ in range(size)]
