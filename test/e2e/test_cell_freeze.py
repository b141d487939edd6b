"""Freezes on the real okra-manager, API server and moto: a recurring freeze window that
opens mid-rollout holds the Cell at its next step boundary, a manager killed during the
freeze resumes frozen, the rollout resumes where it stopped when the window closes; a
failing analysis under way rolls back during a freeze."""

from __future__ import annotations

import datetime
from typing import Any

from okra_runtime import GVK, Client
from support import eventually, wait_events

from .conftest import Env, Metrics, OkraManager, cell_obj, error_rate_template, wait_status

RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")
FREEZE = GVK("okra.mumo.co", "v1alpha1", "Freeze")
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
CANARY_VERSION = {"fieldRef": {"fieldPath": "status.canaryVersion"}}
ANALYSIS = {
    "analysis": {
        "templates": [{"templateName": "error-rate"}],
        "args": [{"name": "version", "valueFrom": CANARY_VERSION}],
    }
}


def stamp(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def freeze_obj(ns: str, spec: dict[str, Any], name: str = "release-freeze") -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Freeze",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"reason": "quarter-end", "author": "alice", **spec},
    }


def frozen(s: dict[str, Any]) -> bool:
    return s.get("pausedReason") == "Frozen" and any(
        c["type"] == "Frozen" and c["status"] == "True" for c in s.get("conditions") or []
    )


async def test_window_opening_mid_rollout_holds_at_the_next_boundary_and_survives_kill_9(
    env: Env, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    cell = cell_obj(ns, env.alb.listener_arn, [{"stepWeight": 20}, {"pause": {}}, ANALYSIS])
    cell["metadata"]["labels"] = {"team": "web"}
    await rt_client.create(cell)
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await env.target_group("web-a-v2", "v2")
    st = await wait_status(rt_client, ns, lambda s: s.get("currentStepIndex") == 1)
    rollout = st["rolloutId"]
    # A window that is open every minute, from two seconds from now: it opens while the
    # rollout waits in its (indefinite) pause, which is no step boundary yet.
    opens = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2)
    window = {"schedule": "* * * * *", "duration": "2m", "timeZone": "Europe/Paris"}
    spec = {
        "windows": [window],
        "start": stamp(opens),
        "selector": {"matchLabels": {"team": "web"}},
    }
    await rt_client.create(freeze_obj(ns, spec))
    st = await wait_status(
        rt_client, ns, lambda s: any(c["type"] == "Frozen" for c in s.get("conditions") or [])
    )
    assert st["currentStepIndex"] == 1
    assert st["health"] == "Paused"
    # okra promote ends the pause: the analysis after it is the next step, and waits
    patch = {"metadata": {"annotations": {"okra.mumo.co/promote": f"{rollout}/1"}}}
    await rt_client.patch(CELL, "web", patch, namespace=ns)
    st = await wait_status(rt_client, ns, frozen)
    assert st["currentStepIndex"] == 2
    assert (
        "step 3 of canary v2 waits: freeze release-freeze (quarter-end, by alice)"
        in (st["message"])
    )
    assert await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}
    assert (await rt_client.list(RUN, ns)).items == []
    held = await wait_events(rt_client, ns, "Frozen")
    assert "freeze release-freeze" in held[0]["note"]

    # kill -9 during the freeze: the new manager holds too (the state is the API server's)
    okra.kill()
    okra.start()
    await rt_client.patch(
        FREEZE, "release-freeze", {"spec": {"reason": "quarter-end, day 2"}}, namespace=ns
    )
    st = await wait_status(rt_client, ns, lambda s: "day 2" in (s.get("message") or ""))
    assert frozen(st)
    assert st["currentStepIndex"] == 2
    assert (await rt_client.list(RUN, ns)).items == []
    assert await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}

    # the window closes (the freeze's end, `until`, is now): the rollout resumes at step 3
    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    await rt_client.patch(FREEZE, "release-freeze", {"spec": {"until": stamp(until)}}, namespace=ns)
    st = await wait_status(
        rt_client,
        ns,
        lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy",
        within=90,
    )
    runs = (await rt_client.list(RUN, ns)).items
    assert [r["metadata"]["name"] for r in runs] == [f"web-v2-{rollout}-step-2"]
    assert await env.rule_weights() == {"web-a-v2": 100}
    assert await wait_events(rt_client, ns, "Unfrozen")


async def test_failing_analysis_rolls_back_during_a_freeze(
    env: Env, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    tmpl = error_rate_template(ns, metrics.url)
    tmpl["spec"]["metrics"][0]["count"] = 600  # measures until it fails
    await rt_client.create(tmpl)
    await env.target_group("web-a-v1", "v1")
    await rt_client.create(
        cell_obj(ns, env.alb.listener_arn, [{"stepWeight": 20}, ANALYSIS, {"stepWeight": 50}])
    )
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await env.target_group("web-a-v2", "v2")
    await wait_status(rt_client, ns, lambda s: s.get("currentStepIndex") == 1)

    async def analysing() -> bool:
        runs = (await rt_client.list(RUN, ns)).items
        return any((r.get("status") or {}).get("metricResults") for r in runs)

    assert await eventually(analysing, within=30)
    await rt_client.create(freeze_obj(ns, {}))  # a manual freeze, at once, until lifted
    st = await wait_status(
        rt_client,
        ns,
        lambda s: any(c["type"] == "Frozen" and c["status"] == "True" for c in s["conditions"]),
    )
    assert st["currentStepIndex"] == 1  # the analysis under way goes on
    metrics.rates["v2"] = 0.5  # and now fails
    st = await wait_status(
        rt_client, ns, lambda s: s.get("health") == "Degraded" and "v2" in (s.get("message") or "")
    )
    assert any(c["type"] == "Frozen" and c["status"] == "True" for c in st["conditions"])
    assert await env.rule_weights() == {"web-a-v1": 100}
    assert st["stableVersion"] == "v1"
