"""The progress deadline end to end: okra-manager (a real process), the real control
plane, moto. An analysis step that keeps running past `progressDeadlineSeconds` is
reported (condition and Event) while traffic stays where it is; with
`progressDeadlineAbort` the canary is aborted: all weight back to stable in AWS, the
version blocked."""

from __future__ import annotations

from typing import Any

from okra_runtime import Client
from support import eventually, find_events

from .conftest import (
    BLOCKLIST,
    CELL,
    VERSION_ARG,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    error_rate_template,
    wait_status,
)


def progressing(st: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in st.get("conditions") or [] if c["type"] == "Progressing"), {})


def stalled_at(st: dict[str, Any], where: str) -> bool:
    """The Cell reports the progress deadline passed while it was at `where`."""
    cond = progressing(st)
    return cond.get("reason") == "ProgressDeadlineExceeded" and where in cond.get("message", "")


async def test_a_stuck_analysis_is_reported_then_aborted_when_asked(
    env: Env, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    slow = error_rate_template(ns, metrics.url, name="slow")
    slow["spec"]["metrics"][0]["count"] = 1000  # one measurement a second: never done here
    await rt_client.create(slow)
    await env.target_group("web-a-v1", "v1")
    analysis = {"analysis": {"templates": [{"templateName": "slow"}], "args": VERSION_ARG}}
    cell = cell_obj(
        ns, env.alb.listener_arn, [{"setWeight": 20}, analysis], progressDeadlineSeconds=3
    )
    await rt_client.create(cell)
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")

    await env.target_group("web-a-v2", "v2")
    # The analysis step's stall (step 2/2). On a loaded machine the weight step before it may
    # take longer than 3 s to show in AWS: a stall of its own, reported once as well.
    st = await wait_status(rt_client, ns, lambda s: stalled_at(s, "(step 2/2)"))
    assert progressing(st)["status"] == "False"
    assert "progressDeadlineSeconds (3s)" in st["message"]
    assert st["health"] == "Progressing"
    assert await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}  # reported, not moved
    exceeded: list[dict[str, Any]] = []

    async def reported() -> bool:  # the Event is posted after the status write it goes with
        exceeded[:] = await find_events(rt_client, ns, "ProgressDeadlineExceeded")
        return any("(step 2/2)" in e["note"] for e in exceeded)

    assert await eventually(reported, within=30), exceeded
    assert {e["type"] for e in exceeded} == {"Warning"}
    notes = [e["note"] for e in exceeded]
    assert len([n for n in notes if "(step 2/2)" in n]) == 1, notes  # one Event per stall
    assert len({n.split(",")[0] for n in notes}) == len(notes), notes  # each stall once

    await rt_client.patch(CELL, "web", {"spec": {"progressDeadlineAbort": True}}, namespace=ns)
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded")
    assert "version v2 failed: no progress since" in st["message"]

    async def back_on_stable() -> bool:
        return await env.rule_weights() == {"web-a-v1": 100}

    assert await eventually(back_on_stable, within=20), await env.rule_weights()
    blocked = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocked["spec"]["items"]] == ["v2"]
