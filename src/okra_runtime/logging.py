"""structlog set-up: JSON lines in a cluster, coloured console locally.

Context bound with `structlog.contextvars` (the controller binds controller,
namespace, name and reconcile_id around each reconcile) appears on every line.
Values under keys that name secrets (token, password, secret, caData,
authorization, ...) are replaced with `[redacted]` before rendering, wherever
they are nested.

Standard-library logging (botocore, aiohttp, asyncio, ...) goes through the
same renderer, so in JSON mode every line is one JSON object. Keys, on every
line: `timestamp` (ISO 8601, UTC), `level` (debug, info, warning, error,
critical), `event` (the message); on standard-library lines also `logger` (the
logger's name, e.g. `botocore.credentials`); `exception` when one is logged;
then whatever the caller bound (`controller`, `namespace`, `name`,
`reconcile_id`, ...). Standard-library loggers log at `warning` and above
(their debug output is noise), or at the configured level if it is higher.
"""

from __future__ import annotations

import contextvars
import logging
import sys
from collections.abc import MutableMapping
from types import TracebackType
from typing import Any, Literal

import structlog

_SECRET_KEYS = (
    "token",
    "password",
    "secret",
    "authorization",
    "cadata",
    "ca_data",
    "certificate-authority-data",
    "client-key",
    "bearer",
    "apikey",
    "api_key",
    "appkey",
    "app_key",
    "credentials",
    "private",
)


def _is_secret_key(key: str) -> bool:
    k = key.lower().replace("-", "").replace("_", "")
    return any(s.replace("-", "").replace("_", "") in k for s in _SECRET_KEYS)


def _redact_value(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: "[redacted]" if isinstance(k, str) and _is_secret_key(k) else _redact_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key in list(event):
        if key != "event" and _is_secret_key(key):
            event[key] = "[redacted]"
        elif isinstance(event[key], (dict, list)):
            event[key] = _redact_value(event[key])
    return event


class ContextBinder:
    """`structlog.contextvars.bound_contextvars` for a fixed set of keys, bound again and
    again (the controller binds controller, namespace, name and reconcile_id around every
    reconcile): the same context-local keys, seen by `merge_contextvars` exactly as
    structlog's own binding, at a third of the price.

    structlog's `bound_contextvars` copies the whole context to save what it will restore
    and looks every key up by name; here the keys' ContextVars (structlog's own, reached
    through the tokens of one binding) are looked up once, and leaving the block resets
    each to what it was before (`ContextVar.reset`), which is what `bound_contextvars`
    restores too. Use as `with binder(v1, v2, ...):`, values in the order of the keys;
    enter and leave in the same task (as a `with` block does)."""

    __slots__ = ("_vars", "keys")

    def __init__(self, *keys: str) -> None:
        self.keys = keys
        tokens = list(structlog.contextvars.bind_contextvars(**dict.fromkeys(keys, ...)).values())
        self._vars: tuple[contextvars.ContextVar[Any], ...] = tuple(t.var for t in tokens)
        for var, token in zip(reversed(self._vars), reversed(tokens), strict=True):
            var.reset(token)

    def __call__(self, *values: Any) -> _Bound:
        if len(values) != len(self._vars):
            raise TypeError(f"expected values for {self.keys}, got {len(values)}")
        return _Bound(self._vars, values)


class _Bound:
    __slots__ = ("_tokens", "_values", "_vars")

    def __init__(self, cvars: tuple[contextvars.ContextVar[Any], ...], values: tuple[Any, ...]):
        self._vars = cvars
        self._values = values
        self._tokens: list[contextvars.Token[Any]] = []

    def __enter__(self) -> None:
        self._tokens = [var.set(v) for var, v in zip(self._vars, self._values, strict=True)]

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        for var, token in zip(reversed(self._vars), reversed(self._tokens), strict=True):
            var.reset(token)


def configure_logging(
    fmt: Literal["json", "console"] = "console", level: str = "info", stream: Any = None
) -> None:
    """Configure structlog (and route stdlib logging through the same level)."""
    lvl = logging.getLevelNamesMapping().get(level.upper())
    if lvl is None:
        raise ValueError(f"unknown log level {level!r}; use debug, info, warning or error")
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=stream is None and sys.stderr.isatty())
    )
    tail: list[Any] = [
        structlog.processors.format_exc_info if fmt == "json" else structlog.dev.set_exc_info,
        redact,
    ]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *tail,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                *tail,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(lvl, logging.WARNING))
