"""The syntax tree and its evaluation: one node class per construct, each with `ev`, plus the
constant folding and rewrites expr-lang's optimizer makes."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, Final

from okra_controllers.analysis.expr.builtin import _Builtin, _sum_numbers
from okra_controllers.analysis.expr.errors import (
    MAX_DEPTH,
    MAX_RANGE,
    MAX_SECONDS,
    MAX_STEPS,
    _fail,
    _Fault,
    _NilChain,
)
from okra_controllers.analysis.expr.regex import _regex
from okra_controllers.analysis.expr.values import (
    _BINARY_FUNCS,
    _add,
    _equal,
    _fetch,
    _ge,
    _GoInts,
    _iface,
    _is_int,
    _is_list,
    _is_num,
    _is_str,
    _le,
    _mismatch,
    _mod,
    _mul,
    _slice,
    _strings,
    _sub,
    _tn,
    _wrap,
)

_CHECK_EVERY: Final = 20_000  # budget units between looks at the clock


class _Ctx:
    """Per-evaluation state: the environment, what the type check decided for it (`plan`, see
    _Static) and the remaining work budget."""

    __slots__ = ("checkpoint", "deadline", "env", "plan", "steps")

    def __init__(self, env: Mapping[str, Any], plan: Mapping[_Node, str]) -> None:
        self.env = env
        self.plan = plan
        self.steps = MAX_STEPS
        self.checkpoint = MAX_STEPS - _CHECK_EVERY
        self.deadline = time.monotonic() + MAX_SECONDS

    def charge(self, n: int) -> None:
        self.steps -= n
        if self.steps < self.checkpoint:
            self.check()

    def check(self) -> None:
        if self.steps < 0:
            raise _Fault(f"evaluation exceeds its budget of {MAX_STEPS} steps")
        if time.monotonic() > self.deadline:
            raise _Fault(f"evaluation takes longer than {MAX_SECONDS:g}s")
        self.checkpoint = self.steps - _CHECK_EVERY

    def charge_size(self, value: Any) -> Any:
        """Charge for a string or array an operation built; return it."""
        if (type(value) is str or type(value) is list) and len(value) >= 64:
            self.charge(len(value) >> 3)
        return value


_NO_LOCALS: Final[dict[str, Any]] = {}


class _Frame:
    """The element a predicate is looking at, and `let` variables in scope."""

    __slots__ = ("acc", "index", "item", "locals")

    def __init__(self, item: Any, index: int, acc: Any, locals_: dict[str, Any]) -> None:
        self.item = item
        self.index = index
        self.acc = acc
        self.locals = locals_


class _Node:
    __slots__ = ("depth", "offset", "size")

    def __init__(self, offset: int, *children: _Node | None) -> None:
        self.offset = offset
        self.depth: int = 1 + max((c.depth for c in children if c is not None), default=0)
        self.size: int = 1 + sum(c.size for c in children if c is not None)
        if self.depth > MAX_DEPTH:
            _fail(f"condition nests deeper than {MAX_DEPTH} levels", offset)

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        raise NotImplementedError


class _Const(_Node):
    __slots__ = ("value",)

    def __init__(self, offset: int, value: Any) -> None:
        super().__init__(offset)
        self.value = value

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        return self.value


class _Ident(_Node):
    __slots__ = ("name",)

    def __init__(self, offset: int, name: str) -> None:
        super().__init__(offset)
        self.name = name

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        try:
            return ctx.env[self.name]
        except KeyError:
            _fail(f"unknown name {self.name}", self.offset)


class _EnvRef(_Node):
    __slots__ = ()

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        return ctx.env


class _Local(_Node):
    __slots__ = ("name",)

    def __init__(self, offset: int, name: str) -> None:
        super().__init__(offset)
        self.name = name

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        assert frame is not None
        return frame.locals[self.name]


class _Pointer(_Node):
    __slots__ = ("kind",)

    def __init__(self, offset: int, kind: str) -> None:
        super().__init__(offset)
        self.kind = kind

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        assert frame is not None
        if self.kind == "":
            return frame.item
        if self.kind == "index":
            return frame.index
        return frame.acc


class _Let(_Node):
    __slots__ = ("body", "name", "value")

    def __init__(self, offset: int, name: str, value: _Node, body: _Node) -> None:
        super().__init__(offset, value, body)
        self.name, self.value, self.body = name, value, body

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        value = self.value.ev(ctx, frame)
        if frame is None:
            inner = _Frame(None, 0, None, {self.name: value})
        else:
            inner = _Frame(frame.item, frame.index, frame.acc, {**frame.locals, self.name: value})
        return self.body.ev(ctx, inner)


class _Array(_Node):
    __slots__ = ("items",)

    def __init__(self, offset: int, items: list[_Node]) -> None:
        super().__init__(offset, *items)
        self.items = tuple(items)

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        return [item.ev(ctx, frame) for item in self.items]


class _MapLit(_Node):
    __slots__ = ("pairs",)

    def __init__(self, offset: int, pairs: list[tuple[_Node, _Node]]) -> None:
        super().__init__(offset, *[n for pair in pairs for n in pair])
        self.pairs = tuple(pairs)

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        out: dict[str, Any] = {}
        for key_node, value_node in self.pairs:
            key = key_node.ev(ctx, frame)
            if not _is_str(key):
                _fail(f"map keys must be strings, not {_tn(key)}", key_node.offset)
            value = value_node.ev(ctx, frame)
            out.setdefault(key, value)  # a repeated key keeps its first value, as in expr-lang
        return out


class _Member(_Node):
    """`obj.name`, `obj[key]` and their optional forms `?.`."""

    __slots__ = ("key", "obj", "optional")

    def __init__(self, offset: int, obj: _Node, key: _Node, optional: bool) -> None:
        super().__init__(offset, obj, key)
        self.obj, self.key, self.optional = obj, key, optional

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        obj = self.obj.ev(ctx, frame)
        if obj is None and self.optional:
            raise _NilChain
        key = self.key.ev(ctx, frame)
        if type(obj) is list and type(key) is int:  # the common `result[0]`
            n = len(obj)
            i = key + n if key < 0 else key
            if 0 <= i < n:
                return obj[i]
        try:
            return _fetch(obj, key)
        except _Fault as f:
            _fail(f.reason, self.offset)


class _Slice(_Node):
    __slots__ = ("hi", "lo", "obj")

    def __init__(self, offset: int, obj: _Node, lo: _Node | None, hi: _Node | None) -> None:
        super().__init__(offset, obj, lo, hi)
        self.obj, self.lo, self.hi = obj, lo, hi

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        obj = self.obj.ev(ctx, frame)
        lo = None if self.lo is None else self.lo.ev(ctx, frame)
        hi = None if self.hi is None else self.hi.ev(ctx, frame)
        try:
            return _slice(obj, lo, hi)
        except _Fault as f:
            _fail(f.reason, self.offset)


class _Chain(_Node):
    """The extent of a `?.` chain: a nil met by `?.` makes the whole chain nil."""

    __slots__ = ("inner",)

    def __init__(self, inner: _Node) -> None:
        super().__init__(inner.offset, inner)
        self.inner = inner

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        try:
            return self.inner.ev(ctx, frame)
        except _NilChain:
            return None


class _Unary(_Node):
    __slots__ = ("op", "operand")

    def __init__(self, offset: int, op: str, operand: _Node) -> None:
        super().__init__(offset, operand)
        self.op, self.operand = op, operand

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        v = self.operand.ev(ctx, frame)
        op = self.op
        if op == "!" or op == "not":
            if v is True:
                return False
            if v is False:
                return True
        elif _is_num(v):
            if op == "+":
                return v
            return _wrap(-int(v)) if _is_int(v) else -v
        _fail(f"invalid operation: {op} {_tn(v)}", self.offset)


class _Binary(_Node):
    __slots__ = ("fn", "left", "op", "right")

    def __init__(self, offset: int, op: str, left: _Node, right: _Node) -> None:
        super().__init__(offset, left, right)
        self.op, self.left, self.right = op, left, right
        self.fn = _BINARY_FUNCS[op]

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        a = self.left.ev(ctx, frame)
        b = self.right.ev(ctx, frame)
        try:
            return self.fn(a, b)
        except _Fault as f:
            _fail(f.reason, self.offset)


class _Equal(_Binary):
    """`==` / `!=`. Where expr-lang's checker knows both sides are ints (or both strings) its
    compiler emits a typed comparison (OpEqualInt: `a.(int) == b.(int)`), which fails on any
    other value at run time, such as the nil of `findIndex` without a match; the type check
    marks those nodes in the evaluation's plan."""

    __slots__ = ()

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        a = self.left.ev(ctx, frame)
        b = self.right.ev(ctx, frame)
        typed = ctx.plan.get(self)
        if typed is not None:
            want = _is_int if typed == "int" else _is_str
            for v in (a, b):
                if not want(v):
                    why = f"interface conversion: interface {{}} is {_iface(v)}, not {typed}"
                    _fail(why, self.offset)
        same = _equal(a, b)
        return same if self.op == "==" else not same


