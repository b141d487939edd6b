"""Argo Rollouts' condition language (expr-lang/expr), parsed and evaluated safely in Python.

An AnalysisTemplate's `successCondition` / `failureCondition` is an expression in the language
of github.com/expr-lang/expr (formerly antonmedv/expr), evaluated with `result` bound to the
provider's measurement plus Argo's helpers (`asInt`, `asFloat`, `isNaN`, `isInf`, `isNil`,
`default`). okra evaluates these itself, so templates written for Argo must mean the same here.

Why a hand-written parser: PyPI has no maintained implementation of this language. `expr-lang`
(0.1.0) is an empty placeholder; `enchanter-golem` (0.1.0, one release, a cp311-only wheel
embedding a Go shared library) wraps the Go engine but rejects NaN/Inf results, which Prometheus
conditions such as `isNaN(result)` depend on, and has none of Argo's helpers; general
"safe eval" packages implement Python's grammar, not expr's. So this module is a small lexer,
a recursive-descent (precedence-climbing) parser that mirrors expr's own parser, and a
tree-walking evaluator. Nothing here calls `eval`, `exec` or `compile` on user input, and no
Python attribute is ever looked up by a name taken from a condition: values are JSON-shaped
(nil, bool, int, float, string, array, map) and only maps (by key) and arrays/strings (by
index) can be looked into; any other object is opaque.

Use `compile_condition` once per template and `Condition.evaluate` per measurement, or
`evaluate_condition(source, result)` (compiled conditions are cached). Every failure, at parse
or evaluation time, is an `ExprError` naming the problem and its column.

Grammar (EBNF; `{x}` repeats, `[x]` is optional)::

    condition  = expression ;
    expression = "let" name "=" expression ";" expression
               | binary { "?" expression ":" expression | "?:" expression } ;
    binary     = unary { binop unary } ;            (* precedence climbing, table below *)
    unary      = ( "!" | "not" | "-" | "+" ) binary (* operand binds at the operator's level *)
               | postfix ;
    postfix    = primary { "." field | "?." field | "[" expression "]" | "?.[" expression "]"
                         | "[" [ expression ] ":" [ expression ] "]" } ;
    field      = name | word-operator ;             (* result.in is the key "in" *)
    primary    = literal | name | "$env" | call | "(" expression ")" | array | map
               | "#" [ "index" | "acc" ] | "." field ;   (* the last two only in predicates *)
    call       = name "(" [ argument { "," argument } [ "," ] ] ")" ;
    argument   = expression | predicate ;           (* predicate where the function takes one *)
    predicate  = "{" expression "}" | expression ;  (* "#" is the element, "#index" its index *)
    array      = "[" [ expression { "," expression } [ "," ] ] "]" ;
    map        = "{" [ key ":" expression { "," key ":" expression } [ "," ] ] "}" ;
    key        = string | number | name | "(" expression ")" ;   (* bare keys are strings *)
    literal    = integer | float | string | "true" | "false" | "nil" ;
    integer    = digit { digit | "_" } | "0x" hex { hex | "_" } | "0o" oct {..} | "0b" bin {..} ;
    float      = digits "." [ digits ] [ exponent ] | "." digits [ exponent ] | digits exponent ;
    string     = "'" { char | escape } "'" | '"' { char | escape } '"' | "`" { raw } "`" ;
    comment    = "//" ... end of line | "/*" ... "*/" ;

Binary operators, loosest first (all left-associative except `**`/`^`)::

     0  |                                     pipe: `x | f(a)` is `f(x, a)`
    10  ||  or                                short-circuit, operands must be bool
    15  &&  and                               short-circuit, operands must be bool
    20  == != < > <= >= in matches contains startsWith endsWith, and `not in`, `not matches`,
        `not contains`, `not startsWith`, `not endsWith`; `< > <= >=` chain: a < b < c means
        a < b && b < c (the others do not: a < b == true is (a < b) == true)
    25  ..                                    integer range, inclusive
    30  + -
    60  * / %
   100  ** ^                                  power, right-associative, always a float
   500  ??                                    nil-coalescing; cannot be mixed with other binary
                                              operators without parentheses
  Unary `!`/`not` bind at 50 (so `!a == b` is `(!a) == b`), unary `-`/`+` at 90 (so `-2 ** 2`
  is -4).

Semantics (expr's): int op int stays int (64-bit, wrapping like Go); any float makes a float;
`/` always gives a float (x/0 is ±Inf or NaN, as in Go); `%` takes ints only and truncates like
Go; `+` also joins strings. `<` and friends compare numbers with numbers and strings with strings,
anything else is an error (so `nil < 5` fails, as Argo reports for an empty Datadog result); an
int meeting a float becomes a float64 first, as in Go. `==` between kinds the type check allows
never fails at run time except where expr-lang compiles a typed comparison (two ints, two
strings: see `_Equal`): values of different kinds are unequal, arrays compare element-wise (so a
vector holding NaN is not equal to itself), maps as Go's reflect.DeepEqual. `in` looks for an
element of an array or a key of a map (`x in nil` is false), with expr-lang's optimizer's
rewrites of literal arrays and ranges (see `_In`). `matches` is an unanchored search (Go's
`MatchString`) with RE2's meaning, and like `contains`/`startsWith`/`endsWith` it is false for a
nil operand. A missing map key reads as nil; indexing an array out of range is an error ("index
out of range: 3 (array length is 1)"), negative indexes count from the end; slices clamp.
Strings index and slice by UTF-8 byte, as Go does (an element is a byte). `a?.b` and `a?.[i]`
give nil when `a` is nil instead of failing, for the rest of the postfix chain.

Built-in functions: predicates `all any none one filter map count find findIndex findLast
findLastIndex sum reduce` (`count` and `sum` take an optional predicate; `reduce` has `#acc`);
`len abs int float string type max min sum mean median first last get take keys values ceil
floor round lower upper trim trimPrefix trimSuffix split join replace repeat indexOf lastIndexOf
hasPrefix hasSuffix`, and Argo's `isNaN isInf isNil default asInt asFloat`.

Limits, so that a template cannot hang or exhaust the controller: sources longer than
`MAX_SOURCE_LENGTH` characters or nested deeper than `MAX_DEPTH` are rejected; there are no
loops except predicates over finite arrays; ranges hold at most `MAX_RANGE` elements; strings
built by `+`, `repeat`, `replace` and `join` hold at most `MAX_STRING` characters. One
evaluation has a budget of `MAX_STEPS` units (a predicate iteration costs the size of its body,
a range element 8, a built string or array 1 per 8 characters or elements) and stops after
`MAX_SECONDS` whatever its budget. Regular expressions in RE2's unsupported or exponential
shapes (back-references, look-around, nested unbounded repetition such as `(a+)+`) are
rejected.

Argo compiles each condition against the live `result` (`expr.Env`), so expr's type checker
sees its Go type (float64, []float64, nil, a JSON map...) and rejects operations that cannot apply,
even in a branch that never runs: `isNil(result) || result < 1` with a nil result is an error,
not true. `evaluate_condition` runs the same check first (`okra_controllers.analysis.expr.types`),
in Argo's environment: `result` and its helpers, whose `isNil(x)` and `default(x, d)` ignore `x`
and look at `result`. Checked against expr-lang v1.17.7 with Argo's environment by
test/expr_differential.

Where this knowingly differs from Argo Rollouts / expr-lang v1.17.7, each with an example and
its effect on a verdict: docs/analysis-expr.md, the one list. test/expr_differential reads it,
and fails on any difference it does not name (and on any condition true here and not in Argo).
"""

from okra_controllers.analysis.expr.condition import (
    Condition,
    compile_condition,
    evaluate_condition,
)
from okra_controllers.analysis.expr.errors import (
    MAX_DEPTH,
    MAX_RANGE,
    MAX_SECONDS,
    MAX_SOURCE_LENGTH,
    MAX_STEPS,
    MAX_STRING,
    ExprError,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_RANGE",
    "MAX_SECONDS",
    "MAX_SOURCE_LENGTH",
    "MAX_STEPS",
    "MAX_STRING",
    "Condition",
    "ExprError",
    "compile_condition",
    "evaluate_condition",
]
