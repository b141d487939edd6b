"""Cell canaries end to end: okra-manager (a real process) on the real control plane,
moto for AWS, weights read back from AWS at every hold point."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from okra_runtime import GVK, Client
from okra_runtime import loop as event_loop
from support import eventually, wait_events

from .conftest import (
    BLOCKLIST,
    CELL,
    VERSION_ARG,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    error_rate_template,
    promote,
    wait_status,
)

ANALYSIS = {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}}


async def weights_match_plan(env: Env, st: dict[str, Any]) -> dict[str, int]:
    """The rule's weights as AWS shows them once they are the ones `st` planned. Returned
    rather than read again: a rollout that does not wait (an analysis that ends at once)
    may have moved on by the next read."""
    planned = {t["name"]: t["weight"] for t in st.get("targetGroups") or []}

    async def same() -> bool:
        return await env.rule_weights() == planned

    assert await eventually(same, within=20), (await env.rule_weights(), planned)
    return planned


def canary_total(weights: dict[str, int], version: str) -> int:
    return sum(w for n, w in weights.items() if n.endswith(version))


async def test_full_canary_through_every_step_kind_then_failed_analysis_rolls_back(
    env: Env, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    await env.target_group("web-b-v1", "v1")
    steps: list[dict[str, Any]] = [
        {"setWeight": 10},
        {"pause": {"duration": "1s"}},
        {"stepWeight": 20},
        ANALYSIS,
        {"stepWeight": 30},
        {"pause": {}},
    ]
    bg = {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG, "startingStep": 2}
    # two target groups per version: once the Cell moves to a version, every write gives
    # its weight to both (never to the one that arrived first)
    cell = cell_obj(ns, env.alb.listener_arn, steps, background=bg, replicas=2)
    env.proxy.keep_bodies.add("ModifyRule")
    await rt_client.create(cell)

    # First rollout: no config yet, so v1 goes straight to 100.
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await weights_match_plan(env, st)
    assert await env.rule_weights() == {"web-a-v1": 50, "web-b-v1": 50}

    # Hold points: 10% during the timed pause, 30% during the analysis, 60% at the
    # indefinite pause. okra writes each as the plan splits it over the two clusters of each
    # version, in order: read from the ModifyRules it sent (the analysis may end within a
    # second, shorter than a poll of AWS on a busy machine).
    since = time.monotonic()
    await env.target_group("web-a-v2", "v2")
    await env.target_group("web-b-v2", "v2")
    st = await wait_status(
        rt_client,
        ns,
        lambda s: s.get("health") == "Paused" and s.get("canaryWeight") == 60,
    )
    await weights_match_plan(env, st)
    shown = [{n: w for n, w in write.items() if w} for write in env.rule_writes(since)]
    holds = {
        e: {
            "web-a-v1": (100 - e) // 2,
            "web-b-v1": (100 - e) // 2,
            "web-a-v2": e // 2,
            "web-b-v2": e // 2,
        }
        for e in (30, 60)
    }
    assert [canary_total(w, "v2") for w in shown if canary_total(w, "v2") in holds] == [
        30,
        60,
    ], shown
    for w in shown:
        if canary_total(w, "v2") in holds:
            assert w == holds[canary_total(w, "v2")], shown
    assert "paused at step 6 until promoted" in st["message"]
    await promote(rt_client, ns)
    st = await wait_status(
        rt_client, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
    )
    assert await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}
    await weights_match_plan(env, st)
    runs = (await rt_client.list(GVK("okra.mumo.co", "v1alpha1", "AnalysisRun"), ns)).items
    assert {r["status"]["phase"] for r in runs} == {"Successful"}, [
        (r["metadata"]["name"], r["status"].get("phase"), r["status"].get("message")) for r in runs
    ]
    assert any(r["metadata"]["name"].endswith("-bg") for r in runs)

    # v3 fails its analysis: all traffic back to v2 at once, v3 blocked. Its target groups
    # arrive in the other order.
    metrics.rates["v3"] = 0.2
    await env.target_group("web-b-v3", "v3")
    await env.target_group("web-a-v3", "v3")
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded")
    assert "version v3 failed" in st["message"]
    await weights_match_plan(env, st)
    assert await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v3"]
    assert "Failed" in blocklist["spec"]["items"][0]["cause"]
    failed = await wait_events(rt_client, ns, "RolloutFailed")
    assert [e["type"] for e in failed] == ["Warning"]
    assert_whole_versions(env, {"v2": {"web-a-v2", "web-b-v2"}, "v3": {"web-a-v3", "web-b-v3"}})

    # A blocked version is never retried while listed.
    await env.target_group("web-c-v3", "v3")
    await asyncio.sleep(2)
    assert await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}

    # The record: v2's rollout completed through its six steps, promoted at the last; v3's
    # rolled back with the analysis's cause (v1's first rollout was no canary: no record).
    history = (await rt_client.get(CELL, "web", ns))["status"]["history"]
    assert [(r["from"], r["to"], r["outcome"]) for r in history] == [
        ("v2", "v3", "RolledBack"),
        ("v1", "v2", "Completed"),
    ]
    rolled_back, completed = history
    assert [s["index"] for s in completed["steps"]] == list(range(6))
    assert all(s.get("endedAt") for s in completed["steps"])
    reasons = [e["reason"] for e in completed["events"]]
    assert (reasons[0], reasons[-1]) == ("RolloutStarted", "RolloutCompleted")
    assert "Promoted" in reasons
    assert rolled_back["cause"].startswith("version v3 failed"), rolled_back
    assert rolled_back["cause"] == failed[0]["note"]  # the RolloutFailed Event's words
    # Each analysis outlives its AnalysisRun: v2's step analysis and its background one
    # (Successful, or still running when the rollout completed), v3's failed one with the
    # values that failed it, named by the cause.
    assert sorted(a["at"] for a in completed["analyses"]) == ["background", "step-3"]
    step = next(a for a in completed["analyses"] if a["at"] == "step-3")
    assert step["phase"] == "Successful"
    assert step["metrics"][0]["measurements"]
    bad = [a for a in rolled_back["analyses"] if a["phase"] == "Failed"]
    assert bad, rolled_back
    assert bad[0]["name"] in rolled_back["cause"]
    assert bad[0]["metrics"][0]["failed"] >= 1


def assert_whole_versions(env: Env, versions: dict[str, set[str]]) -> None:
    """No ModifyRule okra sent gave a version's weight to a strict subset of its target
    groups (Argo Rollouts splits by replica counts; okra by clusters, all or none)."""
    writes = [{n for n, w in write.items() if w} for write in env.rule_writes()]
    assert writes
    for given in writes:
        for version, tgs in versions.items():
            assert given & tgs in (set(), tgs), (version, given, writes)


async def test_rollback_scale_out_and_steady_state(
    env: Env, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, [{"stepWeight": 50}]))
    await wait_status(
        rt_client, ns, lambda s: s.get("stableVersion") == "v1" and s.get("health") == "Healthy"
    )
    await env.target_group("web-a-v2", "v2")
    st = await wait_status(
        rt_client, ns, lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy"
    )
    assert await env.rule_weights() == {"web-a-v2": 100}

    # A new target group of the serving version joins at once, no steps.
    await env.target_group("web-b-v2", "v2")
    st = await wait_status(
        rt_client,
        ns,
        lambda s: len(s.get("targetGroups") or []) == 2 and s.get("health") == "Healthy",
    )
    assert await env.rule_weights() == {"web-a-v2": 50, "web-b-v2": 50}
    assert st.get("canaryVersion") is None

    # spec.version below the serving version: immediate rollback.
    await rt_client.patch(CELL, "web", {"spec": {"version": "v1"}}, namespace=ns)
    st = await wait_status(
        rt_client,
        ns,
        lambda s: s.get("stableVersion") == "v1" and s.get("health") == "Healthy",
        within=30,
    )
    assert await env.rule_weights() == {"web-a-v1": 100}

    # Steady state: no AWS writes while idle.
    since = time.monotonic()
    await asyncio.sleep(5)
    writes = [a for a in env.proxy.actions(since) if not a.startswith("Describe")]
    assert writes == []


async def test_the_start_line_names_the_event_loop(okra: OkraManager) -> None:
    """Which loop a manager runs on (uvloop when installed) is an operator's first question
    about its CPU; its start line answers it."""

    def start() -> dict[str, Any] | None:
        return next((r for r in okra.records() if r.get("event") == "starting okra-manager"), None)

    async def started() -> bool:
        return start() is not None

    # The line comes after the manager's imports (about 1 s of CPU); on a machine at a load of
    # 15-20 (seen beside make test-stress) that took more than 30 s of wall. What is checked
    # is the line's content, not how soon it comes.
    assert await eventually(started, within=90), okra.tail()
    assert (start() or {}).get("event_loop") == event_loop.loop_factory()[0], okra.tail()
