"""A local HTTP receiver for notifications: records what it is sent, can refuse the first
deliveries (503) or be started late on a port fixed in advance (a receiver that is down)."""

from __future__ import annotations

import socket
from typing import Any

from aiohttp import web


class Receiver:
    def __init__(self, down_for: int = 0) -> None:
        self.down_for = down_for
        self.refused = 0
        self.received: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        if self.refused < self.down_for:
            self.refused += 1
            return web.Response(status=503)
        self.received.append((request.path, dict(request.headers), await request.json()))
        return web.Response(status=204)

    def bodies(self, path: str = "/hook") -> list[dict[str, Any]]:
        return [b for p, _, b in self.received if p == path]


async def serve(r: Receiver, port: int = 0) -> web.AppRunner:
    """Serve `r` on 127.0.0.1:`port` (0: any free port; `r.url` says which) until the
    returned runner is cleaned up."""
    app = web.Application()
    app.router.add_post("/{name}", r.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    r.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    return runner


def free_port() -> int:
    """A loopback port nothing listens on (yet)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
