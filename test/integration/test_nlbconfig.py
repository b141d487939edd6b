"""AWSNetworkLoadBalancerConfig against a real kube-apiserver and a moto server: the
controller owns the NLB listener's default action (weighted forward), writes nothing when
AWS already matches, reads back what it wrote, and reports bad specs, missing listeners
and ALB listeners without writing.

moto 5.2.5 (the locked version) accepts a weighted `ForwardConfig` in ModifyListener on a
TCP listener of a network load balancer and returns it from DescribeListeners; it does
not validate weights (1000, -1 and all-zero pass), so those limits are okra's own.

AWS calls are counted through `AwsConfig.on_call`; the tests' own seeding and inspection
use an uncounted config.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.api.kinds import NLB_CONFIG
from okra_controllers.aws import elbv2
from okra_controllers.nlbconfig import register, setup
from okra_controllers.settings import Settings
from okra_runtime import Client, InvalidError, Manager, ManagerOptions
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import LoadBalancer, Seeder
from receiver import Receiver, serve
from support import eventually, find_events, stop_manager

REPO = Path(__file__).resolve().parents[2]
WRITES = {"ModifyListener", "CreateRule", "ModifyRule", "DeleteRule", "CreateListener"}


@dataclasses.dataclass
class Env:
    client: Client
    namespace: str
    moto: MotoServer
    ops: list[str]
    nlb: LoadBalancer
    alb: LoadBalancer
    tgs: list[str]
    start: Callable[..., Awaitable[None]]

    def writes(self, mark: int = 0) -> list[str]:
        return [op for op in self.ops[mark:] if op in WRITES]

    async def default_weights(self, listener: str | None = None) -> dict[str, int]:
        got = await elbv2.describe_listener(self.moto.config, listener or self.nlb.listener_arn)
        assert got is not None
        return dict(elbv2.forward_weights(got["DefaultActions"][0]))

    async def status(self, name: str) -> dict[str, Any]:
        return (await self.client.get(NLB_CONFIG, name, self.namespace)).get("status") or {}

    async def synced(self, name: str) -> dict[str, Any]:
        conds = (await self.status(name)).get("conditions") or []
        return next((c for c in conds if c["type"] == "Synced"), {})

    async def wait_synced(self, name: str, generation: int | None = None) -> dict[str, Any]:
        async def done() -> bool:
            st = await self.status(name)
            return (await self.synced(name)).get("status") == "True" and (
                generation is None or st.get("observedGeneration") == generation
            )

        assert await eventually(done, within=30), await self.status(name)
        return await self.status(name)

    async def wait_reason(self, name: str, reason: str) -> dict[str, Any]:
        async def done() -> bool:
            cond = await self.synced(name)
            return cond.get("status") == "False" and cond.get("reason") == reason

        assert await eventually(done, within=30), await self.status(name)
        return await self.synced(name)

    async def events(self, name: str, reason: str) -> list[dict[str, Any]]:
        return await find_events(self.client, self.namespace, reason, name)


def config(env: Env, name: str, weights: list[int], listener: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSNetworkLoadBalancerConfig",
        "metadata": {"name": name, "namespace": env.namespace},
        "spec": {
            "listenerARN": listener or env.nlb.listener_arn,
            "forwardTargetGroups": [
                {"name": f"tg{i}", "arn": arn, "weight": w}
                for i, (arn, w) in enumerate(zip(env.tgs, weights, strict=False))
            ],
        },
    }


@pytest.fixture
async def env(
    rt_client: Client, namespace: str, control_plane: ControlPlane, moto: MotoServer
) -> AsyncIterator[Env]:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    seed = Seeder(moto.config)
    network = await seed.network()
    suffix = uuid.uuid4().hex[:8]
    tgs = [
        await seed.target_group(f"n{i}-{suffix}", network, protocol="TCP", target_type="ip")
        for i in range(6)
    ]
    nlb = await seed.nlb(f"nlb-{suffix}", network, tgs[0])
    alb = await seed.alb(f"alb-{suffix}", network)
    ops: list[str] = []
    counted = dataclasses.replace(moto.config, on_call=lambda op: ops.append(op.split(":")[1]))
    running: list[tuple[Manager, asyncio.Task[None]]] = []

    async def start(resync: float | None = None) -> None:
        mgr = Manager(
            rt_client, ManagerOptions(namespace=namespace, metrics_address=None, probe_address=None)
        )
        if resync is None:
            setup(mgr, Settings(namespace, namespace, counted, concurrency=2))
        else:
            register(mgr, counted, resync=resync)
        running.append((mgr, asyncio.create_task(mgr.start())))

    yield Env(rt_client, namespace, moto, ops, nlb, alb, tgs, start)
    for mgr, task in running:
        await stop_manager(mgr, task)


async def test_sets_weighted_default_action_and_reads_it_back(env: Env) -> None:
    await env.start()
    assert await env.default_weights() == {env.tgs[0]: 1}  # as seeded: plain forward

    await env.client.create(config(env, "web", [70, 30]))

    st = await env.wait_synced("web")
    assert await env.default_weights() == {env.tgs[0]: 70, env.tgs[1]: 30}
    assert st["applied"] == {
        "listenerARN": env.nlb.listener_arn,
        "forwardTargetGroups": [
            {"name": "tg0", "arn": env.tgs[0], "weight": 70},
            {"name": "tg1", "arn": env.tgs[1], "weight": 30},
        ],
    }
    assert st["observedGeneration"] == 1
    assert st["lastAppliedTime"]
    assert env.writes() == ["ModifyListener"]
    assert await eventually(lambda: _has(env.events("web", "ListenerModified")))


async def test_switch_is_one_modify_and_in_sync_writes_nothing(env: Env) -> None:
    await env.start()
    await env.client.create(config(env, "web", [100, 0]))
    await env.wait_synced("web")
    mark = len(env.ops)

    await env.client.patch(
        NLB_CONFIG, "web", {"spec": config(env, "web", [0, 100])["spec"]}, namespace=env.namespace
    )
    st = await env.wait_synced("web", generation=2)
    assert await env.default_weights() == {env.tgs[0]: 0, env.tgs[1]: 100}
    assert [t["weight"] for t in st["applied"]["forwardTargetGroups"]] == [0, 100]
    assert env.writes(mark) == ["ModifyListener"]

    # Same forward, other order: read, no write.
    mark = len(env.ops)
    reordered = list(reversed(config(env, "web", [0, 100])["spec"]["forwardTargetGroups"]))
    await env.client.patch(
        NLB_CONFIG, "web", {"spec": {"forwardTargetGroups": reordered}}, namespace=env.namespace
    )
    await env.wait_synced("web", generation=3)
    assert env.ops[mark:], "the spec change was not reconciled"
    assert set(env.ops[mark:]) == {"DescribeListeners"}


async def test_idle_resync_reads_once_and_writes_nothing(env: Env) -> None:
    await env.start(resync=0.2)
    await env.client.create(config(env, "web", [50, 50]))
    await env.wait_synced("web")
    before = await env.client.get(NLB_CONFIG, "web", env.namespace)
    mark = len(env.ops)

    assert await eventually(lambda: _at_least(env.ops, mark, 3), within=10)
    assert set(env.ops[mark:]) == {"DescribeListeners"}
    after = await env.client.get(NLB_CONFIG, "web", env.namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_change_made_outside_okra_is_put_back(env: Env) -> None:
    """Restored, with a DriftRepaired Event saying what was found and an
    `on-drift-repaired` notification to the subscriptions of the Cell that owns it."""
    r = Receiver()
    runner = await serve(r)
    try:
        await env.client.create(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "okra-notifications", "namespace": env.namespace},
                "data": {"service.webhook.ops": f"url: {r.url}/hook\n"},
            }
        )
        cell = await env.client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Cell",
                "metadata": {
                    "name": "web",
                    "namespace": env.namespace,
                    "annotations": {"notifications.okra.mumo.co/subscribe.all.ops": ""},
                },
                "spec": {
                    "ingress": {
                        "type": "AWSNetworkLoadBalancer",
                        "awsNetworkLoadBalancer": {
                            "listenerARN": env.nlb.listener_arn,
                            "targetGroupSelector": {"matchLabels": {"role": "web"}},
                        },
                    },
                },
            }
        )
        owned = config(env, "web", [60, 40])
        owned["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "Cell",
                "name": "web",
                "uid": cell["metadata"]["uid"],
                "controller": True,
            }
        ]
        await env.start(resync=0.2)
        await env.client.create(owned)
        await env.wait_synced("web")
        assert not await env.events("web", "DriftRepaired")  # the first write is no drift

        async with env.moto.config.client("elbv2") as elb:
            await elb.modify_listener(
                ListenerArn=env.nlb.listener_arn,
                DefaultActions=[{"Type": "forward", "TargetGroupArn": env.tgs[2]}],
            )

        async def restored() -> bool:
            return await env.default_weights() == {env.tgs[0]: 60, env.tgs[1]: 40}

        assert await eventually(restored, within=15)
        name = [t.split(":targetgroup/")[1].split("/")[0] for t in env.tgs[:3]]
        found = f"forwarding {name[2]}=1 instead of {name[0]}=60, {name[1]}=40"

        async def reported() -> bool:
            return any(found in e.get("note", "") for e in await env.events("web", "DriftRepaired"))

        assert await eventually(reported, within=15), await env.events("web", "DriftRepaired")

        async def notified() -> bool:
            return bool(r.bodies())

        assert await eventually(notified, within=15)
        [n] = r.bodies()
        assert (n["trigger"], n["cell"], n["config"]) == ("on-drift-repaired", "web", "web")
        assert found in n["message"]
    finally:
        await runner.cleanup()


async def test_limits_are_reported_without_writing(env: Env) -> None:
    await env.start()
    with pytest.raises(InvalidError, match="forwardTargetGroups"):  # the schema: at most 5
        await env.client.create(config(env, "six", [1, 1, 1, 1, 1, 1]))
    await env.client.create(config(env, "web", [0, 0]))

    cond = await env.wait_reason("web", "InvalidSpec")
    assert "every weight is 0" in cond["message"]
    assert env.writes() == []
    assert await env.default_weights() == {env.tgs[0]: 1}


async def test_an_alb_listener_is_refused(env: Env) -> None:
    await env.start()
    await env.client.create(config(env, "web", [100], listener=env.alb.listener_arn))

    cond = await env.wait_reason("web", "NotNetworkListener")
    assert "speaks HTTP" in cond["message"]
    assert "AWSApplicationLoadBalancerConfig" in cond["message"]
    assert env.writes() == []
    assert await eventually(lambda: _has(env.events("web", "NotNetworkListener")))


async def test_a_missing_listener_is_reported(env: Env) -> None:
    await env.start()
    missing = env.nlb.listener_arn.rsplit("/", 1)[0] + "/0000000000000000"
    await env.client.create(config(env, "web", [100], listener=missing))

    cond = await env.wait_reason("web", "ListenerNotFound")
    assert "fix spec.listenerARN" in cond["message"]
    assert env.writes() == []


async def _has(events: Awaitable[list[dict[str, Any]]]) -> bool:
    return bool(await events)


async def _at_least(ops: list[str], mark: int, n: int) -> bool:
    return len(ops) - mark >= n
