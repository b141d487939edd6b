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
