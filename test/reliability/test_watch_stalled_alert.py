"""OkraWatchStalled from a real stall, in the real Prometheus, and never from a quiet kind.

okra-manager reaches kube-apiserver through `ApiServerProxy` (test/faultproxy.py) with
`--watch-inactivity-timeout 6`; Prometheus scrapes it every second and evaluates the
kit's rules from config/prometheus/ (`for:` dropped, as in test/e2e/test_monitoring.py).
A Cell serves v1 from two target groups.

1. Quiet: for three inactivity timeouts nothing changes on most kinds. Every watch asks the
   API server to close it after 3-4 s (below the 6 s inactivity timeout), so the server
   closes them normally (`closed` restarts grow) and none is taken for stalled: the
   `stalled` and `error` counters stay flat and OkraWatchStalled stays inactive.
2. Stall: every watch stops delivering (connections open, not even the server's close gets
   through); a third v1 target group is created meanwhile. Each kind's watch is declared
   stalled every ~6 s and reopened into the same stall: OkraWatchStalled fires.
3. Traffic through again: the manager reopens its watches and adds the new target group to
   the listener rule; after that the `stalled` counter is flat again.

Printed: the counters over each phase, the time to the alert, the time to catch up.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import pytest

from e2e.conftest import Env, wait_status
from e2e.test_monitoring import alert_exprs, firing, has_data, prometheus_scraping, query
from faultproxy import ApiServerProxy
from okra_runtime import Client
from okra_testkit.envtest.process import free_port
from support import eventually

from .harness import World, counters, serving_v1

INACTIVITY = 6.0
QUIET = 3 * INACTIVITY
RESTARTS = "okra_runtime_watch_restarts_total"


async def active_alerts(prom: str) -> dict[str, str]:
    """alertname -> state (pending or firing) of every active alert."""
    async with aiohttp.ClientSession() as s, s.get(f"{prom}/api/v1/alerts") as r:
        doc = await r.json()
    return {a["labels"]["alertname"]: a["state"] for a in doc["data"]["alerts"]}


def grew(a: dict[tuple[str, str], float], b: dict[tuple[str, str], float], reason: str) -> float:
    return b.get((RESTARTS, reason), 0.0) - a.get((RESTARTS, reason), 0.0)


@pytest.mark.timeout(600)
async def test_watch_stalled_alert_fires_on_a_real_stall_and_never_on_a_quiet_kind(
    world: World,
) -> None:
    port = free_port()
    args = ["--watch-inactivity-timeout", str(INACTIVITY)]
    args += ["--metrics-bind-address", f"127.0.0.1:{port}"]
    async with world.api_proxy() as api:
        with (
            world.manager(api=api, args=args),
            prometheus_scraping(world.tmp, port, interval="1s") as prom,
        ):
            await _scenario(world.env, world.client, world.ns, api, port, prom)


async def _scenario(
    env: Env, c: Client, ns: str, api: ApiServerProxy, port: int, prom: str
) -> None:
    expr = alert_exprs()["OkraWatchStalled"]

    await serving_v1(env, c, ns)
    # Prometheus has the restart series (from 0) before anything happens.
    assert await has_data(prom, f'{RESTARTS}{{reason="stalled"}} == 0', within=30)

    # 1. Quiet: a deliberate wait of three inactivity timeouts, watching what does not happen.
    before = await asyncio.to_thread(counters, port)
    quiet_alerts: set[str] = set()
    quiet_series: list[dict[str, Any]] = []
    end = time.monotonic() + QUIET
    while time.monotonic() < end:
        quiet_alerts |= set(await active_alerts(prom))
        quiet_series += await query(prom, expr)
        await asyncio.sleep(1.0)
    after_quiet = await asyncio.to_thread(counters, port)
    closed = grew(before, after_quiet, "closed")
    print(
        f"\nquiet {QUIET:.0f} s (inactivity timeout {INACTIVITY:.0f} s): {closed:.0f} watches "
        f"closed by the server, {grew(before, after_quiet, 'stalled'):.0f} stalled, "
        f"{grew(before, after_quiet, 'error'):.0f} errors; active alerts: "
        f"{sorted(quiet_alerts) or 'none'}"
    )
    assert grew(before, after_quiet, "stalled") == 0
    assert grew(before, after_quiet, "error") == 0
    assert closed >= 4  # the server rotated the quiet watches (every 3-4 s per kind)
    assert "OkraWatchStalled" not in quiet_alerts
    assert quiet_series == []

    # 2. Every watch stalls; a target group is created meanwhile.
    api.stall_watches()
    stalled_at = time.monotonic()
    await env.target_group("web-c-v1", "v1")
    assert await firing(prom, "OkraWatchStalled", within=180)
    to_alert = time.monotonic() - stalled_at
    first = sorted({r["metric"]["kind"] for r in await query(prom, expr)})

    async def target_groups_alerting() -> bool:  # every kind stalls, this one among them
        return "AWSTargetGroup" in {r["metric"]["kind"] for r in await query(prom, expr)}

    assert await eventually(target_groups_alerting, within=60)
    kinds = sorted({r["metric"]["kind"] for r in await query(prom, expr)})
    during = await asyncio.to_thread(counters, port)
    assert "web-c-v1" not in await env.rule_weights()  # blind all along
    print(
        f"stalled: OkraWatchStalled firing {to_alert:.1f}s after every watch stalled (first "
        f"for {first}), then for {len(kinds)} kinds ({', '.join(kinds)}); "
        f"{grew(after_quiet, during, 'stalled'):.0f} stalled watches reopened"
    )

    # 3. Traffic through again: the manager catches up by itself.
    api.resume_watches()
    resumed = time.monotonic()
    want = {"web-a-v1": 33, "web-b-v1": 33, "web-c-v1": 34}
    assert await env.rule_becomes(want, within=INACTIVITY * 6), await env.rule_weights()
    caught_up = time.monotonic() - resumed
    await asyncio.sleep(INACTIVITY * 1.5)  # let the last stalled watches be noticed
    settled = await asyncio.to_thread(counters, port)
    await asyncio.sleep(2 * INACTIVITY)  # and then watch nothing more stall
    final = await asyncio.to_thread(counters, port)
    print(
        f"resumed: the target group created during the stall reached the rule {caught_up:.2f}s "
        f"after watches were let through; then {grew(settled, final, 'stalled'):.0f} stalled "
        f"over {2 * INACTIVITY:.0f} s"
    )
    assert caught_up < INACTIVITY * 4
    assert grew(settled, final, "stalled") == 0
    await wait_status(c, ns, lambda s: s.get("health") == "Healthy", within=60)
