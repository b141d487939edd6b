"""expr-lang's compile-time type check, for Argo Rollouts' conditions.

Argo compiles every condition with `expr.Env(env)`, where `env["result"]` is the measurement
itself; expr's checker then knows `result`'s Go type and rejects, before anything runs, an
operation that cannot apply to it, even in a branch that would never be evaluated:
`isNil(result) || result < 1` with a nil result (an empty Datadog answer) is an error in Argo,
not `true`; `result == 1` on a vector and `"k" in result` on a float list are errors too. The
measurement's phase is then Error, not Successful or Failed. okra evaluates conditions itself,
so it runs the same check: `check(condition, result)` raises ExprError where expr's checker
would.

Types are those of the measurement's Go value as Argo's providers build it: float64, []float64
(a Prometheus vector, a Datadog series), nil (expr's "unknown", which no operator accepts),
string, bool, and JSON documents from the web provider (`map[string]interface {}` whose
values are `interface {}`). `interface {}` (ANY here) passes every check, as in expr: its
operations are checked when they run.

Arrays come in two kinds, as in expr's checker: ("array", T) is a Go slice []T (a vector,
`split`'s []string), and ("list", T) is an []interface {} whose elements the checker knows to
be T (an array literal whose elements are all of one kind, `0..3`, `filter`, `map`). Both index
to T and compare element by element; a function that looks at Go types only (`first`, `last`,
`max`...) sees a list's elements as interface {}.

The rules cover the operators and built-ins okra implements; anything else is left to run time.
"""

from __future__ import annotations

from typing import Any, Final

ANY: Final = "interface {}"
VOID: Final = "<unknown>"
"""expr-lang's typeless unknown (an operation on unknown operands, `$env`, a member of an
unknown): like ANY to every check, except that nothing is assignable to it (a conditional
`c ? 1 : x + 1` is unknown, `c ? 1 : result.x` an int)."""
NIL: Final = "unknown"  # expr's name for the type of a nil value in the environment
BOOL: Final = "bool"
INT: Final = "int"
FLOAT: Final = "float64"
STRING: Final = "string"

Type = str | tuple[str, Any]
"""A type name, ("array", element type), ("list", element type) or ("map", value type)."""


class TypeCheckError(Exception):
    """What expr's checker reports; `offset` is where in the condition."""

    def __init__(self, reason: str, offset: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset


def type_of(value: Any) -> Type:
    """The Go type Argo's providers give `value` (a measurement)."""
    if value is None:
        return NIL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STRING
    if isinstance(value, list):
        if value and all(isinstance(v, float) for v in value):
            return ("array", FLOAT)
        if value and all(type(v) is int for v in value):
            return ("array", INT)
        return ("array", ANY)
    if isinstance(value, dict):
        return ("map", ANY)
    return ANY


def name(t: Type) -> str:
    if isinstance(t, tuple):
        kind, elem = t
        if kind == "list":
            return "[]interface {}"
        return f"[]{name(elem)}" if kind == "array" else f"map[string]{name(elem)}"
    return t


def is_num(t: Type) -> bool:
    return t in (INT, FLOAT)


def is_array(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] in ("array", "list")


def is_map(t: Type) -> bool:
    return isinstance(t, tuple) and t[0] == "map"


def elem(t: Type) -> Type:
    return t[1] if isinstance(t, tuple) else ANY


def go_elem(t: Type) -> Type:
    """The element type Go's reflection sees (a list's elements are interface {})."""
    return t[1] if isinstance(t, tuple) and t[0] != "list" else ANY


def kind(t: Type) -> str:
    """Go's reflect.Kind of a type, as expr's checker compares array literal elements."""
    return t[0] if isinstance(t, tuple) and t[0] == "map" else "slice" if is_array(t) else str(t)


def comparable(a: Type, b: Type) -> bool:
    """Whether expr accepts `a == b` at compile time."""
    if ANY in (a, b) or VOID in (a, b) or NIL in (a, b):
        return True
    if is_num(a) and is_num(b):
        return True
    if is_array(a) and is_array(b):
        return True
    return a == b


def assignable(a: Type, b: Type) -> bool:
    """Whether Go assigns a value of type `a` to one of type `b` (anything to interface {})."""
    if VOID in (a, b):
        return False
    return b == ANY or a == b or (is_array(a) and is_array(b) and name(a) == name(b))


def plain(t: Type) -> Type:
    """ANY for either unknown."""
    return ANY if t == VOID else t


def same_or_any(a: Type, b: Type) -> Type:
    return a if a == b else ANY
