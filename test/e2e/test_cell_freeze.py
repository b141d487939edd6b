"""Freezes on the real okra-manager, API server and moto: a recurring freeze window that
opens mid-rollout holds the Cell at its next step boundary, a manager killed during the
freeze resumes frozen, the rollout resumes where it stopped when the window closes; a
failing analysis under way rolls back during a freeze; one ClusterFreeze holds Cells in two
namespaces (each with its own okra-manager --namespace), lets an abort roll back, and its
deletion resumes both."""

from __future__ import annotations

import contextlib
import datetime
from pathlib import Path
from typing import Any

from okra_controllers.api.kinds import CLUSTER_FREEZE, NAMESPACE
from okra_runtime import GVK, Client
from okra_runtime.errors import NotFoundError
from okra_testkit.envtest import ControlPlane
from support import eventually, wait_events

from .conftest import (
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    cell_status,
    error_rate_template,
    promote,
    wait_status,
)

RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")
FREEZE = GVK("okra.mumo.co", "v1alpha1", "Freeze")
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
ABORT = "okra.mumo.co/abort"
CANARY_VERSION = {"fieldRef": {"fieldPath": "status.canaryVersion"}}
ANALYSIS = {
    "analysis": {
        "templates": [{"templateName": "error-rate"}],
        "args": [{"name": "version", "valueFrom": CANARY_VERSION}],
    }
}


def stamp(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def freeze_obj(
    ns: str | None, spec: dict[str, Any], name: str = "release-freeze"
) -> dict[str, Any]:
    """A Freeze in `ns`; with `ns` None, a ClusterFreeze."""
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Freeze" if ns else "ClusterFreeze",
        "metadata": {"name": name, **({"namespace": ns} if ns else {})},
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


async def test_one_cluster_freeze_holds_cells_in_two_namespaces(
    env: Env,
    other_env: Env,
    control_plane: ControlPlane,
    rt_client: Client,
    tmp_path: Path,
) -> None:
    """One ClusterFreeze applied mid-rollout holds a Cell in each of two namespaces at
    their next step boundary; a manager killed during it holds on restart; an abort in one
    rolls back during it; its deletion resumes both. Each namespace has its own okra-manager
    (`--namespace`), as teams that run their own would: both see the one ClusterFreeze."""
    envs = (env, other_env)
    # a label only this test's namespaces carry: other tests share the control plane
    fleet = {"okra-test/fleet": env.namespace}
    name = f"fleet-{env.namespace}"
    managers = [OkraManager(control_plane, e, tmp_path / f"okra-{e.namespace}.log") for e in envs]
    with managers[0], managers[1]:
        for e in envs:
            await rt_client.patch(NAMESPACE, e.namespace, {"metadata": {"labels": fleet}})
            await e.target_group("web-a-v1", "v1")
            steps: list[dict[str, Any]] = [{"stepWeight": 20}, {"pause": {}}, {"stepWeight": 30}]
            await rt_client.create(cell_obj(e.namespace, e.alb.listener_arn, steps))
        for e in envs:
            await wait_status(rt_client, e.namespace, lambda s: s.get("health") == "Healthy")
            await e.target_group("web-a-v2", "v2")
        rollout = {}
        for e in envs:
            st = await wait_status(rt_client, e.namespace, lambda s: s.get("currentStepIndex") == 1)
            rollout[e.namespace] = st["rolloutId"]
        await rt_client.create(
            freeze_obj(None, {"namespaceSelector": {"matchLabels": fleet}}, name)
        )
        try:
            said = f"step 3 of canary v2 waits: clusterfreeze {name} (quarter-end, by alice)"
            for e in envs:  # it applies in both; the indefinite pause is no boundary yet
                st = await wait_status(
                    rt_client,
                    e.namespace,
                    lambda s: any(c["type"] == "Frozen" for c in s.get("conditions") or []),
                )
                assert (st["currentStepIndex"], st["health"]) == (1, "Paused")
            for e in envs:  # okra promote ends the pause: the next step is the boundary
                await promote(rt_client, e.namespace)
            for e in envs:
                st = await wait_status(rt_client, e.namespace, frozen)
                assert st["currentStepIndex"] == 2
                assert said in st["message"]
                assert await e.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}
                held = await wait_events(rt_client, e.namespace, "Frozen")
                assert f"clusterfreeze {name}" in held[0]["note"]

            # kill -9 one okra-manager during the freeze: restarted, it holds its Cell still
            managers[0].kill()
            managers[0].start()
            await rt_client.patch(CLUSTER_FREEZE, name, {"spec": {"reason": "quarter-end, day 2"}})
            st = await wait_status(
                rt_client, env.namespace, lambda s: "day 2" in (s.get("message") or "")
            )
            assert frozen(st)
            assert st["currentStepIndex"] == 2
            assert await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}

            # an abort rolls back during the freeze; the other Cell stays held
            abort = {"metadata": {"annotations": {ABORT: rollout[other_env.namespace]}}}
            await rt_client.patch(CELL, "web", abort, namespace=other_env.namespace)
            assert await other_env.rule_becomes({"web-a-v1": 100})
            st = await wait_status(rt_client, other_env.namespace, lambda s: s.get("aborted"))
            # the abort ends the hold: Error, and no longer paused for the freeze
            assert (st["phase"], st["health"], st.get("pausedReason")) == (
                "Error",
                "Degraded",
                None,
            )
            st = await cell_status(rt_client, env.namespace)
            assert frozen(st)
            assert st["currentStepIndex"] == 2
            assert await env.rule_weights() == {"web-a-v1": 80, "web-a-v2": 20}
            # okra retry: the rollout starts over, and waits for the freeze to end
            retry = {"metadata": {"annotations": {ABORT: None}}}
            await rt_client.patch(CELL, "web", retry, namespace=other_env.namespace)
            st = await wait_status(
                rt_client,
                other_env.namespace,
                lambda s: frozen(s) and "rollout of v2 waits" in (s.get("message") or ""),
            )
            assert (st["phase"], st["health"]) == ("Init", "Paused")  # v1 serves 100 %
            assert await other_env.rule_weights() == {"web-a-v1": 100}
        finally:
            with contextlib.suppress(NotFoundError):
                await rt_client.delete(CLUSTER_FREEZE, name)

        # its deletion resumes both: the held one from step 3, the retried one from the start
        # (through its pause again: promoted)
        await wait_status(
            rt_client,
            other_env.namespace,
            lambda s: s.get("currentStepIndex") == 1 and s.get("health") == "Paused",
        )
        await promote(rt_client, other_env.namespace)
        for e in envs:
            st = await wait_status(
                rt_client,
                e.namespace,
                lambda s: s.get("stableVersion") == "v2" and s.get("health") == "Healthy",
                within=90,
            )
            assert await e.rule_weights() == {"web-a-v2": 100}
            assert await wait_events(rt_client, e.namespace, "Unfrozen")
