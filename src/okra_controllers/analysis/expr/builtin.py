"""The built-in functions (expr-lang's and Argo's helpers) and their arities."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, Final

from okra_controllers.analysis.expr.errors import _INT_MAX, _INT_MIN, _Fault
from okra_controllers.analysis.expr.values import (
    _GO_SPACE,
    _TYPED_LISTS,
    _add,
    _check_len,
    _f,
    _fetch,
    _go_float,
    _go_lower,
    _go_quote,
    _go_str,
    _go_string_at,
    _go_upper,
    _GoByte,
    _GoFunc,
    _GoStrings,
    _iface,
    _is_int,
    _is_list,
    _is_map,
    _is_num,
    _is_str,
    _tn,
    _utf8,
    _wrap,
)

_Builtin = Callable[[list[Any]], Any]


def _arg_str(name: str, v: Any) -> str:
    if _is_str(v):
        return str(v)
    raise _Fault(f"invalid argument for {name} (type {_tn(v)})")


def _arg_int(name: str, v: Any) -> int:
    if _is_int(v):
        return int(v)
    if isinstance(v, float) and math.isfinite(v):
        return int(v)
    raise _Fault(f"invalid argument for {name} (type {_tn(v)})")


def _flatten_numbers(name: str, args: list[Any], out: list[Any]) -> list[Any]:
    for a in args:
        if _is_list(a):
            _flatten_numbers(name, list(a), out)
        elif _is_num(a):
            out.append(a)
        else:
            raise _Fault(f"invalid argument for {name} (type {_tn(a)})")
    return out


def _sum_numbers(values: list[Any]) -> Any:
    total: Any = 0
    for v in values:
        if not _is_num(v):
            raise _Fault(f"invalid argument for sum (type {_tn(v)})")
        total = _add(total, v)
    return total


def _b_len(args: list[Any]) -> Any:
    (v,) = args
    if _is_str(v) or _is_list(v) or _is_map(v):
        return len(v)  # expr-lang counts a string's characters (runes)
    raise _Fault(f"invalid argument for len (type {_tn(v)})")


def _b_abs(args: list[Any]) -> Any:
    (v,) = args
    if _is_int(v):
        return _wrap(abs(int(v)))
    if _is_num(v):
        return abs(float(v))
    raise _Fault(f"invalid argument for abs (type {_tn(v)})")


_GO_INT: Final = re.compile(r"[+-]?[0-9]+\Z")


_GO_FLOAT: Final = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity)\Z|nan\Z",
    re.IGNORECASE,
)


def _parse_int(s: str) -> int | None:
    """Go's strconv.ParseInt(s, 10, 64), or None when it would fail."""
    if not _GO_INT.match(s):
        return None
    n = int(s)
    return n if _INT_MIN <= n <= _INT_MAX else None


def _parse_float(s: str) -> float | None:
    """Go's strconv.ParseFloat(s, 64) for decimal input, or None when it would fail."""
    if not _GO_FLOAT.match(s):
        return None
    f = float(s)
    if math.isinf(f) and "inf" not in s.lower():
        return None  # out of range: Go reports an error instead of rounding to Inf
    return f


def _go_trunc(name: str, f: float) -> int:
    """Go's int64(f), toward zero. Of NaN, ±Inf or a value beyond int64 Go's answer depends on
    the CPU Argo runs on (amd64: the minimum int64; arm64: saturated, 0 for NaN): it fails
    instead (an error never passes a verdict; see docs/analysis-expr.md)."""
    if not math.isfinite(f) or not -(2.0**63) <= f < 2.0**63:
        raise _Fault(
            f"{name}({_go_float(f)}) is not evaluated: Go converts NaN, ±Inf and floats beyond"
            " int64 differently on amd64 and arm64, so a verdict could pass where Argo's fails"
        )
    return int(f)


def _to_int(
    name: str, v: Any, bad_str: Callable[[str], str], bad: Callable[[Any], str], whole: Any = int
) -> Any:
    """`v` as an integer, as the built-in `name` makes one: an integer as `whole` makes it,
    a float truncated toward zero, a string parsed as a base-10 int64; a fault whose message
    is `bad_str(v)` for a string that does not parse, `bad(v)` for any other value."""
    if _is_int(v):
        return whole(v)
    if isinstance(v, float):
        return _go_trunc(name, v)
    return _parsed(v, _parse_int, bad_str, bad)


