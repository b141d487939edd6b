"""Values as expr-lang sees them: Go's kinds and names, Go's arithmetic and comparisons, and
indexing and slicing of maps, arrays and strings."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

from okra_controllers.analysis.expr.errors import _INT_MAX, _INT_MIN, MAX_STRING, _Fault


def _is_num(x: object) -> bool:
    t = type(x)
    if t is int or t is float:
        return True
    return t is not bool and isinstance(x, int | float)


def _is_list(x: object) -> bool:
    return type(x) is list or isinstance(x, list | tuple)


class _GoInts(list[Any]):
    """A Go []int (what `..` builds, or an environment's list of ints); a plain list is an
    []interface {}. Go compares slices of different element types as unequal."""

    __slots__ = ()


class _GoFloats(list[Any]):
    """A Go []float64: a provider's vector (Prometheus, Datadog), or a slice of one."""

    __slots__ = ()


class _GoStrings(list[Any]):
    """A Go []string: what `split` returns."""

    __slots__ = ()


_TYPED_LISTS: Final = (_GoInts, _GoFloats, _GoStrings)


def _go_list(value: Any) -> Any:
    """An environment's value with its top-level list typed as Go holds it (see types)."""
    if type(value) is list and value:
        if all(type(v) is float for v in value):
            return _GoFloats(value)
        if all(type(v) is int for v in value):
            return _GoInts(value)
    return value


def _is_map(x: object) -> bool:
    return type(x) is dict or isinstance(x, Mapping)


def _is_str(x: object) -> bool:
    return type(x) is str or isinstance(x, str)


def _is_int(x: object) -> bool:
    return type(x) is int or (isinstance(x, int) and not isinstance(x, bool))


def _tn(x: object) -> str:
    """The Go type name Argo's messages use for a value."""
    if x is None:
        return "<nil>"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float64"
    if isinstance(x, str):
        return "string"
    if _is_list(x):
        return "[]interface {}"
    if _is_map(x):
        return "map[string]interface {}"
    return type(x).__name__


def _iface(x: object) -> str:
    """A value's type as Go's failed interface conversion names it."""
    return "nil" if x is None else _tn(x)


def _wrap(n: int) -> int:
    """Go's int64 arithmetic: wrap on overflow (this also keeps numbers small)."""
    if _INT_MIN <= n <= _INT_MAX:
        return n
    return ((n - _INT_MIN) & 0xFFFF_FFFF_FFFF_FFFF) + _INT_MIN


def _f(x: Any) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _go_float(f: float) -> str:
    """Go's `%v` for a float64: shortest digits, exponent form below 1e-4 or from 1e6 up
    (strconv's %g with the shortest precision, so 1000000.0 prints as 1e+06)."""
    if f != f:
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digit_tuple, exponent = Decimal(repr(f)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + exponent  # position of the decimal point within digits
    exp10 = point - 1
    prefix = "-" if sign else ""
    if exp10 < -4 or exp10 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return prefix + digits + "0" * (point - len(digits))
    return f"{prefix}{digits[:point]}.{digits[point:]}"


def _go_str(x: object) -> str:
    """Go's `fmt.Sprint` of a JSON-shaped value (what expr's `string()` returns)."""
    if x is None:
        return "<nil>"
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return _go_float(x)
    if isinstance(x, str):
        return x
    if _is_list(x):
        assert isinstance(x, list | tuple)
        return "[" + " ".join(_go_str(v) for v in x) + "]"
    if _is_map(x):
        assert isinstance(x, Mapping)
        items = sorted(x.items(), key=lambda kv: str(kv[0]))
        return "map[" + " ".join(f"{_go_str(k)}:{_go_str(v)}" for k, v in items) + "]"
    return f"<{type(x).__name__}>"


def _go_quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


class _GoByte(int):
    """A Go uint8: what indexing a string gives at run time (expr-lang indexes bytes)."""

    __slots__ = ()


class _GoFunc:
    """One of Argo's helper functions as a value (`$env.isNaN`): opaque, never callable here."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<func {self.name}>"


ARGO_FUNCTIONS: Final = ("asInt", "asFloat", "isNaN", "isInf", "isNil", "default")


"""The names Argo's EvalCondition puts in the environment beside `result`."""


_ARGO_ENV: Final[dict[str, Any]] = {name: _GoFunc(name) for name in ARGO_FUNCTIONS}


def _utf8(s: str) -> bytes:
    """A string as Go holds it: UTF-8 bytes (bytes cut out of a character come back as the
    lone surrogates of Python's "surrogateescape")."""
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "replace")


def _go_string_at(s: str, i: int) -> _GoByte:
    """Go's s[i] on a string: a byte, counted from the end when negative (expr-lang)."""
    b = s.encode("ascii") if s.isascii() else _utf8(s)
    n = len(b)
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise _Fault(f"index out of range: {j} (array length is {n})")
    return _GoByte(b[j])


_GO_UPPER: Final = {
    **{c: c + 8 for base in (0x1F80, 0x1F90, 0x1FA0) for c in range(base, base + 8)},
    0x1FB3: 0x1FBC,
    0x1FC3: 0x1FCC,
    0x1FF3: 0x1FFC,
}


"""Go's unicode.ToUpper where Python's upper() gives several characters and Go one."""


_GO_SPACE: Final = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


"""unicode.IsSpace, what Go's strings.TrimSpace trims (Python's strip() also trims \x1c-\x1f)."""


def _go_upper(s: str) -> str:
    """Go's strings.ToUpper: each character mapped alone (ß stays ß; Python's upper() gives SS)."""
    if s.isascii():
        return s.upper()
    out = []
    for c in s:
        u = c.upper()
        out.append(u if len(u) == 1 else chr(_GO_UPPER.get(ord(c), ord(c))))
    return "".join(out)


def _go_lower(s: str) -> str:
    """Go's strings.ToLower: each character mapped alone (no final sigma; U+0130 is i)."""
    if s.isascii():
        return s.lower()
    return "".join(("i" if c == "\u0130" else c.lower()) for c in s)


def _equal(a: object, b: object) -> bool:
    """expr-lang's runtime.Equal: numbers by value (an int meeting a float becomes a float64, as
    in Go), slices element by element (so a vector holding NaN is not equal to itself), slices
    of two different Go element types never, maps (and anything else) by reflect.DeepEqual."""
    ta, tb = type(a), type(b)
    if ta is tb and (ta is str or ta is float or ta is int or ta is bool):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_num(a) and _is_num(b):
        if _is_int(a) and _is_int(b):
            return bool(a == b)
        return _f(a) == _f(b)
    if _is_str(a) and _is_str(b):
        return a == b
    if _is_list(a) and _is_list(b):
        assert isinstance(a, list | tuple)
        assert isinstance(b, list | tuple)
        if isinstance(a, _TYPED_LISTS) and isinstance(b, _TYPED_LISTS) and ta is not tb:
            return False  # reflect.DeepEqual of []int and []float64
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return _deep_equal(a, b)


def _go_kind(x: object) -> object:
    if x is None or isinstance(x, bool | str | _GoByte | _GoInts | _GoFloats | _GoStrings):
        return type(x)
    if _is_int(x):
        return int
    if isinstance(x, float):
        return float
    if _is_list(x):
        return list
    return dict if _is_map(x) else type(x)


def _deep_equal(a: object, b: object) -> bool:
    """Go's reflect.DeepEqual of two JSON-shaped values: the same Go type (an int never equals
    a float64), floats by `==` (NaN equals nothing), and the same map or slice equal to itself."""
    if a is b and (_is_list(a) or _is_map(a)):
        return True
    if _go_kind(a) is not _go_kind(b):
        return False
    if _is_list(a):
        assert isinstance(a, list | tuple)
        assert isinstance(b, list | tuple)
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if _is_map(a):
        assert isinstance(a, Mapping)
        assert isinstance(b, Mapping)
        return len(a) == len(b) and all(k in b and _deep_equal(v, b[k]) for k, v in a.items())
    return bool(a == b)


def _mismatch(op: str, a: object, b: object) -> _Fault:
    return _Fault(f"invalid operation: {op} (mismatched types {_tn(a)} and {_tn(b)})")


def _ordered(op: str, a: object, b: object) -> tuple[Any, Any]:
    """The operands of `<` and friends; an int meeting a float becomes a float64, as in Go (so
    9007199254740993 < 9007199254740992.0 is false, the int rounding to 2^53)."""
    if _is_num(a) and _is_num(b):
        if _is_int(a) and _is_int(b):
            return a, b
        return _f(a), _f(b)
    if isinstance(a, str) and isinstance(b, str):
        if a.isascii() and b.isascii():
            return a, b
        return _utf8(a), _utf8(b)  # Go compares bytes (a slice may cut a character)
    raise _mismatch(op, a, b)


def _lt(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is tb and (ta is float or ta is int):
        return bool(a < b)
    x, y = _ordered("<", a, b)
    return bool(x < y)


def _le(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is tb and (ta is float or ta is int):
        return bool(a <= b)
    x, y = _ordered("<=", a, b)
    return bool(x <= y)


def _gt(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is tb and (ta is float or ta is int):
        return bool(a > b)
    x, y = _ordered(">", a, b)
    return bool(x > y)


def _ge(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is tb and (ta is float or ta is int):
        return bool(a >= b)
    x, y = _ordered(">=", a, b)
    return bool(x >= y)


def _ne(a: Any, b: Any) -> bool:
    return not _equal(a, b)


def _check_len(n: int) -> None:
    if n > MAX_STRING:
        raise _Fault(f"string of {n} characters exceeds the limit of {MAX_STRING}")


def _add(a: Any, b: Any) -> Any:
    if _is_num(a) and _is_num(b):
        if _is_int(a) and _is_int(b):
            return _wrap(int(a) + int(b))
        return _f(a) + _f(b)
    if _is_str(a) and _is_str(b):
        _check_len(len(a) + len(b))
        return a + b
    raise _mismatch("+", a, b)


def _sub(a: Any, b: Any) -> Any:
    if _is_num(a) and _is_num(b):
        if _is_int(a) and _is_int(b):
            return _wrap(int(a) - int(b))
        return _f(a) - _f(b)
    raise _mismatch("-", a, b)


def _mul(a: Any, b: Any) -> Any:
    if _is_num(a) and _is_num(b):
        if _is_int(a) and _is_int(b):
            return _wrap(int(a) * int(b))
        return _f(a) * _f(b)
    raise _mismatch("*", a, b)


def _div(a: Any, b: Any) -> float:
    if not (_is_num(a) and _is_num(b)):
        raise _mismatch("/", a, b)
    x, y = _f(a), _f(b)
    if y == 0:
        if x == 0 or x != x:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def _mod(a: Any, b: Any) -> int:
    if not (_is_int(a) and _is_int(b)):
        raise _mismatch("%", a, b)
    x, y = int(a), int(b)
    if y == 0:
        raise _Fault("integer divide by zero")
    r = abs(x) % abs(y)
    return _wrap(-r if x < 0 else r)


def _odd_int(y: float) -> bool:
    return math.isfinite(y) and y.is_integer() and math.fmod(y, 2.0) != 0


_POW_FRACTION: Final = (
    "x ** y with a fraction y other than 0.5 or -0.5 is not evaluated: Argo Rollouts computes"
    " it with Go's exp and log, whose last bit differs from this machine's (and, with FMA,"
    " between Argo's own machines), so a verdict could pass where Argo's fails"
)


def _go_pow(x: float, y: float) -> float:
    """Go's math.Pow, step by step (its special cases, sqrt for ±0.5, repeated squaring for
    the integer part), so that results agree to the bit. x ** (a fraction other than ±0.5)
    would go through exp(log(x) * f), where Go's and C's exp/log may differ in the last bit:
    it fails instead (an error never passes a verdict; see docs/analysis-expr.md)."""
    if y == 0 or x == 1:
        return 1.0
    if y == 1:
        return x
    if math.isnan(x) or math.isnan(y):
        return math.nan
    if x == 0:
        negative = math.copysign(1.0, x) < 0 and _odd_int(y)
        if y < 0:
            return -math.inf if negative else math.inf
        return x if negative else 0.0
    if math.isinf(y):
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else math.inf
    if math.isinf(x):
        if x < 0:
            return _go_pow(1 / x, -y)
        return 0.0 if y < 0 else math.inf
    if y == 0.5:
        return math.sqrt(x) if x >= 0 else math.nan
    if y == -0.5:
        return 1 / math.sqrt(x) if x >= 0 else math.nan
    yf, yi = math.modf(abs(y))
    if yf != 0 and x < 0:
        return math.nan
    if yi >= 2.0**63:
        if x == -1:
            return 1.0
        return 0.0 if (abs(x) < 1) == (y > 0) else math.inf
    a1, ae = 1.0, 0
    if yf != 0:
        raise _Fault(_POW_FRACTION)
    x1, xe = math.frexp(x)
    i = int(yi)
    while i != 0:
        if xe < -(1 << 12) or xe > (1 << 12):
            ae += xe
            break
        if i & 1:
            a1 *= x1
            ae += xe
        x1 *= x1
        xe <<= 1
        if x1 < 0.5:
            x1 += x1
            xe -= 1
        i >>= 1
    if y < 0:
        a1, ae = 1 / a1, -ae
    try:
        return math.ldexp(a1, ae)
    except OverflowError:
        return math.copysign(math.inf, a1)


def _pow(a: Any, b: Any) -> float:
    if not (_is_num(a) and _is_num(b)):
        raise _mismatch("**", a, b)
    return _go_pow(_f(a), _f(b))


def _in(needle: Any, haystack: Any) -> bool:
    if haystack is None:
        return False
    if _is_list(haystack):
        return any(_equal(item, needle) for item in haystack)
    if _is_map(haystack):
        if needle is None:
            return "" in haystack  # expr-lang looks up the key type's zero value
        if not _is_str(needle):
            raise _Fault(f"cannot use {_tn(needle)} as a map key (map keys are strings)")
        return needle in haystack
    raise _Fault(f'operator "in" not defined on {_tn(haystack)}')


def _strings(op: str, a: Any, b: Any) -> tuple[str, str]:
    if _is_str(a) and _is_str(b):
        return a, b
    raise _mismatch(op, a, b)


def _contains(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False  # expr-lang: a nil operand of a string operator gives false
    x, y = _strings("contains", a, b)
    return y in x


def _starts_with(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    x, y = _strings("startsWith", a, b)
    return x.startswith(y)


def _ends_with(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    x, y = _strings("endsWith", a, b)
    return x.endswith(y)


_BINARY_FUNCS: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "+": _add,
    "-": _sub,
    "*": _mul,
    "/": _div,
    "%": _mod,
    "**": _pow,
    "^": _pow,
    "==": _equal,
    "!=": _ne,
    "<": _lt,
    "<=": _le,
    ">": _gt,
    ">=": _ge,
    "in": _in,
    "contains": _contains,
    "startsWith": _starts_with,
    "endsWith": _ends_with,
}


def _to_index(key: Any) -> int:
    if _is_int(key):
        return int(key)
    if isinstance(key, float) and math.isfinite(key):
        return int(key)  # Go's int(x) truncates
    raise _Fault(f"cannot use {_tn(key)} {_go_str(key)} as an index")


def _fetch(obj: Any, key: Any) -> Any:
    """obj[key] / obj.key with expr's rules; maps and arrays only, never Python attributes."""
    if _is_str(obj) and not _is_str(key):
        return _go_string_at(obj, _to_index(key))
    if _is_list(obj) or _is_str(obj):
        if _is_str(key):
            raise _Fault(f"cannot fetch {key} from {_tn(obj)}")
        i = _to_index(key)
        n = len(obj)
        if i < 0:
            i += n
        if i < 0 or i >= n:
            raise _Fault(f"index out of range: {i} (array length is {n})")
        return obj[i]
    if _is_map(obj):
        if not _is_str(key):
            raise _Fault(f"cannot use {_tn(key)} as a map key (map keys are strings)")
        return obj.get(key)
    raise _Fault(f"cannot fetch {_go_str(key)} from {_tn(obj)}")


def _slice_bounds(n: int, lo: Any, hi: Any) -> tuple[int, int]:
    a = 0 if lo is None else _to_index(lo)
    b = n if hi is None else _to_index(hi)
    if a < 0:
        a = max(n + a, 0)
    if b < 0:
        b = max(n + b, 0)
    b = min(b, n)
    return min(a, b), b


def _slice(obj: Any, lo: Any, hi: Any) -> Any:
    if not (_is_list(obj) or _is_str(obj)):
        raise _Fault(f"cannot slice {_tn(obj)}")
    if _is_str(obj) and not obj.isascii():  # Go slices a string's bytes
        raw = _utf8(obj)
        a, b = _slice_bounds(len(raw), lo, hi)
        return raw[a:b].decode("utf-8", "surrogateescape")
    a, b = _slice_bounds(len(obj), lo, hi)
    part = obj[a:b]
    if isinstance(obj, _TYPED_LISTS):
        return type(obj)(part)  # a slice of a Go slice keeps its type
    return list(part) if isinstance(part, tuple) else part
