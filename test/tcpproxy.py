"""A loopback TCP proxy that can go silent: it keeps connections open but stops
forwarding bytes, the way a dead NAT entry or a hung load balancer does. It can
also go away (`refuse`: every connection dropped, new ones refused, as when the
server behind it is down) and come back on the same port (`accept`). TLS passes
through untouched."""

from __future__ import annotations

import asyncio
import contextlib


class StallingProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open = asyncio.Event()
        self._open.set()
        self._conns: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stall(self) -> None:
        """Stop forwarding on every connection, old and new; keep them open."""
        self._open.clear()

    def resume(self) -> None:
        """Drop the stalled connections (they are dead to their peers) and
        forward normally again."""
        for w in list(self._writers):
            w.close()
        self._open.set()

    async def refuse(self) -> None:
        """Drop every connection and refuse new ones, as a stopped server does."""
        if self._server:
            self._server.close()
            self._server = None
        for w in list(self._writers):
            w.close()

    async def accept(self) -> None:
        """Listen again on the same port."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    async def close(self) -> None:
        if self._server:
            self._server.close()
        for w in list(self._writers):
            w.close()
        for t in list(self._conns):
            t.cancel()
        await asyncio.gather(*self._conns, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conns.add(task)
        self._writers.add(writer)
        try:
            await self._open.wait()  # a stalled proxy accepts but never answers
            up_r, up_w = await asyncio.open_connection(*self.target)
            self._writers.add(up_w)
            await asyncio.gather(self._pipe(reader, up_w), self._pipe(up_r, writer))
        except (ConnectionError, OSError):
            pass
        finally:
            self._conns.discard(task)
            for w in (writer,):
                w.close()

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                await self._open.wait()
                if dst.is_closing():
                    return
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(dst)
            with contextlib.suppress(Exception):
                dst.close()
