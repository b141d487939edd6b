"""Watch faults through okra-manager: a stalled watch, a `410 Gone` on resume, and an
object deleted while okra was blind.

okra-manager reaches kube-apiserver through `ApiServerProxy` (test/faultproxy.py) and runs
with `--watch-inactivity-timeout 5`. A Cell serves v1 from two target groups.

1. Stall: every watch stream stops delivering (connections kept open, as behind a dead
   NAT entry); a third v1 target group is created meanwhile; new watches are let through
   again, the stalled ones stay dead. The manager notices the silence by itself, reopens
   its watches and adds the new target group to the rule (a scale-out of the serving
   version): bounded by the inactivity timeout, counted as `stalled` restarts in
   `okra_runtime_watch_restarts_total`.
2. Blind deletion + 410: watches stalled again, one target group deleted, and the next
   resumed watch of AWSTargetGroups ended with `410 Gone` (the event kube-apiserver sends
   for an expired resourceVersion). The manager relists, sees the deletion it never got an
   event for, and drops the target group from the rule.
3. The Cell deleted while blind: watches stalled, the Cell deleted; the garbage collector
   deletes its AWSApplicationLoadBalancerConfig, which okra's finalizer holds, and no event
   of either reaches the manager (okra's rule is still on the listener); the resumed
   watches of Cells and configs end with `410 Gone`. After the relist the config's
   finalizer runs: okra's rule is deleted, the listener and its default action are left
   as they were (what a deleted Cell leaves), and the config is gone.

Printed: the recovery times and the restart/relist counters.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from e2e.conftest import CELL, TG, Env, wait_status
from faultproxy import ApiServerProxy
from okra_runtime import Client
from okra_runtime.errors import NotFoundError
from okra_testkit.envtest.process import free_port
from support import eventually

from .harness import ALB_CONFIG, World, counters, serving_v1

INACTIVITY = 5.0


@pytest.mark.timeout(600)
async def test_stalled_watch_410_and_blind_deletion_through_the_manager(world: World) -> None:
    port = free_port()
    args = ["--watch-inactivity-timeout", str(INACTIVITY)]
    args += ["--metrics-bind-address", f"127.0.0.1:{port}"]
    async with world.api_proxy() as api:
        with world.manager(api=api, args=args):
            await _scenario(world.env, world.client, world.ns, api, port)


async def _scenario(env: Env, c: Client, ns: str, api: ApiServerProxy, port: int) -> None:
    async def rule_is(want: dict[str, int], within: float = 60) -> None:
        assert await env.rule_becomes(want, within=within), await env.rule_weights()

    await serving_v1(env, c, ns)
    start = await asyncio.to_thread(counters, port)

    # 1. A stall: nothing arrives, nothing is refused.
    api.stall_watches()
    await env.target_group("web-c-v1", "v1")
    await asyncio.sleep(1.0)
    assert "web-c-v1" not in await env.rule_weights()  # blind indeed
    api.resume_watches()
    resumed = time.monotonic()
    await rule_is({"web-a-v1": 33, "web-b-v1": 33, "web-c-v1": 34}, within=INACTIVITY * 6)
    stall_recovery = time.monotonic() - resumed
    after_stall = await asyncio.to_thread(counters, port)

    # 2. Deleted while blind, and the resumed watch is told its resourceVersion expired.
    api.stall_watches()
    await c.delete(TG, "web-b-v1", ns)
    await asyncio.sleep(1.0)
    api.expire_watches({"awstargetgroups"})
    api.resume_watches()
    resumed = time.monotonic()
    await rule_is({"web-a-v1": 50, "web-c-v1": 50}, within=INACTIVITY * 6)
    gone_recovery = time.monotonic() - resumed
    end = await asyncio.to_thread(counters, port)

    def grew(a: dict[tuple[str, str], float], b: dict[tuple[str, str], float], key: Any) -> float:
        return b.get(key, 0.0) - a.get(key, 0.0)

    restarts, relists = "okra_runtime_watch_restarts_total", "okra_runtime_informer_relists_total"
    stalled = grew(start, after_stall, (restarts, "stalled"))
    expired = grew(after_stall, end, (restarts, "expired"))
    relisted = grew(after_stall, end, (relists, ""))
    print(
        f"\nstalled watches (inactivity timeout {INACTIVITY:.0f} s): a target group created "
        f"meanwhile reached the rule {stall_recovery:.2f}s after watches were let through "
        f"({stalled:.0f} stalled watches reopened); a target group deleted while blind, the "
        f"resumed watch answered 410 Gone: relisted ({expired:.0f} expired, {relisted:.0f} "
        f"relists) and dropped from the rule {gone_recovery:.2f}s after"
    )
    assert stalled >= 1
    assert expired >= 1
    assert relisted >= 1
    # Noticed by the manager itself: within the inactivity timeout (plus a reconcile and a
    # retry); the server's own close of the watch (after 3-4 s) never gets through a
    # stalled connection.
    assert stall_recovery < INACTIVITY * 4
    assert gone_recovery < INACTIVITY * 4
    await wait_status(c, ns, lambda s: s.get("health") == "Healthy", within=60)
    await _cell_deleted_while_blind(env, c, ns, api, port)


async def _listener(env: Env) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The listener's default actions and its rules other than the default one."""
    async with env.aws.config.client("elbv2") as elb:
        listener = (await elb.describe_listeners(ListenerArns=[env.alb.listener_arn]))["Listeners"][
            0
        ]
        rules = (await elb.describe_rules(ListenerArn=env.alb.listener_arn))["Rules"]
    return listener["DefaultActions"], [r for r in rules if not r.get("IsDefault")]


