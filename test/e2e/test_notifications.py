"""Notifications end to end: the real manager, a canary whose analysis fails, a local
HTTP receiver that is down (503) for the first deliveries. Every trigger of the rollout
reaches it, in order, each once; the Slack-format service gets its own body. And at
least once across a restart: recorded in the Cell's status while nothing listens, the
manager killed, the receiver started, the restarted manager delivers them all."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from okra_runtime import Client
from receiver import Receiver, free_port, serve
from support import eventually

from .conftest import (
    VERSION_ARG,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    cell_status,
    error_rate_template,
)

STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "1s"}},
    {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}},
    {"setWeight": 60},
]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver(down_for=2)
    runner = await serve(r)
    yield r
    await runner.cleanup()


async def test_every_trigger_of_a_failed_canary_is_delivered(
    env: Env,
    okra: OkraManager,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    receiver: Receiver,
) -> None:
    ns = namespace
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "okra-notifications", "namespace": ns},
            "data": {
                "hook-url": base64.b64encode(f"{receiver.url}/hook".encode()).decode(),
                "token": base64.b64encode(b"Bearer s3cret").decode(),
            },
        }
    )
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "okra-notifications", "namespace": ns},
            "data": {
                "service.webhook.ci": "url: $hook-url\n"
                "headers:\n- {name: Authorization, value: $token}\n",
                "service.slack.team": f"url: {receiver.url}/slack\n",
            },
        }
    )
    metrics.rates["v2"] = 0.5  # the analysis fails
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    cell = cell_obj(ns, env.alb.listener_arn, STEPS)
    cell["metadata"]["annotations"] = {
        "notifications.okra.mumo.co/subscribe.all.ci": "",
        "notifications.okra.mumo.co/subscribe.on-rollout-failed.team": "#deploys",
    }
    await rt_client.create(cell)

    async def healthy() -> bool:
        return (await cell_status(rt_client, ns)).get("health") == "Healthy"

    assert await eventually(healthy, within=60)
    await env.target_group("web-a-v2", "v2")

    def hooks() -> list[dict[str, Any]]:
        return [b for p, _, b in receiver.received if p == "/hook"]

    async def failed_delivered() -> bool:
        return any(b["trigger"] == "on-rollout-failed" for b in hooks())

    assert await eventually(failed_delivered, within=120), receiver.received
    assert receiver.refused == 2  # the first two deliveries were retried
    triggers = [b["trigger"] for b in hooks()]
    assert triggers == [
        "on-rollout-started",
        "on-rollout-step-completed",
        "on-rollout-paused",
        "on-rollout-step-completed",
        "on-rollout-failed",
    ], triggers
    assert [b["step"] for b in hooks() if b["trigger"] == "on-rollout-step-completed"] == [1, 2]
    failed = hooks()[-1]
    assert (failed["cell"], failed["namespace"], failed["canaryVersion"]) == ("web", ns, None)
    assert failed["stableVersion"] == "v1"
    assert "failed" in failed["message"]
    headers = next(h for p, h, _ in receiver.received if p == "/hook")
    assert headers["Authorization"] == "Bearer s3cret"

    async def slack_delivered() -> bool:
        return any(p == "/slack" for p, _, _ in receiver.received)

    assert await eventually(slack_delivered, within=60)
    slack = [b for p, _, b in receiver.received if p == "/slack"]
    assert len(slack) == 1
    assert slack[0]["channel"] == "#deploys"
    assert slack[0]["text"].startswith(f"[okra] {ns}/web: on-rollout-failed: version v2 failed")
    await asyncio.sleep(1)  # nothing more arrives
    assert len([b for b in hooks() if b["trigger"] == "on-rollout-failed"]) == 1
    assert not any("s3cret" in json.dumps(b) for _, _, b in receiver.received)  # headers only


async def test_pending_notifications_survive_a_manager_restart(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    port = free_port()  # nothing listens there until the manager has been killed
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "okra-notifications", "namespace": ns},
            "data": {"service.webhook.ci": f"url: http://127.0.0.1:{port}/hook\n"},
        }
    )
    await env.target_group("web-a-v1", "v1")
    cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 20}, {"pause": {}}])
    cell["metadata"]["annotations"] = {"notifications.okra.mumo.co/subscribe.all.ci": ""}
    await rt_client.create(cell)

    async def healthy() -> bool:
        return (await cell_status(rt_client, ns)).get("health") == "Healthy"

    assert await eventually(healthy, within=60)
    await env.target_group("web-a-v2", "v2")

    async def pending() -> list[dict[str, Any]]:
        return list((await cell_status(rt_client, ns)).get("notifications") or [])

    async def paused_recorded() -> bool:
        return [n["trigger"] for n in await pending()] == [
            "on-rollout-started",
            "on-rollout-step-completed",
            "on-rollout-paused",
        ]

    assert await eventually(paused_recorded, within=60), await pending()
    recorded = await pending()

    async def retried() -> bool:  # the manager has tried (and failed) to deliver
        return "notification not delivered; retrying" in okra.log.read_text()

    assert await eventually(retried, within=30)
    okra.kill()
    r = Receiver(down_for=0)
    runner = await serve(r, port)
    try:
        okra.start()

        async def all_delivered() -> bool:
            return len(r.received) >= 3 and not await pending()

        assert await eventually(all_delivered, within=60), (r.received, await pending())
        bodies = [b for _, _, b in r.received]
        assert [b["trigger"] for b in bodies] == [n["trigger"] for n in recorded]
        assert [b["id"] for b in bodies] == [n["key"] for n in recorded]
        assert [h["Idempotency-Key"] for _, h, _ in r.received] == [n["key"] for n in recorded]
        assert bodies[2]["canaryWeight"] == 20
        assert (await cell_status(rt_client, ns))["health"] == "Paused"  # nothing else moved
    finally:
        await runner.cleanup()
