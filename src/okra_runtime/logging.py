"""structlog set-up: JSON lines in a cluster, coloured console locally.

Context bound with `structlog.contextvars` (the controller binds controller,
namespace, name and reconcile_id around each reconcile) appears on every line.
Values under keys that name secrets (token, password, secret, caData,
authorization, ...) are replaced with `[redacted]` before rendering, wherever
they are nested.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
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
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info if fmt == "json" else structlog.dev.set_exc_info,
            redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lvl),
        logger_factory=structlog.PrintLoggerFactory(file=stream or sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(lvl, logging.WARNING), stream=stream or sys.stderr)
