"""An HTTP reverse proxy in front of the moto server that injects AWS faults.

Faults are drawn from a seeded RNG, so a failing run replays with the same seed:

- `500` / `503`: an AWS `InternalFailure` / `ServiceUnavailable` answer, not forwarded;
- `throttle`: `400 Throttling: Rate exceeded`, not forwarded;
- `reset-before`: the connection is reset before the request reaches moto;
- `reset-after`: the request is forwarded (AWS applied it) and the connection is reset
  instead of answering (the reply is lost);
- `latency`: forwarded after a delay (50-500 ms).

Only operations in `ops` are faulted (all when None); `script` forces faults for
the next calls of an operation (`{"CreateRule": ["reset-after"]}`), in order, before
any random ones. `on_forward(op)` is called the moment a request is forwarded (a
kill-point hook). `log` records every call as (operation, fault or "").

The operation is read from the query protocol's `Action` (ELBv2, EC2, STS) or the
JSON protocol's `X-Amz-Target`; REST services (EKS) are named by method and path.
"""

from __future__ import annotations

import asyncio
import random
import socket
import struct
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from aiohttp import ClientSession, ClientTimeout, web

FAULTS = ("500", "503", "throttle", "reset-before", "reset-after", "latency")
INJECTED = ("InternalFailure", "ServiceUnavailable", "Throttling", "Rate exceeded", "Connection")
"""Text that appears in what okra says about an injected fault (botocore's messages)."""

_XML = (
    '<ErrorResponse xmlns="http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/">'
    "<Error><Type>{kind}</Type><Code>{code}</Code><Message>{message}</Message></Error>"
    "<RequestId>fault-{n}</RequestId></ErrorResponse>"
)
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class FaultProxy:
    upstream: str  # moto's endpoint URL
    seed: int = 0
    rate: float = 0.0
    faults: tuple[str, ...] = FAULTS
    ops: set[str] | None = None
    script: dict[str, list[str]] = field(default_factory=dict)
    on_forward: Callable[[str], None] | None = None
    log: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0
    _rng: random.Random = field(init=False)
    _runner: web.AppRunner | None = field(init=False, default=None)
    _session: ClientSession | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._session = ClientSession(timeout=ClientTimeout(total=60), auto_decompress=False)
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def __aenter__(self) -> FaultProxy:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

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

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        op = _operation(request, body)
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
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        if self.on_forward is not None:
            self.on_forward(op)
        async with self._session.request(
            request.method,
            self.upstream + request.rel_url.path_qs,
            data=body,
            headers=headers,
        ) as up:
            payload = await up.read()
            if fault == "reset-after":
                _reset(request)
                raise asyncio.CancelledError
            return web.Response(
                status=up.status,
                body=payload,
                headers={k: v for k, v in up.headers.items() if k.lower() not in _HOP},
            )


def _operation(request: web.Request, body: bytes) -> str:
    target = request.headers.get("X-Amz-Target")
    if target:
        return target.rsplit(".", 1)[-1]
    form = urllib.parse.parse_qs(body.decode("utf-8", "replace")) if body else {}
    action = form.get("Action") or urllib.parse.parse_qs(request.rel_url.query_string).get("Action")
    if action:
        return action[0]
    return f"{request.method} {request.rel_url.path}"


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
