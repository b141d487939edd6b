"""okra-manager on a cache that trails the API server: every watch event reaches it a second
late (`ApiServerProxy.delay_watches`), as on a loaded control plane. The Events okra says
once are said once, and no status write flips back what an earlier one recorded:
read-your-writes (`okra_runtime.freshness`) keeps every reconcile from planning on a Cell
older than the status okra itself last wrote.

One Cell, one story:
1. v2's analysis runs past `progressDeadlineSeconds`: `ProgressDeadlineExceeded` once
   (condition and Event) while the run keeps measuring, each measurement a reconcile;
2. `progressDeadlineAbort` set: v2 rolled back, `RolloutFailed` once;
3. v3's analysis fails: rolled back, `RolloutFailed` once;
4. the listener rule edited by hand: repaired, `DriftRepaired` once.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from e2e.conftest import BLOCKLIST, CELL, VERSION_ARG, Metrics, cell_obj, error_rate_template
from e2e.conftest import wait_status as cell_wait_status
from okra_controllers.api.kinds import ANALYSIS_RUN
from okra_runtime import Client
from support import eventually

from .harness import ALB_CONFIG, World

DELAY = 1.0


def said(records: list[dict[str, Any]], reason: str) -> list[str]:
    """The notes of the Events okra-manager recorded with `reason` (its debug log)."""
    return [r["note"] for r in records if r.get("event") == "event" and r.get("reason") == reason]


def progressing(st: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in st.get("conditions") or [] if c["type"] == "Progressing"), {})


def stalled_at(st: dict[str, Any], where: str) -> bool:
    """The Cell reports the progress deadline passed while it was at `where`."""
    cond = progressing(st)
    return cond.get("reason") == "ProgressDeadlineExceeded" and where in cond.get("message", "")


async def measurements(c: Client, ns: str) -> int:
    """How many measurements the namespace's running AnalysisRuns have taken."""
    runs = (await c.list(ANALYSIS_RUN, ns)).items
    return sum(
        len(m.get("measurements") or [])
        for r in runs
        if (r.get("status") or {}).get("phase") == "Running"
        for m in (r.get("status") or {}).get("metricResults") or []
    )


async def blocked(c: Client, ns: str) -> list[str]:
    items = ((await c.get(BLOCKLIST, "web", ns)).get("spec") or {}).get("items") or []
    return [i["version"] for i in items]


@pytest.mark.timeout(600)
async def test_once_events_are_said_once_on_a_watch_a_second_late(
    world: World, metrics: Metrics
) -> None:
    env, c, ns = world.env, world.client, world.ns
    slow = error_rate_template(ns, metrics.url, name="slow")
    slow["spec"]["metrics"][0]["count"] = 1000  # one measurement a second: never done here
    await c.create(slow)
    await c.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    analysis = {"analysis": {"templates": [{"templateName": "slow"}], "args": VERSION_ARG}}
    cell = cell_obj(
        ns, env.alb.listener_arn, [{"setWeight": 20}, analysis], progressDeadlineSeconds=3
    )
    await c.create(cell)

    async with world.api_proxy() as api:
        api.delay_watches(DELAY)
        with world.manager(api=api, args=["--log-level", "debug"]) as okra:
            await cell_wait_status(c, ns, lambda s: s.get("health") == "Healthy")

            # 1. The deadline passes while the analysis keeps measuring.
            await env.target_group("web-a-v2", "v2")
            await cell_wait_status(c, ns, lambda s: stalled_at(s, "(step 2/2)"))
            seen = await measurements(c, ns)

            async def measured_more() -> bool:  # each one a reconcile of the Cell
                return await measurements(c, ns) >= seen + 4

            assert await eventually(measured_more, within=60)
            # One Event per stall: the analysis step's once, and the weight step before it
            # (which a watch this slow can keep past 3 s) at most once.
            exceeded = said(okra.records(), "ProgressDeadlineExceeded")
            assert len([n for n in exceeded if "(step 2/2)" in n]) == 1, exceeded
            assert len({n.split(",")[0] for n in exceeded}) == len(exceeded), exceeded

            # 2. Aborted at the deadline: back to stable, once.
            await c.patch(CELL, "web", {"spec": {"progressDeadlineAbort": True}}, namespace=ns)
            await cell_wait_status(c, ns, lambda s: s.get("health") == "Degraded")
            assert await env.rule_becomes({"web-a-v1": 100}, within=30)

            # 3. v3's analysis fails (no deadline now): back to stable, once.
            failing = {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}
            steps = [{"setWeight": 20}, {"analysis": failing}]
            edit = {
                "progressDeadlineSeconds": None,
                "progressDeadlineAbort": None,
                "updateStrategy": {"type": "Canary", "canary": {"steps": steps}},
            }
            await c.patch(CELL, "web", {"spec": edit}, namespace=ns)
            metrics.rates["v3"] = 0.5
            await env.target_group("web-a-v3", "v3")

            async def v3_blocked() -> bool:
                return await blocked(c, ns) == ["v2", "v3"]

            assert await eventually(v3_blocked, within=90), await blocked(c, ns)
            assert await env.rule_becomes({"web-a-v1": 100}, within=30)
            await cell_wait_status(c, ns, lambda s: s.get("stableVersion") == "v1")

            # 4. The rule edited by hand: repaired, once.
            async def config_synced() -> bool:
                cfg = await c.get(ALB_CONFIG, "web", ns)
                st = cfg.get("status") or {}
                return st.get("observedGeneration") == cfg["metadata"]["generation"] and any(
                    x["type"] == "Synced" and x["status"] == "True"
                    for x in st.get("conditions") or []
                )

            assert await eventually(config_synced, within=60)
            async with env.aws.config.client("elbv2") as elb:
                rules = (await elb.describe_rules(ListenerArn=env.alb.listener_arn))["Rules"]
                [rule] = [r for r in rules if not r.get("IsDefault")]
                hand = [
                    {"TargetGroupArn": env.tg_arns["web-a-v1"], "Weight": 10},
                    {"TargetGroupArn": env.tg_arns["web-a-v2"], "Weight": 90},
                ]
                await elb.modify_rule(
                    RuleArn=rule["RuleArn"],
                    Actions=[{"Type": "forward", "ForwardConfig": {"TargetGroups": hand}}],
                )
            assert await env.rule_becomes({"web-a-v1": 100}, within=90)

            # AWS shows the repair as soon as okra's ModifyRule lands, before the reconcile
            # that wrote it has read the rule back and said so (and its log line reached
            # this test): wait for the Event, then count.
            async def repair_said() -> bool:
                return bool(said(okra.records(), "DriftRepaired"))

            assert await eventually(repair_said, within=60)
            assert await eventually(config_synced, within=60)
            records = okra.records()
        writes = [s for r, n, s in api.statuses if r == "cells" and n == "web"]

    failed = Counter(said(records, "RolloutFailed"))
    assert sorted(failed.values()) == [1, 1], failed  # v2's and v3's, each once
    assert len(said(records, "DriftRepaired")) == 1, said(records, "DriftRepaired")
    assert len(said(records, "RolloutStarted")) == len(set(said(records, "RolloutStarted")))
    # The analysis step's deadline condition was written once: never cleared and set again.
    stalls = [stalled_at(s, "(step 2/2)") for s in writes]
    entered = [i for i, now in enumerate(stalls) if now and (i == 0 or not stalls[i - 1])]
    assert len(entered) == 1, [progressing(s).get("message") for s in writes]
