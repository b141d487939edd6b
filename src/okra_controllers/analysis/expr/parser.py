"""The parser: tokens to a syntax tree, precedence climbing as expr-lang's own parser does."""

from __future__ import annotations

from typing import Final, NoReturn

from okra_controllers.analysis.expr.builtin import _BUILTINS, _MANY, _PREDICATES
from okra_controllers.analysis.expr.errors import MAX_DEPTH, _fail
from okra_controllers.analysis.expr.lexer import _BRACKET, _EOF, _IDENT, _NUMBER, _OP, _STRING, _Tok
from okra_controllers.analysis.expr.nodes import (
    _Array,
    _Binary,
    _Call,
    _Chain,
    _Coalesce,
    _Cond,
    _Const,
    _EnvRef,
    _Equal,
    _Ident,
    _In,
    _Let,
    _Local,
    _Logical,
    _MapLit,
    _Matches,
    _Member,
    _Node,
    _Plus,
    _Pointer,
    _PredicateCall,
    _Range,
    _Slice,
    _Unary,
)

# operator -> (precedence, right-associative); expr's parser/operator table
_BINARY_OPS: Final[dict[str, tuple[int, bool]]] = {
    "|": (0, False),
    "or": (10, False),
    "||": (10, False),
    "and": (15, False),
    "&&": (15, False),
    "==": (20, False),
    "!=": (20, False),
    "<": (20, False),
    ">": (20, False),
    ">=": (20, False),
    "<=": (20, False),
    "in": (20, False),
    "matches": (20, False),
    "contains": (20, False),
    "startsWith": (20, False),
    "endsWith": (20, False),
    "..": (25, False),
    "+": (30, False),
    "-": (30, False),
    "*": (60, False),
    "/": (60, False),
    "%": (60, False),
    "**": (100, True),
    "^": (100, True),
    "??": (500, False),
}


_UNARY_OPS: Final = {"not": 50, "!": 50, "-": 90, "+": 90}


_NEGATABLE: Final = frozenset({"in", "matches", "contains", "startsWith", "endsWith"})


_COMPARISON: Final = frozenset({"<", ">", "<=", ">="})


"""The operators that chain (expr's operator.IsComparison): `a < b <= c` is `a < b && b <= c`;
`==`, `!=`, `in` and the string operators do not: `a < b == true` is `(a < b) == true`."""