async def _cell_deleted_while_blind(
    env: Env, c: Client, ns: str, api: ApiServerProxy, port: int
) -> None:
    default_before, rules_before = await _listener(env)
    assert len(rules_before) == 1, rules_before  # okra's rule
    before = await asyncio.to_thread(counters, port)
    api.stall_watches()
    await c.delete(CELL, "web", ns)

    async def config_deleting() -> bool:
        try:
            config = await c.get(ALB_CONFIG, "web", ns)
        except NotFoundError:
            return True
        return bool(config["metadata"].get("deletionTimestamp"))

    # The garbage collector (not behind the proxy) deletes the owned config; okra's
    # finalizer holds it, and okra, blind, has not seen it.
    assert await eventually(config_deleting, within=30)
    await asyncio.sleep(1.0)
    assert len((await _listener(env))[1]) == 1, "the rule went while okra was blind?"
    api.expire_watches({"cells", "awsapplicationloadbalancerconfigs"})
    api.resume_watches()
    resumed = time.monotonic()

    async def rule_gone() -> bool:
        return not (await _listener(env))[1]

    assert await eventually(rule_gone, within=INACTIVITY * 6, interval=0.05)
    cleanup = time.monotonic() - resumed

    async def config_gone() -> bool:
        try:
            await c.get(ALB_CONFIG, "web", ns)
        except NotFoundError:
            return True
        return False

    assert await eventually(config_gone, within=30)
    default_after, _ = await _listener(env)
    end = await asyncio.to_thread(counters, port)
    expired = end.get(("okra_runtime_watch_restarts_total", "expired"), 0.0) - before.get(
        ("okra_runtime_watch_restarts_total", "expired"), 0.0
    )
    print(
        f"a Cell deleted while blind, the resumed watches answered 410 Gone ({expired:.0f} "
        f"expired): its config's finalizer deleted okra's rule {cleanup:.2f}s after watches "
        f"were let through; the listener's default action unchanged, the config gone"
    )
    assert default_after == default_before
    assert expired >= 1
    assert cleanup < INACTIVITY * 4
