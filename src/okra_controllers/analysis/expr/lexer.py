"""The lexer: source text to tokens (numbers, strings, names, operators, brackets)."""

from __future__ import annotations

import math
from typing import Any, Final, NamedTuple

from okra_controllers.analysis.expr.errors import _INT_MAX, _fail

_NUMBER, _STRING, _IDENT, _OP, _BRACKET, _EOF = "number", "string", "name", "op", "bracket", "end"

_WORD_OPS: Final = frozenset(
    {"in", "or", "and", "not", "matches", "contains", "startsWith", "endsWith", "let"}
)


_TWO_CHAR_OPS: Final = frozenset({"&&", "!=", "==", "**", "<=", ">=", "??", "?.", "||", "::", ".."})


_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
}


class _Tok(NamedTuple):
    kind: str
    text: str
    offset: int
    value: Any = None

    def describe(self) -> str:
        if self.kind == _EOF:
            return "end of condition"
        if self.kind in (_OP, _BRACKET):
            return repr(self.text)
        return f"{self.kind} {self.text}"


def _is_digit(c: str) -> bool:
    return len(c) == 1 and "0" <= c <= "9"


def _is_name_char(c: str) -> bool:
    return c.isalnum() or c == "_" or c == "$"


def _lex(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        start = i
        if c == "'" or c == '"':
            i = _scan_string(src, i)
            text = _unescape(src[start + 1 : i - 1], start)
            toks.append(_Tok(_STRING, src[start:i], start, text))
        elif c == "`":
            end = src.find("`", i + 1)
            if end < 0:
                _fail("string literal not terminated", start)
            i = end + 1
            toks.append(_Tok(_STRING, src[start:i], start, src[start + 1 : end]))
        elif _is_digit(c) or (c == "." and _is_digit(src[i + 1 : i + 2])):
            i, value = _scan_number(src, i)
            toks.append(_Tok(_NUMBER, src[start:i], start, value))
        elif src.startswith("//", i):
            end = src.find("\n", i)
            i = n if end < 0 else end
        elif src.startswith("/*", i):
            end = src.find("*/", i + 2)
            if end < 0:
                _fail("comment not terminated", start)
            i = end + 2
        elif c in "([{)]}":
            toks.append(_Tok(_BRACKET, c, start))
            i += 1
        elif src[i : i + 2] in _TWO_CHAR_OPS:
            toks.append(_Tok(_OP, src[i : i + 2], start))
            i += 2
        elif c in ",;:%+-^*/<>=!&|?#.":
            toks.append(_Tok(_OP, c, start))
            i += 1
        elif _is_name_char(c):
            while i < n and _is_name_char(src[i]):
                i += 1
            word = src[start:i]
            toks.append(_Tok(_OP if word in _WORD_OPS else _IDENT, word, start))
        else:
            _fail(f"unrecognized character {c!r}", start)
    toks.append(_Tok(_EOF, "", n))
    return toks


def _scan_string(src: str, i: int) -> int:
    quote, start = src[i], i
    i += 1
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            return i + 1
        i += 1
    _fail("string literal not terminated", start)


def _unescape(raw: str, offset: int) -> str:
    if "\\" not in raw:
        return raw
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        at = offset + 1 + i
        e = raw[i + 1 : i + 2]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e and e in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[e]
            digits = raw[i + 2 : i + 2 + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                _fail(f"invalid escape \\{e}{digits} in string", at)
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                _fail(f"invalid Unicode code point \\{e}{digits} in string", at)
            out.append(chr(code))
            i += 2 + width
        elif e and e in "01234567":
            digits = raw[i + 1 : i + 4]
            if len(digits) != 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 255:
                _fail(f"invalid octal escape \\{digits} in string", at)
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            _fail(f"invalid escape \\{e} in string", at)
    return "".join(out)


def _scan_number(src: str, i: int) -> tuple[int, int | float]:
    start, n = i, len(src)
    digits = "0123456789_"
    radix = ""
    if src[i] == "0" and src[i + 1 : i + 2] in ("x", "X", "o", "O", "b", "B"):
        radix = src[i + 1].lower()
        digits = {"x": "0123456789abcdefABCDEF_", "o": "01234567_", "b": "01_"}[radix]
        i += 2

    def run(j: int) -> int:
        while j < n and src[j] in digits:
            j += 1
        return j

    i = run(i)
    if i < n and src[i] == "." and not src.startswith("..", i):
        i = run(i + 1)
    if i < n and src[i] in "eE" and radix != "x":
        i += 1
        if i < n and src[i] in "+-":
            i += 1
        i = run(i)
    if i < n and _is_name_char(src[i]):
        i += 1
        while i < n and _is_name_char(src[i]):
            i += 1
        _fail(f"bad number syntax: {src[start:i]}", start)
    text = src[start:i].replace("_", "")
    value: int | float
    try:
        if radix:
            value = int(text, 0)
        elif "." in text or "e" in text or "E" in text:
            value = float(text)
        else:
            value = int(text, 10)
    except ValueError:
        value = math.nan
    if isinstance(value, float) and not math.isfinite(value):
        what = "too large" if math.isinf(value) else "bad number syntax"
        _fail(f"{what}: {src[start:i]}", start)
    if isinstance(value, int) and value > _INT_MAX:
        _fail(f"integer literal too large: {src[start:i]}", start)
    return i, value
