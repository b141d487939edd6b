"""expr-lang's compile-time type check (Argo compiles against the live result): which
operations cannot apply to the types the environment holds."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, NoReturn

from okra_controllers.analysis.expr import types as _T  # noqa: N812 (short: used everywhere)
from okra_controllers.analysis.expr.builtin import _BUILTINS, _PREDICATES
from okra_controllers.analysis.expr.errors import ExprError
from okra_controllers.analysis.expr.nodes import (
    _FLOAT_FUNCS,
    _Array,
    _Binary,
    _Call,
    _Chain,
    _Coalesce,
    _Cond,
    _Const,
    _EnvRef,
    _Ident,
    _Let,
    _Local,
    _Logical,
    _MapLit,
    _Matches,
    _Member,
    _Node,
    _Pointer,
    _PredicateCall,
    _Range,
    _Slice,
    _Unary,
)
from okra_controllers.analysis.expr.parser import _COMPARISON
from okra_controllers.analysis.expr.values import _is_int, _is_str

_ARITH_OPS: Final = frozenset({"+", "-", "*", "/", "%", "**", "^"})


_STRING_OPS: Final = frozenset({"contains", "startsWith", "endsWith", "matches"})


_NUMERIC_FUNCS: Final = frozenset({"abs", "ceil", "floor", "round"})


_ARRAY_FUNCS: Final = frozenset({"first", "last", "keys", "values", "take"})


_STRING_FUNCS: Final = frozenset(
    {
        "lower",
        "upper",
        "trim",
        "trimPrefix",
        "trimSuffix",
        "split",
        "repeat",
        "replace",
        "indexOf",
        "lastIndexOf",
        "hasPrefix",
        "hasSuffix",
    }
)


def _num_or_str(t: _T.Type) -> bool:
    return _T.is_num(t) or t == _T.STRING


_MAYBE: Final[dict[str, Callable[[_T.Type], bool]]] = {
    **dict.fromkeys(_COMPARISON, _num_or_str),
    "+": _num_or_str,
    "%": lambda t: t == _T.INT,
    **dict.fromkeys(_STRING_OPS, lambda t: t == _T.STRING),
}


"""What the known side of a binary operator may be when the other is interface {}."""


def _bad(reason: str, node: _Node) -> NoReturn:
    raise ExprError(reason, offset=node.offset)


def _mismatched(op: str, a: _T.Type, b: _T.Type, node: _Node) -> NoReturn:
    _bad(f"invalid operation: {op} (mismatched types {_T.name(a)} and {_T.name(b)})", node)


class _Scope(dict[str, _T.Type]):
    """The types of the names in scope (`let` variables under "let <name>"), and the plan the
    check makes for the evaluation: node -> "int" / "string" for an `==` expr-lang compiles to a
    typed comparison, "float" for an isNaN/isInf whose int literals become floats."""

    __slots__ = ("plan",)

    def __init__(self, names: Mapping[str, _T.Type], plan: dict[_Node, str]) -> None:
        super().__init__(names)
        self.plan = plan


def _array_literal(types: list[_T.Type]) -> _T.Type:
    """expr-lang's arrayNode: elements all of one Go kind make a list of the last one's type."""
    if not types:
        return ("list", _T.ANY)
    if all(_T.kind(t) == _T.kind(types[0]) for t in types):
        return ("list", types[-1])
    return ("list", _T.ANY)


def _int_const(node: _Node) -> bool:
    return isinstance(node, _Const) and _is_int(node.value)


def _in_shape(node: _Binary, left: _T.Type) -> str | None:
    """How expr-lang's optimizer rewrites `left in right` (see _In), if it does."""
    right = node.right
    if left == _T.INT and isinstance(right, _Range):
        return "range" if _int_const(right.lo) and _int_const(right.hi) else None
    if not isinstance(right, _Array) or not right.items:
        return None
    if left == _T.INT and all(_int_const(i) for i in right.items):
        return "ints"
    if all(isinstance(i, _Const) and _is_str(i.value) for i in right.items):
        return "strings"
    return None


def _static(node: _Node, item: _T.Type, env: _Scope) -> _T.Type:
    """The static type of `node` where `#` has type `item`; ExprError where expr's checker
    rejects the expression. `env` gives the names' types; a name it lacks is an error, as in
    expr-lang compiling against an environment (`expr.Env`). Unknown is ANY here, whichever
    of expr-lang's two unknowns it is (see _static_raw)."""
    t = _static_raw(node, item, env)
    return _T.ANY if t == _T.VOID else t