class _In(_Binary):
    """`in`. expr-lang's optimizer rewrites two shapes before they run, which changes their
    value (the type check marks them in the plan): `x in 0..9` with literal bounds and an int
    `x` becomes `x >= 0 and x <= 9` ("range"), and `x in [1, 2]` (int literals, int `x`) or
    `x in ["a", "b"]` (string literals) a lookup in a Go map ("ints", "strings"), where nil
    finds the zero key (0 or "") and a value of another type is an error."""

    __slots__ = ()

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        shape = ctx.plan.get(self)
        if shape is None:
            return _Binary.ev(self, ctx, frame)
        a = self.left.ev(ctx, frame)
        try:
            if shape == "range":
                bounds = self.right
                assert isinstance(bounds, _Range)
                assert isinstance(bounds.lo, _Const)
                assert isinstance(bounds.hi, _Const)
                return _ge(a, bounds.lo.value) and _le(a, bounds.hi.value)
            keys = self.right.ev(ctx, frame)
            if a is None:
                a = 0 if shape == "ints" else ""
            elif not (_is_int(a) if shape == "ints" else _is_str(a)):
                key = "int" if shape == "ints" else "string"
                why = f"value of type {_tn(a)} is not assignable to type {key}"
                raise _Fault(f"reflect.Value.MapIndex: {why}")
            return any(k == a for k in keys)
        except _Fault as f:
            _fail(f.reason, self.offset)


