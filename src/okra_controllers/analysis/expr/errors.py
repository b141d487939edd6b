"""Errors and limits: `ExprError`, the internal signals `_Fault`/`_NilChain`, and the bounds
that keep one condition from hanging or exhausting the controller."""

from __future__ import annotations

from typing import Final, NoReturn

MAX_SOURCE_LENGTH: Final = 4096


MAX_DEPTH: Final = 64


MAX_RANGE: Final = 100_000


MAX_STEPS: Final = 10_000_000


MAX_SECONDS: Final = 1.0


MAX_STRING: Final = 1 << 20

_INT_MIN: Final = -(1 << 63)


_INT_MAX: Final = (1 << 63) - 1


class ExprError(ValueError):
    """A condition that cannot be parsed or evaluated.

    `reason` is the bare problem; `line` and `column` (1-based) locate it in `source` when known.
    `str(error)` puts the three together: "unexpected ')' at column 14 in 'result[0] >= )'".
    """

    def __init__(
        self,
        reason: str,
        *,
        source: str | None = None,
        offset: int | None = None,
        quote_source: bool = True,
    ) -> None:
        self.reason = reason
        self.source = source
        self.offset = offset
        self.line: int | None = None
        self.column: int | None = None
        self._quote_source = quote_source
        if source is not None and offset is not None:
            self.line = source.count("\n", 0, offset) + 1
            self.column = offset - (source.rfind("\n", 0, offset) + 1) + 1
        super().__init__(self._render())

    def _render(self) -> str:
        message = self.reason
        if self.column is not None and self.source is not None:
            if "\n" in self.source:
                message += f" at line {self.line}, column {self.column}"
            else:
                message += f" at column {self.column}"
        elif self.offset is not None:
            message += f" at offset {self.offset}"
        if self.source is not None and self._quote_source:
            message += f" in {_quote(self.source)}"
        return message

    def _in(self, source: str) -> ExprError:
        """This error, located in `source` (errors are raised before the source is known)."""
        if self.source is not None:
            return self
        return ExprError(self.reason, source=source, offset=self.offset)


def _quote(source: str) -> str:
    return repr(source if len(source) <= 120 else source[:117] + "...")


class _Fault(Exception):  # noqa: N818 (internal signal, never escapes)
    """A runtime failure inside a helper; the node that called it adds the column."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _NilChain(Exception):  # noqa: N818 (internal signal, never escapes)
    """`a?.b` met a nil `a`: the enclosing chain evaluates to nil."""


def _fail(reason: str, offset: int) -> NoReturn:
    raise ExprError(reason, offset=offset)