# Long on purpose: one case per syntax node, as expr-lang's checker's visit switch; apart,
# each case would be looked up again by node type.
def _static_raw(node: _Node, item: _T.Type, env: _Scope) -> _T.Type:
    """_static, telling expr-lang's typeless unknown (VOID: an operation on unknown operands)
    from `interface {}` (ANY: a JSON value), which only a conditional and `??` look at."""
    if isinstance(node, _Const):
        return _T.type_of(node.value) if not isinstance(node.value, (list, dict)) else _T.ANY
    if isinstance(node, _Ident):
        if node.name not in env:
            _bad(f"unknown name {node.name}", node)
        return env[node.name]
    if isinstance(node, _Local):
        return env.get("let " + node.name, _T.ANY)
    if isinstance(node, _Pointer):
        return item if node.kind == "" else _T.INT if node.kind == "index" else _T.VOID
    if isinstance(node, _Let):
        if node.name in env:
            _bad(f"cannot redeclare {node.name}", node)
        if node.name in _BUILTINS or node.name in _PREDICATES:
            _bad(f"cannot redeclare builtin {node.name}", node)
        if "let " + node.name in env:
            _bad(f"cannot redeclare variable {node.name}", node)
        value = _static(node.value, item, env)
        return _static(node.body, item, _Scope({**env, "let " + node.name: value}, env.plan))
    if isinstance(node, _Array):
        return _array_literal([_static(i, item, env) for i in node.items])
    if isinstance(node, _MapLit):
        for k, v in node.pairs:
            _static(k, item, env)
            _static(v, item, env)
        return ("map", _T.ANY)
    if isinstance(node, _Chain):
        return _static(node.inner, item, env)
    if isinstance(node, _Member):
        if isinstance(node.obj, _EnvRef):  # $env.result is typed as result is
            key_node = node.key
            if isinstance(key_node, _Const) and _is_str(key_node.value):
                name = str(key_node.value)
                if name in env and not name.startswith("let "):
                    return env[name]
                if not node.optional:
                    _bad(f"unknown name {name}", node)
                return _T.VOID
            _static(key_node, item, env)
            return _T.VOID
        obj, key = _static(node.obj, item, env), _static(node.key, item, env)
        if obj == _T.ANY:
            return _T.VOID
        if obj == _T.NIL:
            if isinstance(node.key, _Const) and _is_str(node.key.value):
                _bad(f"type nil has no field {node.key.value}", node)
            _bad(f"type unknown[{_T.name(key)}] is undefined", node)
        if _T.is_map(obj):
            if key not in (_T.STRING, _T.ANY):
                _bad(f"cannot use {_T.name(key)} to get an element from {_T.name(obj)}", node)
            return _T.elem(obj)
        if _T.is_array(obj):  # (a string typed string cannot be indexed in expr-lang)
            if key not in (_T.INT, _T.ANY):
                _bad(f"array elements can only be selected using an integer (got {key})", node)
            return _T.elem(obj)
        if isinstance(node.key, _Const) and _is_str(node.key.value):
            _bad(f"type {_T.name(obj)} has no field {node.key.value}", node)
        _bad(f"type {_T.name(obj)}[{_T.name(key)}] is undefined", node)
    if isinstance(node, _Slice):
        obj = _static(node.obj, item, env)
        for bound in (node.lo, node.hi):
            if bound is not None:
                _static(bound, item, env)
        if obj == _T.ANY:
            return _T.VOID
        if obj == _T.STRING or _T.is_array(obj):
            return obj
        _bad(f"cannot slice {_T.name(obj)}", node)
    if isinstance(node, _Unary):
        t = _static(node.operand, item, env)
        if node.op in ("!", "not"):
            if t not in (_T.BOOL, _T.ANY):
                _bad(f"invalid operation: {node.op} (mismatched type {_T.name(t)})", node)
            return _T.BOOL
        if not (_T.is_num(t) or t == _T.ANY):
            _bad(f"invalid operation: {node.op} (mismatched type {_T.name(t)})", node)
        return _T.VOID if t == _T.ANY else t
    if isinstance(node, _Logical):
        for operand in node.operands:
            t = _static(operand, item, env)
            if t not in (_T.BOOL, _T.ANY):
                _mismatched(node.op, t, _T.BOOL, node)
        return _T.BOOL
    if isinstance(node, _Matches):
        a, b = _static(node.left, item, env), _static(node.right, item, env)
        if a not in (_T.STRING, _T.ANY) or b not in (_T.STRING, _T.ANY):
            _mismatched("matches", a, b, node)
        return _T.BOOL
    if isinstance(node, _Binary):
        a, b = _static(node.left, item, env), _static(node.right, item, env)
        op = node.op
        if op in ("==", "!="):
            if not _T.comparable(a, b):
                _mismatched(op, a, b, node)
            if a == b and a in (_T.INT, _T.STRING):
                env.plan[node] = a  # compiled to OpEqualInt / OpEqualString
            return _T.BOOL
        if op == "in":
            shape = _in_shape(node, a)
            if shape is not None:
                env.plan[node] = shape
            if b == _T.ANY:
                return _T.BOOL
            if _T.is_map(b):
                if a not in (_T.STRING, _T.ANY):
                    _bad(f"cannot use {_T.name(a)} as type string in map key", node)
                return _T.BOOL
            if _T.is_array(b):
                e = _T.plain(_T.elem(b))
                if not _T.comparable(a, e):
                    _bad(f"cannot use {_T.name(a)} as type {_T.name(e)} in array", node)
                return _T.BOOL
            if a != _T.ANY or b != _T.STRING:
                _mismatched(op, a, b, node)
        if _T.ANY in (a, b):  # expr's MaybeCompatible: the other side could be right
            if op == "in":
                return _T.BOOL
            accepts = _MAYBE.get(op, _T.is_num)
            other = b if a == _T.ANY else a
            if other != _T.ANY and not accepts(other):
                _mismatched(op, a, b, node)
            if op in _COMPARISON or op in _STRING_OPS:
                return _T.BOOL
            return _T.FLOAT if op in ("/", "**", "^") else _T.INT if op == "%" else _T.VOID
        if op in _STRING_OPS:
            if a != _T.STRING or b != _T.STRING:
                _mismatched(op, a, b, node)
            return _T.BOOL
        if op in _COMPARISON:
            if not ((_T.is_num(a) and _T.is_num(b)) or a == b == _T.STRING):
                _mismatched(op, a, b, node)
            return _T.BOOL
        if op in _ARITH_OPS:
            if op == "+" and a == b == _T.STRING:
                return _T.STRING
            if op == "%":
                if a != _T.INT or b != _T.INT:
                    _mismatched(op, a, b, node)
                return _T.INT
            if not (_T.is_num(a) and _T.is_num(b)):
                _mismatched(op, a, b, node)
            if op in ("/", "**", "^"):
                return _T.FLOAT
            return _T.INT if a == b == _T.INT else _T.FLOAT
        return _T.ANY
    if isinstance(node, _Coalesce):  # expr-lang's binaryNode for ??
        a, b = _static_raw(node.left, item, env), _static_raw(node.right, item, env)
        if a == _T.NIL:
            return b
        if b == _T.NIL:
            return a
        return a if _T.assignable(b, a) else _T.VOID
    if isinstance(node, _Cond):
        c = _static(node.cond, item, env)
        if c not in (_T.BOOL, _T.ANY):
            _bad(f"non-bool expression (type {_T.name(c)}) used as condition", node)
        yes, no = _static_raw(node.yes, item, env), _static_raw(node.no, item, env)
        if yes == _T.NIL:
            return no
        if no == _T.NIL:
            return yes
        if _T.assignable(yes, no):  # expr-lang's conditionalNode
            if _T.is_array(yes) and _T.is_array(no):
                e1, e2 = _T.elem(yes), _T.elem(no)
                if not (_T.assignable(e1, e2) and _T.assignable(e2, e1)):
                    return ("list", _T.ANY)
            return yes
        return _T.VOID
    if isinstance(node, _Range):
        a, b = _static(node.lo, item, env), _static(node.hi, item, env)
        if a not in (_T.INT, _T.ANY) or b not in (_T.INT, _T.ANY):
            _mismatched("..", a, b, node)
        return ("list", _T.INT)
    if isinstance(node, _PredicateCall):
        arr = _static(node.array, item, env)
        if arr != _T.ANY and not _T.is_array(arr):
            _bad(f"builtin {node.name} takes only array (got {_T.name(arr)})", node)
        e = _T.VOID if arr == _T.ANY else _T.elem(arr)  # `#` of an unknown array
        p = _T.ANY if node.pred is None else _static_raw(node.pred, e, env)
        if node.extra is not None:
            _static(node.extra, item, env)
        if node.name in ("all", "any", "none", "one"):
            return _T.BOOL
        if node.name in ("count", "findIndex", "findLastIndex"):
            return _T.INT
        if node.name == "filter":
            return ("list", e)
        if node.name in ("find", "findLast"):
            return e
        if node.name == "map":
            return ("list", p)
        if node.name == "sum":
            return e if node.pred is None else p
        return p  # reduce: its predicate's type
    if isinstance(node, _EnvRef):
        return _T.VOID
    if isinstance(node, _Call):
        args = [_static(a, item, env) for a in node.args]
        return _static_call(node, args, env)
    return _T.ANY


