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

Printed: both recovery times and the restart/relist counters.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import TG, Env, cell_obj, cell_status
from faultproxy import ApiServerProxy
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.process import free_port
from support import eventually

from .test_kube_faults import BehindProxy

INACTIVITY = 5.0


def counters(port: int) -> dict[tuple[str, str], float]:
    """(metric, reason) -> value summed over kinds, from okra-manager's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = re.match(
            r"(okra_runtime_(?:watch_restarts|informer_relists)_total)\{(.*)\} (\S+)", line
        )
        if not m:
            continue
        reason = re.search(r'reason="([^"]*)"', m.group(2))
        key = (m.group(1), reason.group(1) if reason else "")
        out[key] = out.get(key, 0.0) + float(m.group(3))
    return out


@pytest.mark.timeout(600)
async def test_stalled_watch_410_and_blind_deletion_through_the_manager(
    env: Env, rt_client: Client, namespace: str, control_plane: ControlPlane, tmp_path: Path
) -> None:
    ns, c = namespace, rt_client
    port = free_port()
    async with ApiServerProxy(control_plane.server, control_plane.ca_pem) as api:
        okra = BehindProxy(control_plane, env, tmp_path / "okra.log")
        okra.kubeconfig = api.kubeconfig(tmp_path / "via-proxy.kubeconfig", control_plane.token())
        okra.args = (
            "--watch-inactivity-timeout",
            str(INACTIVITY),
            "--metrics-bind-address",
            f"127.0.0.1:{port}",
        )
        okra.start()
        try:
            await _scenario(env, c, ns, api, port)
        finally:
            okra.stop()


async def _scenario(env: Env, c: Client, ns: str, api: ApiServerProxy, port: int) -> None:
    async def rule_is(want: dict[str, int], within: float = 60) -> None:
        async def ok() -> bool:
            return await env.rule_weights() == want

        assert await eventually(ok, within=within, interval=0.05), await env.rule_weights()

    await env.target_group("web-a-v1", "v1")
    await env.target_group("web-b-v1", "v1")
    steps: list[dict[str, Any]] = [{"setWeight": 20}, {"pause": {}}]
    await c.create(cell_obj(ns, env.alb.listener_arn, steps))
    await rule_is({"web-a-v1": 50, "web-b-v1": 50})

    async def healthy() -> bool:
        return (await cell_status(c, ns)).get("health") == "Healthy"

    assert await eventually(healthy, within=60)
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
    assert await eventually(healthy, within=60)
