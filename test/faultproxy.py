"""The AWS fault proxy: okra's counting proxy in front of the moto server
(`okra_testkit.emulator.CountingProxy`), injecting faults.

Faults are drawn from a seeded RNG, so a failing run replays with the same seed:

- `500` / `503`: an AWS `InternalFailure` / `ServiceUnavailable` answer, not forwarded;
- `throttle`: `400 Throttling: Rate exceeded`, not forwarded;
- `reset-before`: the connection is reset before the request reaches moto;
- `reset-after`: the request is forwarded (AWS applied it) and the connection is reset
  instead of answering (the reply is lost);
- `latency`: forwarded after a delay (50-500 ms).

Only operations in `ops` are faulted (all when None); `script` forces faults for the
next calls of an operation (`{"CreateRule": ["reset-after"]}`), in order, before any
random ones. `on_forward(op)` is called the moment a request is forwarded (a kill-point
hook). `log` records every call as (operation, fault or ""); `calls` (the counting
proxy's) records what reached moto.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from okra_testkit.emulator import CountingProxy, action_of

FAULTS = ("500", "503", "throttle", "reset-before", "reset-after", "latency")

_XML = (
    '<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">'
    "<Error><Type>{kind}</Type><Code>{code}</Code><Message>{message}</Message></Error>"
    "<RequestId>fault-{n}</RequestId></ErrorResponse>"
)


class FaultProxy(CountingProxy):
    def __init__(
        self,
        upstream: str,
        *,
        seed: int = 0,
        rate: float = 0.0,
        faults: tuple[str, ...] = FAULTS,
        ops: set[str] | None = None,
        script: dict[str, list[str]] | None = None,
        on_forward: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(upstream)
        self.rate, self.faults, self.ops = rate, faults, ops
        self.script = script or {}
        self.on_forward = on_forward
        self.log: list[tuple[str, str]] = []
        self._rng = random.Random(seed)

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def counts(self, ops: Iterable[str] | None = None) -> dict[str, int]:
        """Calls per fault ("" = passed through), optionally for some operations only."""
        wanted = set(ops) if ops is not None else None
        out: dict[str, int] = {}
        for op, fault in self.log:
            if wanted is None or op in wanted:
                out[fault] = out.get(fault, 0) + 1
        return out

    def _choose(self, op: str) -> str:
        forced = self.script.get(op)
        if forced:
            return forced.pop(0)
        if self.ops is not None and op not in self.ops:
            return ""
        if self.rate and self._rng.random() < self.rate:
            return self._rng.choice(self.faults)
        return ""

    async def _forward(self, request: Any) -> Any:
        op = action_of(request, await request.read())
        fault = self._choose(op)
        self.log.append((op, fault))
        n = len(self.log)
        if fault == "500":
            return _error(500, "Receiver", "InternalFailure", "injected internal failure", n)
        if fault == "503":
            return _error(503, "Receiver", "ServiceUnavailable", "injected unavailability", n)
        if fault == "throttle":
            return _error(400, "Sender", "Throttling", "Rate exceeded", n)
        if fault == "reset-before":
            _reset(request)
            raise asyncio.CancelledError  # aiohttp drops the handler quietly
        if fault == "latency":
            await asyncio.sleep(self._rng.uniform(0.05, 0.5))
        if self.on_forward is not None:
            self.on_forward(op)
        response = await super()._forward(request)
        if fault == "reset-after":
            _reset(request)
            raise asyncio.CancelledError
        return response


def _error(status: int, kind: str, code: str, message: str, n: int) -> web.Response:
    return web.Response(
        status=status,
        body=_XML.format(kind=kind, code=code, message=message, n=n).encode(),
        content_type="text/xml",
    )


def _reset(request: web.Request) -> None:
    """Close the client's connection with a TCP RST (SO_LINGER 0), as a dropped
    connection looks to the caller."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