def _to_float(v: Any, bad_str: Callable[[str], str], bad: Callable[[Any], str]) -> Any:
    """`v` as a float: a number converted, a string parsed as a Go float64; a fault whose
    message is `bad_str(v)` for a string that does not parse, `bad(v)` for any other value."""
    if _is_num(v):
        return _f(v)
    return _parsed(v, _parse_float, bad_str, bad)


def _parsed(
    v: Any,
    parse: Callable[[str], Any],
    bad_str: Callable[[str], str],
    bad: Callable[[Any], str],
) -> Any:
    """`parse(v)` for a string `v`; a fault whose message is `bad_str(v)` where that gives
    None, `bad(v)` where `v` is not a string."""
    if not _is_str(v):
        raise _Fault(bad(v))
    n = parse(v)
    if n is None:
        raise _Fault(bad_str(v))
    return n


def _b_int(args: list[Any]) -> Any:
    (v,) = args
    return _to_int(
        "int",
        v,
        lambda s: f"invalid operation: int({s})",
        lambda x: f"invalid operation: int({_tn(x)})",
    )


def _b_float(args: list[Any]) -> Any:
    (v,) = args
    return _to_float(
        v,
        lambda s: f"invalid operation: float({s})",
        lambda x: f"invalid operation: float({_tn(x)})",
    )


def _b_string(args: list[Any]) -> Any:
    return _go_str(args[0])


def _b_type(args: list[Any]) -> Any:
    v = args[0]
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, _GoByte):
        return "uint"
    if isinstance(v, _GoFunc):
        return "func"
    if _is_num(v):
        return "int" if _is_int(v) else "float"
    if _is_str(v):
        return "string"
    if _is_list(v):
        return "array"
    return "map" if _is_map(v) else "unknown"


def _min_max(name: str, args: list[Any], wins: Callable[[Any, Any], bool]) -> Any:
    best: Any = None
    for v in _flatten_numbers(name, args, []):
        if best is None or wins(v, best):
            best = v
    return best


def _b_max(args: list[Any]) -> Any:
    return _min_max("max", args, lambda v, best: bool(v > best))


def _b_min(args: list[Any]) -> Any:
    return _min_max("min", args, lambda v, best: bool(v < best))


def _b_mean(args: list[Any]) -> Any:
    values = _flatten_numbers("mean", args, [])
    total = 0.0
    for v in values:  # left to right, as Go adds (math.fsum would round differently)
        total += _f(v)
    return total / len(values) if values else 0.0


