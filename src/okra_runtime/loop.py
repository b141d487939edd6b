"""The event loop a manager process runs on: uvloop when it is installed, else asyncio's.

uvloop (`pip install okra[uvloop]`) is an optional extra: a drop-in event loop on libuv
whose sockets, timers and callbacks cost less CPU per event than the default selector
loop. Nothing in okra_runtime depends on it; `run()` picks it up when importable. Set
`OKRA_EVENT_LOOP=asyncio` to keep the standard loop even when uvloop is there (to
compare, or to rule it out), `OKRA_EVENT_LOOP=uvloop` to fail loudly when it is missing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

ENV = "OKRA_EVENT_LOOP"


def loop_factory() -> tuple[str, Callable[[], asyncio.AbstractEventLoop] | None]:
    """(name, factory) of the loop `run()` uses; factory None means asyncio's default."""
    wanted = os.environ.get(ENV, "").strip().lower()
    if wanted not in ("", "asyncio", "uvloop"):
        raise ValueError(f"{ENV}={wanted!r}: expected 'asyncio' or 'uvloop'")
    if wanted == "asyncio":
        return "asyncio", None
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise
        return "asyncio", None
    return "uvloop", uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(main) on the loop `loop_factory()` picks."""
    _, factory = loop_factory()
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
