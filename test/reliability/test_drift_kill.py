"""A repaired drift is notified even when okra-manager dies right after repairing it.

A Cell serving v1 subscribes to `on-drift-repaired`; its listener rule is changed by hand
in AWS. okra-manager (drift check every second, AWS through the fault proxy) repairs it
and is SIGKILLed the moment its repairing ModifyRule is forwarded to AWS: the rule is
restored, the manager gone. The receiver refuses everything until then. The restarted
manager finds the rule in sync (no drift left to see), yet delivers the notification,
once: it was recorded in the Cell's outbox before the repair was written.

Printed: the deliveries and the time from the restart to the notification.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from e2e.conftest import CELL, Env, OkraManager, cell_obj, wait_status
from okra_runtime import Client
from receiver import Receiver, serve
from support import eventually

from .harness import ALB_CONFIG, World


@pytest.mark.timeout(600)
async def test_a_drift_repaired_just_before_a_kill_is_notified_once_after_restart(
    world: World,
) -> None:
    env, c, ns = world.env, world.client, world.ns
    receiver = Receiver(down_for=10**9)  # down until the manager was killed
    runner = await serve(receiver)
    armed = asyncio.Event()  # set: kill at the next ModifyRule forwarded
    killed = asyncio.Event()
    try:
        async with world.aws_proxy() as fp:
            okra = world.manager(aws=fp, args=["--drift-check-period", "1"])

            def on_forward(op: str) -> None:
                if armed.is_set() and op == "ModifyRule":
                    armed.clear()
                    okra.kill()  # the repair is on its way to AWS; its sender is gone
                    killed.set()

            fp.on_forward = on_forward
            await c.create(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "okra-notifications", "namespace": ns},
                    "data": {"service.webhook.ops": f"url: {receiver.url}/hook\n"},
                }
            )
            await env.target_group("web-a-v1", "v1")
            await env.target_group("web-b-v1", "v1")
            cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 20}])
            cell["metadata"]["annotations"] = {
                "notifications.okra.mumo.co/subscribe.on-drift-repaired.ops": "#ops"
            }
            await c.create(cell)
            with okra:
                await _scenario(env, c, ns, okra, receiver, armed, killed)
    finally:
        await runner.cleanup()


async def _scenario(
    env: Env,
    c: Client,
    ns: str,
    okra: OkraManager,
    receiver: Receiver,
    armed: asyncio.Event,
    killed: asyncio.Event,
) -> None:
    assert await env.rule_becomes({"web-a-v1": 50, "web-b-v1": 50}, interval=0.1)
    await wait_status(c, ns, lambda s: s.get("health") == "Healthy", within=60)

    async def config_synced() -> bool:  # what okra compares AWS with, to call it a drift
        cfg = await c.get(ALB_CONFIG, "web", ns)
        st = cfg.get("status") or {}
        return st.get("observedGeneration") == cfg["metadata"]["generation"] and any(
            x["type"] == "Synced" and x["status"] == "True" for x in st.get("conditions") or []
        )

    assert await eventually(config_synced, within=60)

    armed.set()
    async with env.aws.config.client("elbv2") as elb:  # by hand, straight to AWS
        rules = (await elb.describe_rules(ListenerArn=env.alb.listener_arn))["Rules"]
        [rule] = [r for r in rules if not r.get("IsDefault")]
        hand = [
            {"TargetGroupArn": env.tg_arns["web-a-v1"], "Weight": 10},
            {"TargetGroupArn": env.tg_arns["web-b-v1"], "Weight": 90},
        ]
        await elb.modify_rule(
            RuleArn=rule["RuleArn"],
            Actions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": hand}}],
        )
    async with asyncio.timeout(60):
        await killed.wait()
    assert await env.rule_becomes({"web-a-v1": 50, "web-b-v1": 50}, interval=0.1)  # repaired
    pending = (await c.get(CELL, "web", ns)).get("status", {}).get("notifications") or []
    assert receiver.bodies() == []

    receiver.down_for = 0
    okra.start()
    restarted = time.monotonic()

    async def notified() -> bool:
        return bool(receiver.bodies())

    assert await eventually(notified, within=60)
    took = time.monotonic() - restarted

    async def outbox_empty() -> bool:
        return not (await c.get(CELL, "web", ns)).get("status", {}).get("notifications")

    assert await eventually(outbox_empty, within=30)
    await asyncio.sleep(2.0)  # a second delivery would come now
    bodies = receiver.bodies()
    print(
        f"\nkilled as the repairing ModifyRule went out; outbox then: "
        f"{[p['trigger'] for p in pending]}; after restart delivered in {took:.2f}s: "
        f"{[(b['trigger'], b['message']) for b in bodies]}"
    )
    assert [p["trigger"] for p in pending] == ["on-drift-repaired"]
    [n] = bodies
    assert n["trigger"] == "on-drift-repaired"
    assert n["recipient"] == "#ops"
    assert "changed outside okra (weights" in n["message"]
    assert n["id"] == pending[0]["key"]