class _Parser:
    """Precedence climbing, shaped like expr's parser/parser.go so that the same text parses
    to the same tree; nodes check their own depth."""

    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.pos = 0
        self.tok = toks[0]
        self.nesting = 0
        self.predicates: list[str] = []  # enclosing predicate functions, innermost last
        self.locals: list[str] = []  # `let` names in scope

    # token helpers

    def advance(self) -> None:
        if self.pos < len(self.toks) - 1:
            self.pos += 1
            self.tok = self.toks[self.pos]

    def peek(self) -> _Tok:
        return self.toks[min(self.pos + 1, len(self.toks) - 1)]

    def at(self, kind: str, text: str | None = None) -> bool:
        return self.tok.kind == kind and (text is None or self.tok.text == text)

    def unexpected(self, tok: _Tok | None = None) -> NoReturn:
        tok = tok or self.tok
        if tok.kind == _EOF:
            _fail("unexpected end of condition", tok.offset)
        _fail(f"unexpected {tok.describe()}", tok.offset)

    def expect(self, kind: str, text: str | None = None) -> _Tok:
        tok = self.tok
        if not self.at(kind, text):
            wanted = repr(text) if text is not None else kind
            _fail(f"expected {wanted}, found {tok.describe()}", tok.offset)
        self.advance()
        return tok

    # grammar

    def parse(self) -> _Node:
        if self.at(_EOF):
            _fail("condition is empty", 0)
        node = self.expression(0)
        if not self.at(_EOF):
            self.unexpected()
        return node

    def expression(self, precedence: int) -> _Node:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            _fail(f"condition nests deeper than {MAX_DEPTH} levels", self.tok.offset)
        if precedence == 0 and self.at(_OP, "let"):
            node = self.let()
            self.nesting -= 1
            return node
        left = self.primary()
        previous = ""
        while self.tok.kind == _OP:
            op_tok = self.tok
            negate = op_tok.text == "not"
            if negate:
                following = self.peek()
                if following.kind != _OP or following.text not in _NEGATABLE:
                    self.unexpected(following)
                if _BINARY_OPS[following.text][0] < precedence:
                    break
                self.advance()
                op_tok = following
            op = op_tok.text
            info = _BINARY_OPS.get(op)
            if info is None or info[0] < precedence:
                break
            self.advance()
            if op == "|":
                name = self.expect(_IDENT)
                left = self.call(name, [left])
            else:
                if previous == "??" and op != "??":
                    _fail(
                        f"operator {op} and ?? cannot be mixed: wrap either in parentheses",
                        op_tok.offset,
                    )
                if op in _COMPARISON:
                    left = self.comparison(left, op_tok, negate)
                else:
                    right = self.expression(info[0] if info[1] else info[0] + 1)
                    left = self.binary(op_tok, left, right)
                    if negate:
                        left = _Unary(op_tok.offset, "not", left)
            previous = op
        if precedence == 0:
            left = self.conditional(left)
        self.nesting -= 1
        return left

    def binary(self, op_tok: _Tok, left: _Node, right: _Node) -> _Node:
        op, at = op_tok.text, op_tok.offset
        if op in ("&&", "and", "||", "or"):
            return _Logical.join(at, op, left, right)
        if op == "??":
            return _Coalesce(at, left, right)
        if op == "..":
            return _Range(at, left, right)
        if op == "matches":
            return _Matches(at, left, right)
        if op == "+":
            return _Plus(at, op, left, right)
        if op in ("==", "!="):
            return _Equal(at, op, left, right)
        if op == "in":
            return _In(at, op, left, right)
        return _Binary(at, op, left, right)

    def comparison(self, left: _Node, op_tok: _Tok, negate: bool) -> _Node:
        """`a < b < c` is `a < b && b < c`, as in expr."""
        root: _Node | None = None
        while True:
            right = self.expression(21)
            node = self.binary(op_tok, left, right)
            if negate:
                node = _Unary(op_tok.offset, "not", node)
            root = node if root is None else _Logical.join(op_tok.offset, "&&", root, node)
            left, negate = right, False
            if not (self.tok.kind == _OP and self.tok.text in _COMPARISON):
                return root
            op_tok = self.tok
            self.advance()

    def let(self) -> _Node:
        let_tok = self.expect(_OP, "let")
        name = self.expect(_IDENT)
        self.expect(_OP, "=")
        value = self.expression(0)
        self.expect(_OP, ";")
        self.locals.append(name.text)
        body = self.expression(0)
        self.locals.pop()
        return _Let(let_tok.offset, name.text, value, body)

    def conditional(self, node: _Node) -> _Node:
        while self.at(_OP, "?"):
            q = self.tok
            self.advance()
            if self.at(_OP, ":"):  # `a ?: b`
                self.advance()
                yes, no = node, self.expression(0)
            else:
                yes = self.expression(0)
                self.expect(_OP, ":")
                no = self.expression(0)
            node = _Cond(q.offset, node, yes, no)
        return node

    def primary(self) -> _Node:
        tok = self.tok
        if tok.kind == _OP and tok.text in _UNARY_OPS:
            self.advance()
            operand = self.expression(_UNARY_OPS[tok.text])
            return _Unary(tok.offset, tok.text, operand)
        if self.at(_BRACKET, "("):
            self.advance()
            node = self.expression(0)
            self.expect(_BRACKET, ")")
            return self.postfix(node)
        if tok.kind == _OP and tok.text in ("#", "."):
            if not self.predicates:
                _fail(
                    f"{tok.text!r} refers to the element of a predicate, as in "
                    "all(result, {# > 0}), and cannot be used outside one",
                    tok.offset,
                )
            kind = ""
            if tok.text == "#":
                self.advance()
                if self.at(_IDENT):
                    kind = self.tok.text
                    if kind not in ("index", "acc"):
                        _fail(f"unknown pointer #{kind}", self.tok.offset)
                    if kind == "acc" and self.predicates[-1] != "reduce":
                        _fail("#acc can only be used inside reduce", self.tok.offset)
                    if kind == "index" and self.predicates[-1] not in ("map", "reduce"):
                        # expr-lang v1.17.7 declares #index only in map and reduce
                        _fail("unknown pointer #index", self.tok.offset)
                    self.advance()
            return self.postfix(_Pointer(tok.offset, kind))
        if self.at(_OP, "::"):
            _fail("'::' is not supported", tok.offset)
        return self.secondary()

    def secondary(self) -> _Node:
        tok = self.tok
        node: _Node
        if tok.kind == _IDENT:
            self.advance()
            if tok.text in ("true", "false", "nil"):
                return _Const(tok.offset, {"true": True, "false": False, "nil": None}[tok.text])
            if self.at(_BRACKET, "("):
                node = self.call(tok, [])
            elif tok.text == "$env":
                node = _EnvRef(tok.offset)
            elif tok.text in self.locals:
                node = _Local(tok.offset, tok.text)
            else:
                node = _Ident(tok.offset, tok.text)
        elif tok.kind in (_NUMBER, _STRING):
            self.advance()
            node = _Const(tok.offset, tok.value)
        elif self.at(_BRACKET, "["):
            node = self.array()
        elif self.at(_BRACKET, "{"):
            node = self.map()
        else:
            self.unexpected()
        return self.postfix(node)

    def call(self, name_tok: _Tok, args: list[_Node]) -> _Node:
        name = name_tok.text
        spec = _PREDICATES.get(name)
        if spec is not None:
            return self.predicate_call(name_tok, spec, args)
        builtin = _BUILTINS.get(name)
        if builtin is None:
            _fail(f"unknown function {name}", name_tok.offset)
        first = len(args)
        self.expect(_BRACKET, "(")
        while not self.at(_BRACKET, ")"):
            if len(args) > first:
                self.expect(_OP, ",")
                if self.at(_BRACKET, ")"):
                    break
            args.append(self.expression(0))
        self.expect(_BRACKET, ")")
        fewest, most, fn = builtin
        if not fewest <= len(args) <= most:
            if fewest == most:
                wanted = str(fewest)
            elif most == _MANY:
                wanted = f"at least {fewest}"
            else:
                wanted = f"{fewest} or {most}"
            plural = "" if wanted in ("1", "at least 1") else "s"
            _fail(f"{name}() takes {wanted} argument{plural}, got {len(args)}", name_tok.offset)
        return _Call(name_tok.offset, name, fn, args)

    def predicate_call(self, name_tok: _Tok, spec: tuple[str, ...], args: list[_Node]) -> _Node:
        name = name_tok.text
        self.expect(_BRACKET, "(")
        kinds = ("expr", *spec)[len(args) :]
        for i, kind in enumerate(kinds):
            if self.at(_BRACKET, ")"):
                if kind.endswith("?"):
                    break
                _fail(f"{name}() needs an array and a predicate", self.tok.offset)
            if i > 0:
                self.expect(_OP, ",")
            if kind.startswith("pred"):
                args.append(self.predicate(name))
            else:
                args.append(self.expression(0))
        if self.at(_OP, ","):
            self.advance()
        self.expect(_BRACKET, ")")
        array = args[0]
        pred = args[1] if len(args) > 1 else None
        extra = args[2] if len(args) > 2 else None
        return _PredicateCall(name_tok.offset, name, array, pred, extra)

    def predicate(self, name: str) -> _Node:
        braces = self.at(_BRACKET, "{")
        if braces:
            self.advance()
        self.predicates.append(name)
        node = self.expression(0)
        self.predicates.pop()
        if braces:
            self.expect(_BRACKET, "}")
        return node

    def array(self) -> _Node:
        start = self.expect(_BRACKET, "[")
        items: list[_Node] = []
        while not self.at(_BRACKET, "]"):
            if items:
                self.expect(_OP, ",")
                if self.at(_BRACKET, "]"):
                    break
            items.append(self.expression(0))
        self.expect(_BRACKET, "]")
        return _Array(start.offset, items)

    def map(self) -> _Node:
        start = self.expect(_BRACKET, "{")
        pairs: list[tuple[_Node, _Node]] = []
        while not self.at(_BRACKET, "}"):
            if pairs:
                self.expect(_OP, ",")
                if self.at(_BRACKET, "}"):
                    break
            tok = self.tok
            key: _Node
            if tok.kind in (_NUMBER, _IDENT):
                key = _Const(tok.offset, tok.text)
                self.advance()
            elif tok.kind == _STRING:
                key = _Const(tok.offset, tok.value)
                self.advance()
            elif self.at(_BRACKET, "("):
                key = self.expression(0)
            else:
                _fail(
                    "a map key must be a quoted string, a number, a name, or an expression in "
                    f"parentheses, not {tok.describe()}",
                    tok.offset,
                )
            self.expect(_OP, ":")
            pairs.append((key, self.expression(0)))
        self.expect(_BRACKET, "}")
        return _MapLit(start.offset, pairs)

    def postfix(self, node: _Node) -> _Node:
        chain = False
        if isinstance(node, _Chain) and (self.at(_OP, ".") or self.at(_OP, "?.")):
            node, chain = node.inner, True  # `(a?.b).c` continues the chain, as in expr
        while True:
            tok = self.tok
            if tok.kind == _OP and tok.text in (".", "?."):
                optional = tok.text == "?."
                self.advance()
                if optional and self.at(_BRACKET, "["):
                    node = self.index(node, optional=True)
                    chain = True
                    continue
                field = self.tok
                if not (field.kind == _IDENT or (field.kind == _OP and field.text.isalpha())):
                    _fail(f"expected a field name after {tok.text!r}", field.offset)
                self.advance()
                if self.at(_BRACKET, "("):
                    _fail(f"method calls such as .{field.text}() are not supported", field.offset)
                node = _Member(field.offset, node, _Const(field.offset, field.text), optional)
                chain = chain or optional
            elif tok.kind == _BRACKET and tok.text == "[":
                node = self.index(node, optional=False)
            else:
                break
        return _Chain(node) if chain else node

    def index(self, node: _Node, *, optional: bool) -> _Node:
        bracket = self.expect(_BRACKET, "[")
        lo: _Node | None = None
        if not self.at(_OP, ":"):
            lo = self.expression(0)
            if not self.at(_OP, ":"):
                self.expect(_BRACKET, "]")
                assert lo is not None
                return _Member(bracket.offset, node, lo, optional)
        self.advance()  # the ':' of a slice
        hi = None if self.at(_BRACKET, "]") else self.expression(0)
        self.expect(_BRACKET, "]")
        return _Slice(bracket.offset, node, lo, hi)
