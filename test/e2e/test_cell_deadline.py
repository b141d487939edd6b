"""The progress deadline end to end: okra-manager (a real process), the real control
plane, moto. An analysis step that keeps running past `progressDeadlineSeconds` is
reported (condition and Event) while traffic stays where it is; with
`progressDeadlineAbort` the canary is aborted: all weight back to stable in AWS, the
version blocked."""

from __future__ import annotations

from typing import Any

from okra_runtime import Client
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
    wait_status,
)


def progressing(st: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in st.get("conditions") or [] if c["type"] == "Progressing"), {})


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
    st = await wait_status(
        rt_client, ns, lambda s: progressing(s).get("reason") == "ProgressDeadlineExceeded"
    )
    assert progressing(st)["status"] == "False"
    assert "progressDeadlineSeconds (3s)" in st["message"]
    assert st["health"] == "Progressing"
    assert await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}  # reported, not moved
    exceeded = await wait_events(rt_client, ns, "ProgressDeadlineExceeded")
    assert [e["type"] for e in exceeded] == ["Warning"]

    await rt_client.patch(CELL, "web", {"spec": {"progressDeadlineAbort": True}}, namespace=ns)
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Degraded")
    assert "version v2 failed: no progress since" in st["message"]

    async def back_on_stable() -> bool:
        return await env.rule_weights() == {"web-a-v1": 100}

    assert await eventually(back_on_stable, within=20), await env.rule_weights()
    blocked = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocked["spec"]["items"]] == ["v2"]
