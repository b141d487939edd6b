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
import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any

from e2e.conftest import (
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    cell_status,
    error_rate_template,
)
from faultproxy import FaultProxy
from okra_runtime import GVK, Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from support import eventually

BLOCKLIST = GVK("okra.mumo.co", "v1alpha1", "VersionBlocklist")
RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")
PAUSE = GVK("okra.mumo.co", "v1alpha1", "Pause")
VERSION_ARG = [
    {"name": "version", "valueFrom": {"fieldRef": {"fieldPath": "status.canaryVersion"}}}
]
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


class Sampler:
    """okra's rule read from moto every 100 ms: (version -> weight) per sample."""

    def __init__(self, env: Env, version_of: dict[str, str]) -> None:
        self.env, self.version_of = env, version_of
        self.samples: list[dict[str, int]] = []
        self.totals: set[int] = set()

    async def run(self) -> None:
        async with self.env.aws.config.client("elbv2") as elb:
            while True:
                rules = (await elb.describe_rules(ListenerArn=self.env.alb.listener_arn))["Rules"]
                self._sample(rules)
                await asyncio.sleep(0.1)

    def _sample(self, rules: list[dict[str, Any]]) -> None:
        for r in rules:
            fwd = next((a for a in r["Actions"] if a["Type"] == "forward"), None)
            if r.get("IsDefault") or fwd is None:
                continue
            by_version: dict[str, int] = {}
            total = 0
            for t in fwd["ForwardConfig"]["TargetGroups"]:
                total += t["Weight"]
                v = self.version_of.get(t["TargetGroupArn"], "?")
                by_version[v] = by_version.get(v, 0) + t["Weight"]
            self.totals.add(total)
            self.samples.append(by_version)

    def shares(self, version: str) -> list[int]:
        """The version's weight in each sample, repeats dropped."""
        out: list[int] = []
        for s in self.samples:
            w = s.get(version, 0)
            if not out or out[-1] != w:
                out.append(w)
        return out


async def wait_status(c: Client, ns: str, pred: Any, within: float = 240) -> dict[str, Any]:
    async def ok() -> bool:
        return bool(pred(await cell_status(c, ns)))

    assert await eventually(ok, within=within, interval=0.25), await cell_status(c, ns)
    return await cell_status(c, ns)


def error_lines(log: Path) -> list[dict[str, Any]]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            if "Traceback" in line or "ERROR" in line:
                out.append({"event": line})
            continue
        if isinstance(rec, dict) and rec.get("level") in ("error", "critical"):
            out.append(rec)
    return out


async def test_a_canary_and_a_rollback_through_30_percent_aws_faults(
    env: Env,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    moto: MotoServer,
    tmp_path: Path,
) -> None:
    ns = namespace
    started = time.monotonic()
    async with FaultProxy(moto.endpoint_url, seed=SEED, rate=RATE) as fp:
        faulty = dataclasses.replace(env, proxy=fp)
        okra = OkraManager(control_plane, faulty, tmp_path / "okra-manager.log")
        version_of: dict[str, str] = {}
        sampler = Sampler(env, version_of)
        sampling = asyncio.create_task(sampler.run())
        okra.start()
        try:
            await rt_client.create(error_rate_template(ns, metrics.url))
            for name, v in (("web-a-v1", "v1"), ("web-b-v1", "v1")):
                version_of[await env.target_group(name, v)] = v
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
            await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
            for name, v in (("web-a-v2", "v2"), ("web-b-v2", "v2")):
                version_of[await env.target_group(name, v)] = v
            st = await wait_status(
                rt_client,
                ns,
                lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2",
            )
            v2_done = time.monotonic()
            assert await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}
            metrics.rates["v3"] = 0.5
            version_of[await env.target_group("web-a-v3", "v3")] = "v3"
            st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded")
            assert "version v3 failed" in st["message"]

            async def back_on_v2() -> bool:
                return await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}

            assert await eventually(back_on_v2, within=60)
            done = time.monotonic()
            await asyncio.sleep(0.3)  # a few more samples of the end state
        finally:
            sampling.cancel()
            await asyncio.gather(sampling, return_exceptions=True)
            okra.stop()
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v3"]
    runs = (await rt_client.list(RUN, ns)).items
    pauses = (await rt_client.list(PAUSE, ns)).items
    v2_shares, v3_shares = sampler.shares("v2"), sampler.shares("v3")
    errors = error_lines(tmp_path / "okra-manager.log")
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