class _Plus(_Binary):
    """`+`, which may build a string, and so is charged for it."""

    __slots__ = ()

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        a = self.left.ev(ctx, frame)
        b = self.right.ev(ctx, frame)
        try:
            return ctx.charge_size(_add(a, b))
        except _Fault as f:
            _fail(f.reason, self.offset)


class _Matches(_Node):
    __slots__ = ("left", "pattern", "right")

    def __init__(self, offset: int, left: _Node, right: _Node) -> None:
        super().__init__(offset, left, right)
        self.left, self.right = left, right
        self.pattern: re.Pattern[str] | None = None
        if isinstance(right, _Const) and _is_str(right.value):
            try:  # a literal pattern is checked when the condition is compiled
                self.pattern = _regex(right.value)
            except _Fault as f:
                _fail(f.reason, right.offset)

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        a = self.left.ev(ctx, frame)
        b = self.right.ev(ctx, frame)
        if a is None or b is None:
            return False  # as expr-lang: a nil operand matches nothing
        try:
            subject, pattern = _strings("matches", a, b)
            compiled = self.pattern or _regex(pattern)
        except _Fault as f:
            _fail(f.reason, self.offset)
        return compiled.search(subject) is not None


_NOT_CONSTANT: Final = object()


def _constant(node: _Node) -> Any:
    """What expr-lang's optimizer folds `node` to before anything runs, for the folds that can
    decide an `and`/`or` (ints by + - * %, strings by +, `==` of two ints, strings or bools, `!`,
    `and`/`or` with a literal operand), or _NOT_CONSTANT."""
    if isinstance(node, _Const):
        v = node.value
        return v if type(v) in (bool, int, str) else _NOT_CONSTANT
    if isinstance(node, _Unary):
        v = _constant(node.operand)
        if node.op in ("!", "not"):
            return (not v) if type(v) is bool else _NOT_CONSTANT
        if type(v) is int:
            return _wrap(-v) if node.op == "-" else v
        return _NOT_CONSTANT
    if isinstance(node, _Logical):
        return _NOT_CONSTANT if node.folded is None else node.folded
    if isinstance(node, _Binary) and node.op in ("+", "-", "*", "%", "=="):
        a, b = _constant(node.left), _constant(node.right)
        if a is _NOT_CONSTANT or b is _NOT_CONSTANT:
            return _NOT_CONSTANT
        if node.op == "==":
            return a == b if type(a) is type(b) else _NOT_CONSTANT
        if type(a) is int and type(b) is int and (node.op != "%" or b != 0):
            return {"+": _add, "-": _sub, "*": _mul, "%": _mod}[node.op](a, b)
        if node.op == "+" and type(a) is str and type(b) is str:
            return a + b
    return _NOT_CONSTANT


