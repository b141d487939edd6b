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

`ApiServerProxy` is the same idea on the Kubernetes side: an HTTP proxy between
okra-manager and kube-apiserver that names each request as RBAC does (`patch
cells/status`), runs kill hooks before or after forwarding it, stalls watch streams and
ends resumed watches with `410 Gone`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
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


async def _dead(request: web.Request) -> None:
    """Deliver nothing more, keeping the connection open until the client gives up on it;
    then end the handler (raises CancelledError, which aiohttp takes quietly)."""
    # aiohttp offers no event for a peer's close (handler cancellation is off): poll it
    while request.transport is not None and not request.transport.is_closing():  # noqa: ASYNC110
        await asyncio.sleep(0.2)
    raise asyncio.CancelledError


# -- the API server side ---------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KubeCall:
    """One request to the API server, named as RBAC and the audit log name it."""

    method: str
    verb: str  # get list watch create update patch delete deletecollection
    group: str  # "" for the core group
    resource: str
    subresource: str
    namespace: str
    name: str
    resource_version: str = ""
    phase: str = ""  # a status write's `status.phase`

    @property
    def op(self) -> str:
        """`verb resource[/subresource]`, e.g. `patch cells/status` (what a test arms)."""
        sub = f"/{self.subresource}" if self.subresource else ""
        return f"{self.verb} {self.resource}{sub}"


