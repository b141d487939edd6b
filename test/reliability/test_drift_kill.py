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
import dataclasses
import time
from pathlib import Path

import pytest

from e2e.conftest import CELL, Env, cell_obj, cell_status
from faultproxy import FaultProxy
from okra_runtime import GVK, Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from receiver import Receiver, serve
from support import eventually

from .test_kube_faults import BehindProxy

ALB_CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSApplicationLoadBalancerConfig")


@pytest.mark.timeout(600)
async def test_a_drift_repaired_just_before_a_kill_is_notified_once_after_restart(
    env: Env,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    moto: MotoServer,
    tmp_path: Path,
) -> None:
    ns, c = namespace, rt_client
    receiver = Receiver(down_for=10**9)  # down until the manager was killed
    runner = await serve(receiver)
    armed = asyncio.Event()  # set: kill at the next ModifyRule forwarded
    killed = asyncio.Event()
    try:
        async with FaultProxy(moto.endpoint_url) as fp:
            okra = BehindProxy(
                control_plane, dataclasses.replace(env, proxy=fp), tmp_path / "okra.log"
            )
            okra.kubeconfig = control_plane.kubeconfig()
            okra.args = ("--drift-check-period", "1")

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
            okra.start()
            try:
                await _scenario(env, c, ns, okra, receiver, armed, killed)
            finally:
                okra.stop()
    finally:
        await runner.cleanup()


async def _scenario(
    env: Env,
    c: Client,
    ns: str,
    okra: BehindProxy,
    receiver: Receiver,
    armed: asyncio.Event,
    killed: asyncio.Event,
) -> None:
    async def weights_are(want: dict[str, int]) -> bool:
        async def ok() -> bool:
            return await env.rule_weights() == want

        return await eventually(ok, within=60, interval=0.1)

    async def healthy() -> bool:
        return (await cell_status(c, ns)).get("health") == "Healthy"

    assert await weights_are({"web-a-v1": 50, "web-b-v1": 50})
    assert await eventually(healthy, within=60)

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
    assert await weights_are({"web-a-v1": 50, "web-b-v1": 50})  # the repair reached AWS
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
