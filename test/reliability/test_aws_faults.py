"""A canary through 30 % AWS faults.

Every ELBv2 call okra-manager makes goes through the fault proxy, which answers 30 % of
them with a fault (500, 503, Throttling, a reset before forwarding, a reset after
forwarding, added latency) drawn from a seeded RNG (`OKRA_FAULT_SEED` replays a run).
The Cell walks a timed pause, an inline analysis and a background analysis to v2, then
v3 fails its analysis and rolls back. Meanwhile a sampler reads okra's rule from moto
(not through the proxy) every 100 ms.

Holds: both rollouts end as without faults; every sampled rule totals 100; the canary
share never goes backward, except to 0 on the rollback; every error-level line the
manager logs is about an injected fault. Printed: the fault counts, the samples, the
time taken.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from e2e.conftest import (
    BLOCKLIST,
    PAUSE,
    RUN,
    VERSION_ARG,
    Metrics,
    cell_obj,
    error_rate_template,
    wait_status,
)

from .harness import Sampler, World

ANALYSIS = {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}}
SEED = int(os.environ.get("OKRA_FAULT_SEED", "1616"))
RATE = 0.3
INJECTED = (
    "Throttling",
    "Rate exceeded",
    "InternalFailure",
    "ServiceUnavailable",
    "injected",
    "Connection",
    "ServerDisconnected",
    "reset",
    "EndpointConnectionError",
)
"""What okra says about the faults the proxy injects (botocore's and aiohttp's words)."""
SLOW = {"within": 240, "interval": 0.25}  # a canary through 30 % faults takes its time


async def test_a_canary_and_a_rollback_through_30_percent_aws_faults(
    world: World, metrics: Metrics
) -> None:
    env, rt_client, ns = world.env, world.client, world.ns
    started = time.monotonic()
    async with world.aws_proxy(seed=SEED, rate=RATE) as fp, Sampler(env) as sampler:
        okra = world.manager("okra-manager", aws=fp)
        with okra:
            await rt_client.create(error_rate_template(ns, metrics.url))
            for name, v in (("web-a-v1", "v1"), ("web-b-v1", "v1")):
                await sampler.target_group(name, v)
            steps: list[dict[str, Any]] = [
                {"setWeight": 20},
                {"pause": {"duration": "2s"}},
                ANALYSIS,
                {"stepWeight": 40},
                {"pause": {"duration": "1s"}},
            ]
            bg = {
                "templates": [{"templateName": "error-rate"}],
                "args": VERSION_ARG,
                "startingStep": 1,
            }
            await rt_client.create(cell_obj(ns, env.alb.listener_arn, steps, background=bg))
            await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy", **SLOW)
            for name, v in (("web-a-v2", "v2"), ("web-b-v2", "v2")):
                await sampler.target_group(name, v)
            st = await wait_status(
                rt_client,
                ns,
                lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2",
                **SLOW,
            )
            v2_done = time.monotonic()
            assert await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}
            metrics.rates["v3"] = 0.5
            await sampler.target_group("web-a-v3", "v3")
            st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded", **SLOW)
            assert "version v3 failed" in st["message"]
            assert await env.rule_becomes({"web-a-v2": 50, "web-b-v2": 50}, interval=0.1)
            done = time.monotonic()
            await asyncio.sleep(0.3)  # a few more samples of the end state
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v3"]
    runs = (await rt_client.list(RUN, ns)).items
    pauses = (await rt_client.list(PAUSE, ns)).items
    v2_shares, v3_shares = sampler.shares("v2"), sampler.shares("v3")
    errors = okra.error_lines()
    not_injected = [e for e in errors if not any(w in json.dumps(e) for w in INJECTED)]
    counts = fp.counts()
    writes = fp.counts({"ModifyRule", "CreateRule"})
    print(
        f"\nAWS faults at {RATE:.0%} (seed {SEED}): {len(fp.log)} ELBv2 calls, "
        f"{sum(n for f, n in counts.items() if f)} faulted: "
        + ", ".join(f"{f}={n}" for f, n in sorted(counts.items()) if f)
        + f"; ModifyRule/CreateRule {sum(writes.values())} calls, "
        f"{sum(n for f, n in writes.items() if f)} faulted"
        f"\nv1->v2 canary done in {v2_done - started:.1f}s, v3 rolled back "
        f"{done - v2_done:.1f}s later; {len(sampler.samples)} samples of the rule, totals "
        f"{sorted(sampler.totals)}; v2 share {v2_shares}; v3 share {v3_shares}"
        f"\n{len(runs)} AnalysisRuns, {len(pauses)} Pauses; error-level log lines: "
        f"{len(errors)}, not about an injected fault: {len(not_injected)}"
    )
    assert sum(n for f, n in counts.items() if f) > 0  # faults were injected
    assert sampler.totals == {100}
    # v2's share only grows until it holds everything; v3's goes up then back to 0.
    rise = v2_shares[: v2_shares.index(100) + 1]
    assert rise == sorted(rise)
    assert v3_shares[0] == 0
    assert v3_shares[-1] == 0
    assert v3_shares[1:-1] == sorted(v3_shares[1:-1])
    assert not_injected == [], not_injected[:5]