def _folded(node: _Node) -> bool | None:
    """The bool expr-lang's optimizer folds `node` to, or None."""
    v = _constant(node)
    return v if type(v) is bool else None


_COMBINED: Final = {
    ("all", "&&"): "&&",
    ("all", "and"): "and",
    ("any", "||"): "||",
    ("any", "or"): "or",
    ("none", "&&"): "||",
    ("none", "and"): "or",
}


def _shape(node: _Node | None) -> tuple[Any, ...]:
    """How an expression is written, as a nested tuple (expr-lang compares their text)."""
    if node is None:
        return ()
    if isinstance(node, _Const):
        return ("const", type(node.value), node.value)
    if isinstance(node, _Ident | _Local):
        return (type(node), node.name)
    if isinstance(node, _Pointer):
        return ("#", node.kind)
    if isinstance(node, _EnvRef):
        return ("$env",)
    if isinstance(node, _Let):
        return ("let", node.name, _shape(node.value), _shape(node.body))
    if isinstance(node, _Array):
        return ("[]", *map(_shape, node.items))
    if isinstance(node, _MapLit):
        return ("{}", *((_shape(k), _shape(v)) for k, v in node.pairs))
    if isinstance(node, _Member):
        return (".", _shape(node.obj), _shape(node.key), node.optional)
    if isinstance(node, _Slice):
        return ("[:]", _shape(node.obj), _shape(node.lo), _shape(node.hi))
    if isinstance(node, _Chain):
        return ("?.", _shape(node.inner))
    if isinstance(node, _Unary):
        return ("unary", node.op, _shape(node.operand))
    if isinstance(node, _Binary):
        return ("binary", node.op, _shape(node.left), _shape(node.right))
    if isinstance(node, _Matches | _Coalesce):
        return (type(node), _shape(node.left), _shape(node.right))
    if isinstance(node, _Logical):
        return ("logical", node.op, *map(_shape, node.operands))
    if isinstance(node, _Cond):
        return ("?:", _shape(node.cond), _shape(node.yes), _shape(node.no))
    if isinstance(node, _Range):
        return ("..", _shape(node.lo), _shape(node.hi))
    if isinstance(node, _Call):
        return ("call", node.name, *map(_shape, node.args))
    if isinstance(node, _PredicateCall):
        parts = (_shape(node.array), _shape(node.pred), _shape(node.extra))
        return ("predicate", node.name, *parts)
    return (type(node), id(node))  # equal to nothing else


def _combine_predicates(offset: int, op: str, left: _Node, right: _Node) -> _Node | None:
    """expr-lang's optimizer turns `all(x, p) && all(x, q)` into `all(x, p && q)` (likewise
    `any ||` and `none &&`, whose predicates join with ||), which changes which errors a
    condition meets: the combined loop evaluates q for elements p accepts before it is done
    with p. Operands the optimizer folds away first (`true && all(...)`) do not count."""
    if isinstance(left, _Logical):
        kept = [o for o in left.operands if _folded(o) is not (not left.decider)]
        if left.decider != (op in ("||", "or")) or len(kept) != 1:
            return None
        left = kept[0]
    if not (isinstance(left, _PredicateCall) and isinstance(right, _PredicateCall)):
        return None
    joined = _COMBINED.get((left.name, op))
    if joined is None or right.name != left.name or _shape(left.array) != _shape(right.array):
        return None
    assert left.pred is not None
    assert right.pred is not None
    pred = _Logical.join(offset, joined, left.pred, right.pred)
    return _PredicateCall(left.offset, left.name, left.array, pred, None)


