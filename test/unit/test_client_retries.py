"""The client's retry policy against a scripted HTTP server: 429 and 5xx are
retried honouring Retry-After; a POST that may have been processed is not."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s

from okra_runtime.client import Client, RetryPolicy
from okra_runtime.errors import ServerError, TooManyRequestsError


class Script:
    def __init__(self) -> None:
        self.responses: list[web.Response] = []
        self.calls: list[tuple[str, float]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.calls.append((request.method, time.monotonic()))
        if request.path == "/api/v1":
            return web.json_response(
                {
                    "resources": [
                        {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": []}
                    ]
                }
            )
        return self.responses.pop(0)


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[Script, Client]]:
    script = Script()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", script.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    cfg = k8s.Configuration(host=f"http://127.0.0.1:{port}")
    c = Client(
        k8s.ApiClient(configuration=cfg),
        retry=RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05),
    )
    yield script, c
    await c.close()
    await runner.cleanup()


def status(code: int, retry_after: str | None = None) -> web.Response:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return web.json_response(
        {"kind": "Status", "code": code, "message": f"try later {code}"},
        status=code,
        headers=headers,
    )


async def test_429_and_5xx_are_retried_honouring_retry_after(
    scripted: tuple[Script, Client],
) -> None:
    script, c = scripted
    await c.request("GET", "/api/v1")  # discovery out of the way
    script.calls.clear()
    script.responses = [status(429, "1"), status(503), web.json_response({"ok": True})]
    assert await c.request("GET", "/api/v1/namespaces/a/configmaps/x") == {"ok": True}
    (m1, t1), (_, t2), (_, t3) = script.calls
    assert m1 == "GET"
    assert t2 - t1 >= 0.95, "Retry-After: 1 was not honoured"
    assert t3 - t2 < 0.5


async def test_retries_give_up_with_the_typed_error(scripted: tuple[Script, Client]) -> None:
    script, c = scripted
    script.responses = [status(500) for _ in range(4)]
    with pytest.raises(ServerError, match="try later 500"):
        await c.request("GET", "/api/v1/namespaces/a/configmaps/x")
    assert len(script.calls) == 4


async def test_post_is_retried_only_when_the_server_did_not_process_it(
    scripted: tuple[Script, Client],
) -> None:
    script, c = scripted
    script.responses = [status(500)]
    with pytest.raises(ServerError):
        await c.request("POST", "/api/v1/namespaces/a/configmaps", body={})
    assert len(script.calls) == 1
    script.calls.clear()
    script.responses = [status(429), web.json_response({"created": True})]
    assert await c.request("POST", "/api/v1/namespaces/a/configmaps", body={}) == {"created": True}
    assert len(script.calls) == 2
    script.responses = [status(429) for _ in range(4)]
    with pytest.raises(TooManyRequestsError):
        await c.request("POST", "/api/v1/namespaces/a/configmaps", body={})
