"""The public API: `compile_condition`, `Condition.evaluate`, `evaluate_condition`."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final

from okra_controllers.analysis.expr import types as _T  # noqa: N812 (short: used everywhere)
from okra_controllers.analysis.expr.checker import _check_types
from okra_controllers.analysis.expr.errors import (
    MAX_DEPTH,
    MAX_SOURCE_LENGTH,
    ExprError,
    _fail,
    _Fault,
    _quote,
)
from okra_controllers.analysis.expr.lexer import _lex
from okra_controllers.analysis.expr.nodes import (
    _Array,
    _Binary,
    _Call,
    _Chain,
    _Coalesce,
    _Cond,
    _Const,
    _Ctx,
    _Let,
    _Logical,
    _MapLit,
    _Matches,
    _Member,
    _Node,
    _PredicateCall,
    _Range,
    _Slice,
    _Unary,
)
from okra_controllers.analysis.expr.parser import _Parser
from okra_controllers.analysis.expr.values import _ARGO_ENV, _go_list, _tn


class Condition:
    """A parsed condition; `evaluate` runs it against an environment of variables."""

    __slots__ = ("_plans", "_root", "source")

    def __init__(self, source: str, root: _Node) -> None:
        self.source = source
        self._root = root
        self._plans: dict[tuple[tuple[str, Any], ...], dict[_Node, str]] = {}

    def __repr__(self) -> str:
        return f"Condition({self.source!r})"

    def check(self, env: Mapping[str, _T.Type]) -> None:
        """Raise ExprError where expr's compile-time type check rejects the condition in an
        environment of these types (see okra_controllers.analysis.expr.types). What the check
        decides (as expr-lang's compiler does from the types) applies to later evaluations in
        an environment of these types."""
        key = tuple(sorted(env.items(), key=lambda kv: kv[0]))
        if key in self._plans:
            return
        try:
            plan = _check_types(self._root, env)
        except ExprError as e:
            raise e._in(self.source) from None
        if len(self._plans) >= 64:
            self._plans.clear()
        self._plans[key] = plan

    def evaluate(self, env: Mapping[str, Any]) -> Any:
        """The condition's value with `env` as its variables (for Argo: {"result": ...}).

        Run `check` first with the environment's types (as `evaluate_condition` does): without
        it, what depends on static types (the typed `==` of two ints, int literals given to
        isNaN) runs as if the types were unknown."""
        values = {k: _go_list(v) for k, v in env.items()}
        key = tuple(sorted(((k, _T.type_of(v)) for k, v in env.items()), key=lambda kv: kv[0]))
        plan = self._plans.get(key, _NO_PLAN)
        try:
            return self._root.ev(_Ctx(values, plan), None)
        except ExprError as e:
            raise e._in(self.source) from None
        except _Fault as f:
            raise ExprError(f.reason, source=self.source) from None
        except RecursionError:
            raise ExprError("value nests too deeply to evaluate", source=self.source) from None
        except (TypeError, ValueError, ArithmeticError, LookupError) as e:  # a bug, not input
            raise ExprError(f"internal error: {e!r}", source=self.source) from e


_NO_PLAN: Final[dict[_Node, str]] = {}


def _backwards(node: _Node) -> str | None:
    """The name of a backward loop (findLast, findLastIndex, and what expr-lang's optimizer
    makes one: last(filter(...)), filter(...)[-1]), or None."""
    if isinstance(node, _PredicateCall) and node.name in ("findLast", "findLastIndex"):
        return node.name
    if (
        isinstance(node, _Call)
        and node.name == "last"
        and isinstance(node.args[0], _PredicateCall)
        and node.args[0].name == "filter"
    ):
        return "last(filter(...))"
    if (
        isinstance(node, _Member)
        and isinstance(node.obj, _PredicateCall)
        and node.obj.name == "filter"
        and isinstance(node.key, _Const)
        and node.key.value == -1
    ):
        return "filter(...)[-1]"
    return None


def _check_backward_loops(node: _Node, clean: bool) -> None:
    """expr-lang v1.17.7 compiles findLast and findLastIndex to a loop that leaves values on
    its operand stack, so one evaluated while another operand waits there (`1 + findLast(...)`,
    `max(1, findLastIndex(...))`, a predicate's body) computes with the wrong operand or fails.
    okra rejects those positions (an error, never a verdict Argo would not give); `clean` says
    whether nothing waits on the stack where `node` is evaluated."""
    name = _backwards(node)
    if name is not None and not clean:
        _fail(
            f"{name} is only supported where expr-lang v1.17.7 evaluates it correctly: "
            "alone, as the left operand, the first argument or a let value",
            node.offset,
        )
    first: tuple[_Node | None, ...] = ()
    rest: tuple[_Node | None, ...] = ()
    if isinstance(node, _Binary | _Matches):
        first, rest = (node.left,), (node.right,)
    elif isinstance(node, _Range):
        first, rest = (node.lo,), (node.hi,)
    elif isinstance(node, _Logical):
        first = node.operands
    elif isinstance(node, _Coalesce):
        first = (node.left, node.right)
    elif isinstance(node, _Cond):
        first = (node.cond, node.yes, node.no)
    elif isinstance(node, _Unary):
        first = (node.operand,)
    elif isinstance(node, _Let):
        first = (node.value, node.body)
    elif isinstance(node, _Chain):
        first = (node.inner,)
    elif isinstance(node, _Member):
        first, rest = (node.obj,), (node.key,)
    elif isinstance(node, _Slice):
        first, rest = (node.obj,), (node.lo, node.hi)
    elif isinstance(node, _Array | _Call):
        items = node.items if isinstance(node, _Array) else node.args
        first, rest = items[:1], items[1:]
    elif isinstance(node, _MapLit):
        flat = [n for pair in node.pairs for n in pair]
        first, rest = tuple(flat[:1]), tuple(flat[1:])
    elif isinstance(node, _PredicateCall):
        first, rest = (node.array,), (node.pred, node.extra)
    for child in first:
        if child is not None:
            _check_backward_loops(child, clean)
    for child in rest:
        if child is not None:
            _check_backward_loops(child, False)


def compile_condition(source: str) -> Condition:
    """Parse `source` once; raise ExprError if it is not a valid condition.

    Unknown variables are not an error here (the environment comes with each evaluation);
    unknown functions, bad syntax and over-long or over-deep sources are.
    """
    if not isinstance(source, str):
        raise ExprError(f"a condition must be a string, not {type(source).__name__}")
    if len(source) > MAX_SOURCE_LENGTH:
        raise ExprError(
            f"condition is {len(source)} characters long; the limit is {MAX_SOURCE_LENGTH}"
        )
    try:
        root = _Parser(_lex(source)).parse()
        _check_backward_loops(root, True)
        return Condition(source, root)
    except ExprError as e:
        raise e._in(source) from None
    except RecursionError:
        raise ExprError(f"condition nests deeper than {MAX_DEPTH} levels", source=source) from None


@lru_cache(maxsize=512)
def _compiled(source: str) -> Condition:
    return compile_condition(source)


def evaluate_condition(source: str, result: Any) -> bool:
    """Argo Rollouts' EvalCondition: `source` evaluated with `result` bound; must give a bool."""
    condition = _compiled(source) if isinstance(source, str) else compile_condition(source)
    env = {"result": result, **_ARGO_ENV}
    condition.check({name: _T.type_of(value) for name, value in env.items()})
    value = condition.evaluate(env)
    if value is True or value is False:
        return value
    raise ExprError(
        f"expected bool, but got {_tn(value)} (condition {_quote(source)})",
        source=source,
        quote_source=False,
    )