def kube_call(method: str, path: str, query: Mapping[str, str]) -> KubeCall | None:
    """The resource request behind `method path?query`; None for discovery, /healthz and
    the like."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    resource, name, sub = rest[0], rest[1] if len(rest) > 1 else "", "/".join(rest[2:])
    watch = query.get("watch") in ("true", "1")
    verb = {
        "GET": "watch" if watch else ("get" if name else "list"),
        "POST": "create",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete" if name else "deletecollection",
    }.get(method, method.lower())
    return KubeCall(
        method, verb, group, resource, sub, namespace, name, query.get("resourceVersion", "")
    )


# The event kube-apiserver ends a watch with when its resourceVersion is too old for it.
_EXPIRED = (
    b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},'
    b'"status":"Failure","message":"too old resource version: %s","reason":"Expired",'
    b'"code":410}}\n'
)


class ApiServerProxy:
    """An HTTP proxy in front of kube-apiserver for one client (okra-manager): the client
    speaks plain HTTP to it (`kubeconfig()`), it speaks TLS to the server.

    - `on_request(call)` runs before a request is forwarded; when it returns True the
      request is dropped unanswered (its sender was killed before the write reached the
      server). `on_response(call)` runs after the server answered, before the answer is
      passed on (a kill there loses the reply of an applied write).
    - `stall_watches()`: every watch stream, open or opened later, stops delivering
      (connection kept open, as a dead NAT entry or a hung load balancer does; not even the
      server's own close at `timeoutSeconds` gets through) and never recovers;
      `resume_watches()` lets watches opened afterwards through.
    - `expire_watches(resources)`: the next watch of each resource that resumes from a
      resourceVersion is ended with kube-apiserver's `410 Gone` (Expired) event.
    - `delay_watches(seconds)`: every watch event, on streams open or opened later, reaches
      the client `seconds` after the server sent it (in order; the stream is not held up
      by the delay of the one before): a cache that trails the API server, as on a loaded
      control plane. `delay_watches(0)` ends it for events sent afterwards.
    - `calls` records every resource request with its time; `watches_opened` per resource;
      `statuses` the body of every status write.
    """

    def __init__(self, server: str, ca_pem: bytes) -> None:
        self.upstream = server.rstrip("/")
        self._ssl = ssl.create_default_context(cadata=ca_pem.decode())
        self.on_request: Callable[[KubeCall], bool] | None = None
        self.on_response: Callable[[KubeCall], None] | None = None
        self.calls: list[tuple[float, KubeCall]] = []
        # every status write's body: (resource, name, status), in the order they were sent
        self.statuses: list[tuple[str, str, dict[str, Any]]] = []
        self._stalled = False
        self._expire: set[str] = set()
        self._watch_delay = 0.0
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def kubeconfig(self, path: Path, token: str) -> Path:
        """A kubeconfig that reaches the server through this proxy with `token`."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxied", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": token}}],
            "contexts": [{"name": "proxied", "context": {"cluster": "proxied", "user": "u"}}],
            "current-context": "proxied",
        }
        path.write_text(json.dumps(config))
        path.chmod(0o600)
        return path

    def stall_watches(self) -> None:
        self._stalled = True

    def resume_watches(self) -> None:
        self._stalled = False

    def delay_watches(self, seconds: float) -> None:
        self._watch_delay = seconds

    def expire_watches(self, resources: Iterable[str]) -> None:
        self._expire |= set(resources)

    def watches_opened(self, resource: str, since: float = 0.0) -> int:
        return sum(
            1 for t, c in self.calls if t >= since and c.verb == "watch" and c.resource == resource
        )

    async def __aenter__(self) -> ApiServerProxy:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=self._ssl, limit=0),
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=False,
        )
        app = web.Application(client_max_size=64 * 1024**2)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _relay(
        self, request: web.Request, content: aiohttp.StreamReader, resp: web.StreamResponse
    ) -> None:
        """A watch stream's chunks to the client, each `_watch_delay` after it arrived
        (read ahead into a queue, so that a chunk's delay runs while the ones before it
        wait out theirs); a stalled watch goes dead (see `stall_watches`)."""
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()

        async def read() -> None:
            try:
                async for chunk in content.iter_any():
                    queue.put_nowait((time.monotonic() + self._watch_delay, chunk))
            finally:  # the server closed it (its timeoutSeconds), or the connection broke
                queue.put_nowait((time.monotonic() + self._watch_delay, None))

        reader = asyncio.create_task(read())
        try:
            while True:
                due, chunk = await queue.get()
                if due > time.monotonic():
                    await asyncio.sleep(due - time.monotonic())
                if self._stalled:
                    await _dead(request)  # stalled for good: the client must notice
                if chunk is None:
                    return
                await resp.write(chunk)
        finally:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = await request.read()
        call = kube_call(request.method, request.path, request.query)
        if call is not None:
            if call.subresource == "status" and body:
                status = json.loads(body).get("status") or {}
                self.statuses.append((call.resource, call.name, status))
                call = dataclasses.replace(call, phase=str(status.get("phase") or ""))
            self.calls.append((time.monotonic(), call))
            if self.on_request is not None and self.on_request(call):
                _reset(request)
                raise asyncio.CancelledError
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() not in ("host", "content-length", "transfer-encoding", "connection")
        }
        if (
            call is not None
            and call.verb == "watch"
            and call.resource in self._expire
            and call.resource_version not in ("", "0")
        ):
            self._expire.discard(call.resource)
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            await resp.write(_EXPIRED % call.resource_version.encode())
            await resp.write_eof()
            return resp
        async with self._session.request(
            request.method, self.upstream + request.path_qs, headers=headers, data=body or None
        ) as up:
            if call is not None and self.on_response is not None:
                self.on_response(call)
            resp = web.StreamResponse(
                status=up.status,
                headers={
                    k: v
                    for k, v in up.headers.items()
                    if k.lower() not in ("content-length", "transfer-encoding", "connection")
                },
            )
            watch = call is not None and call.verb == "watch"
            try:
                await resp.prepare(request)
                if watch:
                    await self._relay(request, up.content, resp)
                else:
                    async for chunk in up.content.iter_any():
                        await resp.write(chunk)
                await resp.write_eof()
            except (ConnectionError, aiohttp.ClientError):
                pass  # the client went away (killed, or gave up on a stalled watch)
            return resp