class _Logical(_Node):
    """`&&` / `||` over two or more operands, left to right, stopping at the first decider."""

    __slots__ = ("decider", "folded", "op", "operands")

    def __init__(self, offset: int, op: str, operands: list[_Node]) -> None:
        super().__init__(offset, *operands)
        self.op, self.operands = op, tuple(operands)
        self.decider = op in ("||", "or")  # the value that ends the evaluation
        # expr-lang's optimizer folds `x or true` to true and `x and false` to false before
        # anything runs (so x is never evaluated, and cannot fail)
        constants = [_folded(o) for o in operands]
        self.folded: bool | None = None
        if self.decider in constants:
            self.folded = self.decider
        elif all(c is not None for c in constants):
            self.folded = not self.decider

    @classmethod
    def join(cls, offset: int, op: str, left: _Node, right: _Node) -> _Node:
        decider = op in ("||", "or")
        same = isinstance(left, _Logical) and left.decider == decider
        combined = _combine_predicates(offset, op, left, right)
        if combined is not None:
            return combined
        operands = [*left.operands, right] if isinstance(left, _Logical) and same else [left, right]
        return cls(offset, op, operands)

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        if self.folded is not None:
            return self.folded
        decider = self.decider
        for operand in self.operands:
            v = operand.ev(ctx, frame)
            if v is decider:
                return decider
            if v is not (not decider):
                _fail(f"invalid operation: {self.op} on {_tn(v)} (needs bool)", self.offset)
        return not decider


class _Coalesce(_Node):
    __slots__ = ("left", "right")

    def __init__(self, offset: int, left: _Node, right: _Node) -> None:
        super().__init__(offset, left, right)
        self.left, self.right = left, right

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        v = self.left.ev(ctx, frame)
        return self.right.ev(ctx, frame) if v is None else v


class _Cond(_Node):
    __slots__ = ("cond", "no", "yes")

    def __init__(self, offset: int, cond: _Node, yes: _Node, no: _Node) -> None:
        super().__init__(offset, cond, yes, no)
        self.cond, self.yes, self.no = cond, yes, no

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        c = self.cond.ev(ctx, frame)
        if c is True:
            return self.yes.ev(ctx, frame)
        if c is False:
            return self.no.ev(ctx, frame)
        _fail(f"the condition of ?: must be bool, not {_tn(c)}", self.offset)


class _Range(_Node):
    __slots__ = ("hi", "lo")

    def __init__(self, offset: int, lo: _Node, hi: _Node) -> None:
        super().__init__(offset, lo, hi)
        self.lo, self.hi = lo, hi

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        a = self.lo.ev(ctx, frame)
        b = self.hi.ev(ctx, frame)
        try:
            if not (_is_int(a) and _is_int(b)):
                raise _mismatch("..", a, b)
            size = int(b) - int(a) + 1
            if size > MAX_RANGE:
                raise _Fault(f"range {a}..{b} has {size} elements; the limit is {MAX_RANGE}")
            if size <= 0:
                return _GoInts()
            ctx.charge(8 * size)
        except _Fault as f:
            _fail(f.reason, self.offset)
        return _GoInts(range(int(a), int(b) + 1))


def _floated(node: _Node) -> _Node | None:
    """`node` with its int literals made floats where expr-lang's checker does so for an int
    argument of a float64 parameter (through unary operators and binary `+ - *`), or None when
    there are none: `isNaN(len(x) + 1)` runs as `isNaN(len(x) + 1.0)`."""
    if isinstance(node, _Const):
        if _is_int(node.value):
            return _Const(node.offset, float(node.value))
        return None
    if isinstance(node, _Unary):
        inner = _floated(node.operand)
        return None if inner is None else _Unary(node.offset, node.op, inner)
    if isinstance(node, _Binary) and node.op in ("+", "-", "*"):
        left, right = _floated(node.left), _floated(node.right)
        if left is None and right is None:
            return None
        return type(node)(node.offset, node.op, left or node.left, right or node.right)
    return None


