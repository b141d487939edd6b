"""`matches`: RE2's meaning in Python's `re`, refusing what RE2 rejects and what could run in
exponential time."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final, NoReturn

from okra_controllers.analysis.expr.errors import _Fault
from okra_controllers.analysis.expr.lexer import _is_digit
from okra_controllers.analysis.expr.values import _go_quote

_RE2_UNSUPPORTED: Final = (
    ("(?=", "look-ahead"),
    ("(?!", "negative look-ahead"),
    ("(?<=", "look-behind"),
    ("(?<!", "negative look-behind"),
    ("(?>", "an atomic group"),
    ("(?(", "a conditional group"),
    ("(?P=", "a back-reference"),
    ("(?#", "a comment group"),
)


_REPEAT_BRACES: Final = re.compile(r"\{(\d+)(,?)(\d*)\}")


def _regex_problem(pattern: str) -> str | None:
    """Why `pattern` must not run: syntax Go's RE2 rejects (so Argo would fail too), or nested
    unbounded repetition, whose backtracking in Python's `re` can take exponential time."""
    groups = [False]  # per open group: does it contain an unbounded repeat?
    last_group_unbounded = False  # the atom just closed was such a group
    after_repeat = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if _is_digit(pattern[i + 1 : i + 2]) and pattern[i + 1] != "0":
                return "a back-reference is not supported (RE2 syntax)"
            i += 2
        elif c == "[":
            j = i + 1
            if pattern.startswith("^", j):
                j += 1
            if pattern.startswith("]", j):
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
        elif c == "(":
            for prefix, what in _RE2_UNSUPPORTED:
                if pattern.startswith(prefix, i):
                    return f"{what} is not supported (RE2 syntax)"
            groups.append(False)
            i += 1
            after_repeat = last_group_unbounded = False
            continue
        elif c == ")":
            inner = groups.pop() if len(groups) > 1 else False
            groups[-1] = groups[-1] or inner
            i += 1
            after_repeat, last_group_unbounded = False, inner
            continue
        elif c in "*+?{":
            if c == "{":
                m = _REPEAT_BRACES.match(pattern, i)
                if m is None:  # a literal brace
                    i += 1
                    after_repeat = last_group_unbounded = False
                    continue
                unbounded = m.group(2) == "," and m.group(3) == ""
                i = m.end()
            else:
                unbounded = c != "?"
                i += 1
            if after_repeat:
                if c == "+":
                    return "a possessive repeat is not supported (RE2 syntax)"
                return None  # `**` and the like: let `re` report it
            if unbounded and last_group_unbounded:
                return (
                    "nested unbounded repetition such as (a+)+ can take exponential time; "
                    "bound the outer repeat, e.g. {1,10}"
                )
            groups[-1] = groups[-1] or unbounded
            if pattern.startswith("?", i):  # lazy
                i += 1
            after_repeat, last_group_unbounded = True, False
            continue
        else:
            i += 1
        after_repeat = last_group_unbounded = False
    return None


_WORD: Final = "0-9A-Za-z_"


_RE2_CLASSES: Final = {"d": "0-9", "w": _WORD, "s": "\\t\\n\\f\\r "}


_RE2_POSIX: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": _WORD,
    "xdigit": "0-9A-Fa-f",
}


_RE2_BOUNDARY: Final = {
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
}


_RE2_MULTILINE: Final = re.compile(r"\(\?[a-zA-Z]*m")


def _re2_to_python(pattern: str) -> str:
    """`pattern` (RE2 syntax, as Go's regexp reads it) in Python's `re` syntax with RE2's
    meaning: `\\d \\w \\s \\b` and POSIX classes are ASCII, `$` without the m flag is the end of
    the text (not also before a final newline), `\\z` is `\\Z`, `{,n}` is literal. What cannot
    be said the same way (`\\D` inside a class, `[[:^alpha:]]`, `\\Z`) is an error."""
    out: list[str] = []
    multiline = _RE2_MULTILINE.search(pattern) is not None
    i, n = 0, len(pattern)

    def unsupported(what: str) -> NoReturn:
        raise _Fault(f"regular expression {_go_quote(pattern)}: {what} is not supported here")

    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            if e in "dws":
                out.append(f"[{_RE2_CLASSES[e]}]")
            elif e in "DWS":
                out.append(f"[^{_RE2_CLASSES[e.lower()]}]")
            elif e in "bB":
                out.append(_RE2_BOUNDARY[e])
            elif e == "z":
                out.append("\\Z")
            elif e == "Z":
                unsupported("\\Z")
            else:
                out.append(pattern[i : i + 2])
            i += 2
        elif c == "[":
            j = i + 1
            part = ["["]
            if pattern.startswith("^", j):
                part.append("^")
                j += 1
            if pattern.startswith("]", j):
                part.append("\\]")
                j += 1
            while j < n and pattern[j] != "]":
                if pattern.startswith("[:", j):
                    end = pattern.find(":]", j + 2)
                    name = pattern[j + 2 : end] if end > 0 else ""
                    if name not in _RE2_POSIX:
                        unsupported(f"the class [:{name}:]")
                    part.append(_RE2_POSIX[name])
                    j = end + 2
                elif pattern[j] == "\\" and j + 1 < n:
                    e = pattern[j + 1]
                    if e in "dws":
                        part.append(_RE2_CLASSES[e])
                    elif e in "DWS":
                        unsupported(f"\\{e} inside a class")
                    else:
                        part.append(pattern[j : j + 2])
                    j += 2
                else:
                    part.append("\\[" if pattern[j] == "[" else pattern[j])
                    j += 1
            if j >= n:
                raise _Fault(f"invalid regular expression {_go_quote(pattern)}: missing ]")
            out.extend(part)
            out.append("]")
            i = j + 1
        elif c == "$" and not multiline:
            out.append("\\Z")
            i += 1
        elif c == "{" and pattern.startswith("{,", i):
            out.append("\\{")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    problem = _regex_problem(pattern)
    if problem is not None:
        raise _Fault(f"regular expression {_go_quote(pattern)}: {problem}")
    try:
        return re.compile(_re2_to_python(pattern))
    except re.error as e:
        raise _Fault(f"invalid regular expression {_go_quote(pattern)}: {e}") from None
