"""A Cell survives its manager being SIGKILLed mid-rollout, and bad input never
stops the manager."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from okra_runtime import GVK, Client, InvalidError
from okra_testkit.envtest import ControlPlane
from support import eventually, wait_events

from .conftest import Env, Metrics, OkraManager, cell_obj, error_rate_template, wait_status

RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
PAUSE = GVK("okra.mumo.co", "v1alpha1", "Pause")
DEBUG = ("--log-level", "debug")
CANARY_VERSION = {"fieldRef": {"fieldPath": "status.canaryVersion"}}
ANALYSIS = {
    "analysis": {
        "templates": [{"templateName": "error-rate"}],
        "args": [{"name": "version", "valueFrom": CANARY_VERSION}],
    }
}


@pytest.mark.parametrize("kill_at", ["pause", "analysis"])
async def test_kill_9_mid_rollout_resumes_at_the_same_step(
    kill_at: str, env: Env, okra: OkraManager, metrics: Metrics, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    tmpl = error_rate_template(ns, metrics.url)
    tmpl["spec"]["metrics"][0]["count"] = 4
    await rt_client.create(tmpl)
    await env.target_group("web-a-v1", "v1")
    steps: list[dict[str, Any]] = [
        {"stepWeight": 20},
        {"pause": {"duration": "4s"}},
        ANALYSIS,
        {"stepWeight": 40},
    ]
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, steps))
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")

    totals: list[int] = []

    async def sample() -> None:
        while True:
            w = await env.rule_weights()
            if w:
                totals.append(sum(w.values()))
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample())
    try:
        await env.target_group("web-a-v2", "v2")
        index = 1 if kill_at == "pause" else 2
        st = await wait_status(rt_client, ns, lambda s: s.get("currentStepIndex") == index)
        rollout = st["rolloutId"]
        if kill_at == "analysis":

            async def measuring() -> bool:
                runs = (await rt_client.list(RUN, ns)).items
                return any((r.get("status") or {}).get("metricResults") for r in runs)

            assert await eventually(measuring, within=30)
        okra.kill()
        before = await env.rule_weights()
        await asyncio.sleep(1.5)
        assert await env.rule_weights() == before  # nothing moves while okra is down
        okra.start()
        st = await wait_status(
            rt_client,
            ns,
            lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy",
            within=90,
        )
    finally:
        sampler.cancel()
    assert await env.rule_weights() == {"web-a-v2": 100}
    assert totals
    assert set(totals) == {100}
    pauses = (await rt_client.list(PAUSE, ns)).items
    runs = (await rt_client.list(RUN, ns)).items
    # Finished steps were not repeated: one Pause and one run, both of the first attempt.
    assert [p["metadata"]["name"] for p in pauses] == [f"web-v2-{rollout}-pause-1"]
    assert [r["metadata"]["name"] for r in runs] == [f"web-v2-{rollout}-step-2"]
    result = runs[0]["status"]["metricResults"][0]
    assert (runs[0]["status"]["phase"], result["count"]) == ("Successful", 4)


async def test_bad_input_never_stops_the_manager(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    # A Cell with no matching target groups says so.
    lonely = cell_obj(ns, env.alb.listener_arn, [{"stepWeight": 50}])
    lonely["metadata"]["name"] = "lonely"
    lonely["spec"]["ingress"]["awsApplicationLoadBalancer"]["targetGroupSelector"] = {
        "matchLabels": {"role": "nothing"}
    }
    await rt_client.create(lonely)
    # An unknown step kind is rejected by the schema.
    bad = cell_obj(ns, env.alb.listener_arn, [{"scaleDown": {}}])
    bad["metadata"]["name"] = "bad-step"
    with pytest.raises(InvalidError) as err:
        await rt_client.create(bad)
    assert "exactly one of setWeight, stepWeight, pause, analysis" in err.value.message
    # An unparsable version label is ignored and reported.
    await env.target_group("web-a-v1", "v1")
    await env.target_group("web-weird", "not-a-version")
    # v1 pinned while six v2 target groups appear; then v2 (replicas 6) is wanted at once,
    # which needs seven groups in one forward action: more than an ALB holds.
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, [{"stepWeight": 50}], version="v1"))
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    for i in range(6):
        await env.target_group(f"web-{i}-v2", "v2")
    await rt_client.patch(CELL, "web", {"spec": {"version": None, "replicas": 6}}, namespace=ns)

    async def lonely_says_so() -> bool:
        st = (await rt_client.get(GVK("okra.mumo.co", "v1alpha1", "Cell"), "lonely", ns)).get(
            "status"
        ) or {}
        return st.get("message") == "no AWSTargetGroups match the target group selector"

    assert await eventually(lonely_says_so, within=30)
    st = await wait_status(
        rt_client, ns, lambda s: "an ALB forward action holds at most 5" in (s.get("message") or "")
    )
    unparsable = await wait_events(rt_client, ns, "UnparsableVersion")
    assert any("not-a-version" in e["note"] for e in unparsable), unparsable
    # The manager is alive and v1 keeps all traffic.
    assert okra.proc is not None
    assert okra.proc.poll() is None
    assert st["stableVersion"] == "v1"
    assert st["health"] == "Degraded"  # every status has a phase, not only a message
    assert await env.rule_weights() == {"web-a-v1": 100}


async def test_health_gate_holds_weight_until_a_target_is_healthy(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, [{"stepWeight": 50}]))
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    arn = await env.target_group("web-a-v2", "v2", healthy=False)  # no targets yet
    st = await wait_status(
        rt_client,
        ns,
        lambda s: "waiting for a healthy target in web-a-v2" in (s.get("message") or ""),
    )
    assert any(
        c["type"] == "TargetGroupsHealthy" and c["status"] == "False" for c in st["conditions"]
    )
    await asyncio.sleep(1.0)
    assert await env.rule_weights() == {"web-a-v1": 100}
    ids = await env.aws.instances(1, env.network)
    await env.aws.register_targets(arn, ids)
    # The Cell re-checks on its next reconcile: nudge it the way any change would.
    await rt_client.patch(
        GVK("okra.mumo.co", "v1alpha1", "Cell"),
        "web",
        {"metadata": {"annotations": {"nudge": "1"}}},
        namespace=ns,
    )
    await wait_status(
        rt_client, ns, lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy"
    )
    assert await env.rule_weights() == {"web-a-v2": 100}


async def test_a_cell_on_a_listener_that_does_not_exist_says_so_without_an_error_log(
    env: Env, control_plane: ControlPlane, rt_client: Client, namespace: str, tmp_path: Path
) -> None:
    """AWS refuses the Cell's config (ListenerNotFound): the Cell's status and a Warning
    Event say what to fix, the config's reconcile is retried, and the manager logs it as
    one warning without a traceback, never at error level (the retries at debug level)."""
    ns = namespace
    okra = OkraManager(control_plane, env, tmp_path / "okra-manager.log", args=DEBUG)
    with okra:
        await env.target_group("web-a-v1", "v1")
        missing = env.alb.listener_arn[:-16] + "0000000000000000"
        await rt_client.create(cell_obj(ns, missing, []))

        def refused(s: dict[str, Any]) -> bool:
            return any(
                c["type"] == "LoadBalancerSynced"
                and c["status"] == "False"
                and "ListenerNotFound" in c["message"]
                for c in s.get("conditions") or []
            )

        st = await wait_status(rt_client, ns, refused)
        assert "check the listener ARN" in st["message"]

        async def warned() -> bool:
            events = (await rt_client.list(GVK("", "v1", "Event"), namespace=ns)).items
            return any(
                e.get("type") == "Warning"
                and e.get("reason") == "LoadBalancerNotSynced"
                and e["involvedObject"].get("kind") == "Cell"
                for e in events
            )

        def refusals() -> list[dict[str, Any]]:
            return [
                r
                for r in okra.records()
                if r.get("controller") == "albconfig" and "reported" in str(r.get("event", ""))
            ]

        async def retried() -> bool:  # the first refusal and two retries (1 s, 2 s)
            return len(refusals()) >= 3

        assert await eventually(warned, within=30)
        assert await eventually(retried, within=30), refusals()
    lines = okra.records()
    errors = [r for r in lines if r.get("level") in ("error", "critical")]
    print(f"\nCell status: {st['message']}\nrefusals: {[r['level'] for r in refusals()]}")
    assert not errors, errors
    assert not any("Traceback" in x for x in okra.text().splitlines())
    levels = [r["level"] for r in refusals()]
    assert levels == ["warning"] + ["debug"] * (len(levels) - 1), levels