def _static_get(node: _Call, base: _T.Type, key: _T.Type) -> _T.Type:
    """expr-lang's checkBuiltinGet: `get` looks into arrays (by int) and maps (by string)."""
    if base in (_T.BOOL, _T.INT, _T.FLOAT, _T.STRING):
        _bad(f"type {_T.name(base)} does not support indexing", node)
    if _T.is_array(base) and key not in (_T.INT, _T.ANY, _T.NIL):
        _bad(f"non-integer slice index {_T.name(key)}", node)
    if _T.is_map(base) and key not in (_T.STRING, _T.ANY, _T.NIL):
        _bad(f"cannot use {_T.name(key)} to get an element from {_T.name(base)}", node)
    return _T.elem(base) if _T.is_array(base) or _T.is_map(base) else _T.ANY


_STRING_RESULTS: Final[dict[str, _T.Type]] = {
    "indexOf": _T.INT,
    "lastIndexOf": _T.INT,
    "hasPrefix": _T.BOOL,
    "hasSuffix": _T.BOOL,
    "split": ("array", _T.STRING),
}


"""What expr-lang's string built-ins return (the others return a string)."""


def _static_call(node: _Call, args: list[_T.Type], env: _Scope) -> _T.Type:
    fn = node.name
    t = args[0] if args else _T.ANY
    if fn == "get":
        if isinstance(node.args[0], _EnvRef) and isinstance(node.args[1], _Const):
            return env.get(str(node.args[1].value), _T.ANY)
        return _static_get(node, t, args[1] if len(args) > 1 else _T.ANY)
    if fn in ("asInt", "asFloat", "isNil", "default", "string", "type"):
        return {"asInt": _T.INT, "asFloat": _T.FLOAT, "isNil": _T.BOOL}.get(
            fn, _T.STRING if fn in ("string", "type") else _T.ANY
        )
    if fn in _FLOAT_FUNCS:  # Go functions of a float64 (Argo's environment)
        if t == _T.INT:
            env.plan[node] = "float"  # expr-lang makes the argument's int literals floats
        elif t not in (_T.FLOAT, _T.ANY):
            what = "nil" if t == _T.NIL else _T.name(t)
            _bad(f"cannot use {what} as argument (type float64) to call {fn}", node)
        return _T.BOOL
    if fn == "len":
        if not (t in (_T.STRING, _T.ANY) or _T.is_array(t) or _T.is_map(t)):
            _bad(f"invalid argument for len (type {_T.name(t)})", node)
        return _T.INT
    if fn in _NUMERIC_FUNCS or fn in ("int", "float"):
        if not (_T.is_num(t) or t == _T.ANY or (fn in ("int", "float") and t == _T.STRING)):
            _bad(f"invalid argument for {fn} (type {_T.name(t)})", node)
        if fn == "int":
            return _T.INT
        return t if fn == "abs" else _T.FLOAT
    if fn in ("max", "min", "mean", "median"):
        for a in args:  # expr-lang's validateAggregateFunc
            if a == _T.ANY or _T.is_array(a):
                return _T.ANY
            if not _T.is_num(a):
                _bad(f"invalid argument for {fn} (type {_T.name(a)})", node)
        return t  # the first argument's type, as expr-lang has it (mean(1, 2) is "int")
    if fn in _ARRAY_FUNCS:
        if fn in ("keys", "values"):
            if not (_T.is_map(t) or t == _T.ANY):
                _bad(f"cannot get {fn} from {_T.name(t)}", node)
            return ("list", _T.ANY)
        if not (_T.is_array(t) or t == _T.ANY):
            _bad(f"cannot get {fn} element from {_T.name(t)}", node)
        return _T.go_elem(t) if fn in ("first", "last") else t
    if fn in _STRING_FUNCS or fn == "join":
        if fn != "join" and t not in (_T.STRING, _T.ANY):
            _bad(f"cannot use {_T.name(t)} as argument (type string) to call {fn}", node)
        return _STRING_RESULTS.get(fn, _T.STRING)
    return _T.ANY


def _check_types(root: _Node, env: Mapping[str, _T.Type]) -> dict[_Node, str]:
    """Raise ExprError where expr's checker rejects `root` in an environment of these types;
    return the plan for evaluating it there (see _Scope)."""
    scope = _Scope(env, {})
    _static(root, _T.ANY, scope)
    return scope.plan