def _b_median(args: list[Any]) -> Any:
    # sorted as Go's sort.Float64s: NaN first
    values = sorted(
        (_f(v) for v in _flatten_numbers("median", args, [])),
        key=lambda x: (not math.isnan(x), x),
    )
    n = len(values)
    if n == 0:
        return 0.0
    if n % 2:
        return values[n // 2]
    return (values[n // 2 - 1] + values[n // 2]) / 2


def _b_first(args: list[Any]) -> Any:
    (v,) = args
    if _is_str(v):
        return _go_string_at(v, 0) if v else None
    return v[0] if _is_list(v) and len(v) else None


def _b_last(args: list[Any]) -> Any:
    (v,) = args
    if _is_str(v):
        return _go_string_at(v, -1) if v else None
    return v[-1] if _is_list(v) and len(v) else None


def _b_get(args: list[Any]) -> Any:
    try:
        return _fetch(args[0], args[1])
    except _Fault:
        return None


def _b_take(args: list[Any]) -> Any:
    v, n = args
    if not _is_list(v):
        raise _Fault(f"cannot take from {_tn(v)}")
    part = v[: max(_arg_int("take", n), 0)]
    return type(v)(part) if isinstance(v, _TYPED_LISTS) else list(part)


def _b_keys(args: list[Any]) -> Any:
    (v,) = args
    if not _is_map(v):
        raise _Fault(f"invalid argument for keys (type {_tn(v)})")
    return list(v.keys())


def _b_values(args: list[Any]) -> Any:
    (v,) = args
    if not _is_map(v):
        raise _Fault(f"invalid argument for values (type {_tn(v)})")
    return list(v.values())


def _rounding(name: str, fn: Callable[[float], float]) -> _Builtin:
    def run(args: list[Any]) -> Any:
        (v,) = args
        if not _is_num(v):
            raise _Fault(f"invalid argument for {name} (type {_tn(v)})")
        x = _f(v)
        return fn(x) if math.isfinite(x) else x

    return run


def _go_round(x: float) -> float:
    """Go's math.Round: half away from zero (Python's round() is half to even)."""
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return t


def _float_check(name: str, test: Callable[[float], bool]) -> _Builtin:
    """Argo's isNaN/isInf, Go functions of a float64: any other value is an error (an int
    literal is made a float when the condition is compiled, see _Call)."""

    def run(args: list[Any]) -> Any:
        (v,) = args
        if isinstance(v, float):
            return test(v)
        raise _Fault(f"interface conversion: interface {{}} is {_iface(v)}, not float64")

    return run


def _b_is_nil(args: list[Any]) -> Any:
    """Argo's isNil(x) ignores x and tells whether `result` is nil (the last argument here)."""
    return args[-1] is None


def _b_default(args: list[Any]) -> Any:
    """Argo's default(x, d) ignores x: `d` when `result` (the last argument here) is nil, else
    `result`."""
    return args[1] if args[-1] is None else args[-1]


def _b_as_int(args: list[Any]) -> Any:
    """Argo's asInt: numbers truncate, strings must be base-10 integers."""
    (v,) = args

    def bad_str(s: str) -> str:
        why = "value out of range" if _GO_INT.match(s) else "invalid syntax"
        return f"strconv.ParseInt: parsing {_go_quote(s)}: {why}"

    return _to_int(
        "asInt",
        v,
        bad_str,
        lambda x: f"asInt() not supported on {_tn(x)} {_go_str(x)}",
        lambda n: _wrap(int(n)),
    )


def _b_as_float(args: list[Any]) -> Any:
    """Argo's asFloat: numbers convert, strings must parse as Go floats."""
    (v,) = args

    def bad_str(s: str) -> str:
        why = "value out of range" if _GO_FLOAT.match(s) else "invalid syntax"
        return f"strconv.ParseFloat: parsing {_go_quote(s)}: {why}"

    return _to_float(v, bad_str, lambda x: f"asFloat() not supported on {_tn(x)} {_go_str(x)}")


def _b_lower(args: list[Any]) -> Any:
    return _go_lower(_arg_str("lower", args[0]))


def _b_upper(args: list[Any]) -> Any:
    return _go_upper(_arg_str("upper", args[0]))


def _b_trim(args: list[Any]) -> Any:
    s = _arg_str("trim", args[0])
    return s.strip(_GO_SPACE) if len(args) == 1 else s.strip(_arg_str("trim", args[1]))


def _b_trim_prefix(args: list[Any]) -> Any:
    s = _arg_str("trimPrefix", args[0])
    return s.removeprefix(" " if len(args) == 1 else _arg_str("trimPrefix", args[1]))


def _b_trim_suffix(args: list[Any]) -> Any:
    s = _arg_str("trimSuffix", args[0])
    return s.removesuffix(" " if len(args) == 1 else _arg_str("trimSuffix", args[1]))


def _b_split(args: list[Any]) -> Any:
    s, sep = _arg_str("split", args[0]), _arg_str("split", args[1])
    n = -1 if len(args) == 2 else _arg_int("split", args[2])
    if n == 0:
        return []
    if sep == "":  # Go splits into characters
        chars = list(s)
        if n < 0 or n >= len(chars):
            return _GoStrings(chars)
        return _GoStrings([*chars[: n - 1], "".join(chars[n - 1 :])])
    return _GoStrings(s.split(sep, n - 1 if n > 0 else -1))


def _b_join(args: list[Any]) -> Any:
    v = args[0]
    glue = "" if len(args) == 1 else _arg_str("join", args[1])
    if not _is_list(v):
        raise _Fault(f"invalid argument for join (type {_tn(v)})")
    parts = [_arg_str("join", x) for x in v]
    _check_len(sum(map(len, parts)) + len(glue) * max(len(parts) - 1, 0))
    return glue.join(parts)


def _b_replace(args: list[Any]) -> Any:
    s, old, new = (_arg_str("replace", a) for a in args[:3])
    n = -1 if len(args) == 3 else _arg_int("replace", args[3])
    hits = len(s) + 1 if old == "" else s.count(old)
    if n >= 0:
        hits = min(hits, n)
    _check_len(len(s) + hits * (len(new) - len(old)))
    return s.replace(old, new, n)


def _b_repeat(args: list[Any]) -> Any:
    s, n = _arg_str("repeat", args[0]), _arg_int("repeat", args[1])
    if n < 0:
        raise _Fault(f"invalid argument for repeat (expected positive integer, got {n})")
    _check_len(len(s) * n)
    return s * n


def _b_index_of(args: list[Any]) -> Any:
    s, sub = _arg_str("indexOf", args[0]), _arg_str("indexOf", args[1])
    if s.isascii() and sub.isascii():
        return s.find(sub)
    return _utf8(s).find(_utf8(sub))  # Go counts bytes


def _b_last_index_of(args: list[Any]) -> Any:
    s, sub = _arg_str("lastIndexOf", args[0]), _arg_str("lastIndexOf", args[1])
    if s.isascii() and sub.isascii():
        return s.rfind(sub)
    return _utf8(s).rfind(_utf8(sub))


def _b_has_prefix(args: list[Any]) -> Any:
    return _arg_str("hasPrefix", args[0]).startswith(_arg_str("hasPrefix", args[1]))


def _b_has_suffix(args: list[Any]) -> Any:
    return _arg_str("hasSuffix", args[0]).endswith(_arg_str("hasSuffix", args[1]))


_MANY: Final = 1 << 16

# name -> (fewest arguments, most arguments, implementation)
_BUILTINS: Final[dict[str, tuple[int, int, _Builtin]]] = {
    "len": (1, 1, _b_len),
    "abs": (1, 1, _b_abs),
    "int": (1, 1, _b_int),
    "float": (1, 1, _b_float),
    "string": (1, 1, _b_string),
    "type": (1, 1, _b_type),
    "max": (1, _MANY, _b_max),
    "min": (1, _MANY, _b_min),
    "mean": (1, _MANY, _b_mean),
    "median": (1, _MANY, _b_median),
    "first": (1, 1, _b_first),
    "last": (1, 1, _b_last),
    "get": (2, 2, _b_get),
    "take": (2, 2, _b_take),
    "keys": (1, 1, _b_keys),
    "values": (1, 1, _b_values),
    "ceil": (1, 1, _rounding("ceil", lambda x: float(math.ceil(x)))),
    "floor": (1, 1, _rounding("floor", lambda x: float(math.floor(x)))),
    "round": (1, 1, _rounding("round", _go_round)),
    "isNaN": (1, 1, _float_check("isNaN", math.isnan)),
    "isInf": (1, 1, _float_check("isInf", math.isinf)),
    "isNil": (1, 1, _b_is_nil),
    "default": (2, 2, _b_default),
    "asInt": (1, 1, _b_as_int),
    "asFloat": (1, 1, _b_as_float),
    "lower": (1, 1, _b_lower),
    "upper": (1, 1, _b_upper),
    "trim": (1, 2, _b_trim),
    "trimPrefix": (1, 2, _b_trim_prefix),
    "trimSuffix": (1, 2, _b_trim_suffix),
    "split": (2, 3, _b_split),
    "join": (1, 2, _b_join),
    "replace": (3, 4, _b_replace),
    "repeat": (2, 2, _b_repeat),
    "indexOf": (2, 2, _b_index_of),
    "lastIndexOf": (2, 2, _b_last_index_of),
    "hasPrefix": (2, 2, _b_has_prefix),
    "hasSuffix": (2, 2, _b_has_suffix),
}

# Functions whose second argument is a predicate: name -> argument kinds after the array.
_PREDICATES: Final[dict[str, tuple[str, ...]]] = {
    "all": ("pred",),
    "any": ("pred",),
    "none": ("pred",),
    "one": ("pred",),
    "filter": ("pred",),
    "map": ("pred",),
    "find": ("pred",),
    "findIndex": ("pred",),
    "findLast": ("pred",),
    "findLastIndex": ("pred",),
    "count": ("pred?",),
    "sum": ("pred?",),
    "reduce": ("pred", "expr?"),
}