_FLOAT_FUNCS: Final = frozenset({"isNaN", "isInf"})  # Argo's, Go functions of a float64


_RESULT_FUNCS: Final = frozenset({"isNil", "default"})  # Argo's, looking at `result` only


class _Call(_Node):
    __slots__ = ("args", "floated", "fn", "name")

    def __init__(self, offset: int, name: str, fn: _Builtin, args: list[_Node]) -> None:
        super().__init__(offset, *args)
        self.name, self.fn, self.args = name, fn, tuple(args)
        self.floated = _floated(args[0]) if name in _FLOAT_FUNCS and args else None

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        if self.floated is not None and self in ctx.plan:
            args = [self.floated.ev(ctx, frame)]
        else:
            args = [a.ev(ctx, frame) for a in self.args]
        if self.name in _RESULT_FUNCS:
            args.append(ctx.env.get("result"))
        try:
            return ctx.charge_size(self.fn(args))
        except _Fault as f:
            _fail(f.reason, self.offset)


def _truth(name: str, v: Any) -> bool:
    if v is True or v is False:
        return v
    raise _Fault(f"the predicate of {name} must return bool, not {_tn(v)}")


class _PredicateCall(_Node):
    """all/any/none/one/filter/map/count/sum/find.../reduce: one pass over a finite array."""

    __slots__ = ("array", "extra", "name", "pred")

    def __init__(
        self, offset: int, name: str, array: _Node, pred: _Node | None, extra: _Node | None
    ) -> None:
        super().__init__(offset, array, pred, extra)
        self.name, self.array, self.pred, self.extra = name, array, pred, extra

    def ev(self, ctx: _Ctx, frame: _Frame | None) -> Any:
        items = self.array.ev(ctx, frame)
        extra = None if self.extra is None else self.extra.ev(ctx, frame)
        try:
            return ctx.charge_size(self._run(ctx, frame, items, extra))
        except _Fault as f:
            _fail(f.reason, self.offset)

    def _run(self, ctx: _Ctx, frame: _Frame | None, items: Any, extra: Any) -> Any:
        name = self.name
        if not _is_list(items):
            raise _Fault(f"{name} needs an array, not {_tn(items)}")
        pred = self.pred
        cost = 1 if pred is None else pred.size
        f = _Frame(None, 0, None, _NO_LOCALS if frame is None else frame.locals)

        def each(i: int, item: Any) -> Any:
            ctx.steps -= cost
            if ctx.steps < ctx.checkpoint:
                ctx.check()
            f.item, f.index = item, i
            return item if pred is None else pred.ev(ctx, f)

        if name == "all":
            return all(_truth(name, each(i, x)) for i, x in enumerate(items))
        if name == "any":
            return any(_truth(name, each(i, x)) for i, x in enumerate(items))
        if name == "none":
            return not any(_truth(name, each(i, x)) for i, x in enumerate(items))
        if name == "one":
            return sum(_truth(name, each(i, x)) for i, x in enumerate(items)) == 1
        if name == "count":
            return sum(_truth(name, each(i, x)) for i, x in enumerate(items))
        if name == "filter":
            return [x for i, x in enumerate(items) if _truth(name, each(i, x))]
        if name == "map":
            return [each(i, x) for i, x in enumerate(items)]
        if name == "sum":
            return _sum_numbers([each(i, x) for i, x in enumerate(items)])
        if name in ("find", "findIndex"):
            for i, x in enumerate(items):
                if _truth(name, each(i, x)):
                    return x if name == "find" else i
            return None  # expr-lang v1.17.7's findIndex without a match gives nil, not -1
        if name in ("findLast", "findLastIndex"):
            for i in range(len(items) - 1, -1, -1):
                if _truth(name, each(i, items[i])):
                    return items[i] if name == "findLast" else i
            return None
        assert name == "reduce"
        assert pred is not None
        start = 0
        if self.extra is not None:
            f.acc = extra
        elif items:
            f.acc, start = items[0], 1
        else:
            raise _Fault("reduce of an empty array needs an initial value")
        for i in range(start, len(items)):
            f.acc = each(i, items[i])
        return f.acc
