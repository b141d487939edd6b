"""`okra plan` against the real manager: the weights it prints are the weights the
Cell controller then writes to AWS, step by step; planning writes nothing."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from okra_controllers.manager import EMULATOR_ENV
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from support import eventually

from .conftest import (
    VERSION_ARG,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    cell_status,
    error_rate_template,
)

STEPS: list[dict[str, Any]] = [
    {"setWeight": 10},
    {"pause": {"duration": "1s"}},
    {"stepWeight": 25},
    {"analysis": {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}},
    {"setWeight": 70},
    {"pause": {}},
]


async def okra_cli(cp: ControlPlane, env: Env, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(cp.kubeconfig()),
        "-n",
        env.namespace,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **EMULATOR_ENV, "AWS_ENDPOINT_URL": env.proxy.endpoint_url},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_plan_matches_what_the_controller_writes(
    env: Env,
    okra: OkraManager,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
) -> None:
    ns = namespace
    await rt_client.create(error_rate_template(ns, metrics.url))
    await env.target_group("web-a-v1", "v1")
    await env.target_group("web-b-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, STEPS))

    async def healthy() -> bool:
        st = await cell_status(rt_client, ns)
        return st.get("health") == "Healthy" and bool(await env.rule_weights())

    assert await eventually(healthy, within=60)
    # The manager stops: the plan is made from the state it left, with v2 now present.
    okra.stop()
    for n in ("a", "b", "c"):
        await env.target_group(f"web-{n}-v2", "v2")
    since = time.monotonic()
    code, out, err = await okra_cli(control_plane, env, "plan", "web", "-o", "json")
    assert code == 0, err
    plan = json.loads(out)
    calls = env.proxy.actions(since)
    assert set(calls) <= {"DescribeTargetHealth", "DescribeRules"}, calls
    assert "DescribeRules" in calls
    assert plan["desiredVersion"] == "v2"
    assert (plan["finished"], plan["resultVersion"]) == (True, "v2")
    assert plan["aws"]["matchesConfig"] is True
    planned = [{w["name"]: w["weight"] for w in s["writes"]} for s in plan["stages"] if s["writes"]]
    assert planned[0] == {
        "web-a-v1": 45,
        "web-b-v1": 45,
        "web-a-v2": 3,
        "web-b-v2": 3,
        "web-c-v2": 4,
    }
    assert len(planned) == 4  # 10%, 35%, 70%, then all on v2
    code, text, _ = await okra_cli(control_plane, env, "plan", "web")
    assert code == 0
    assert "waits for okra promote" in text
    assert "Result:   v2 serves 100%" in text, text

    # The manager again: record every distinct set of weights AWS shows.
    okra.start()
    seen: list[dict[str, int]] = []
    done = asyncio.Event()

    async def record() -> None:
        while not done.is_set():
            w = await env.rule_weights()
            if w and (not seen or seen[-1] != w):
                seen.append(w)
            await asyncio.sleep(0.1)

    recorder = asyncio.create_task(record())
    try:

        async def at_pause() -> bool:
            return (await cell_status(rt_client, ns)).get("pausedReason") == "Pause" and (
                await cell_status(rt_client, ns)
            ).get("currentStepIndex") == 5

        assert await eventually(at_pause, within=90), await cell_status(rt_client, ns)
        code, _, err = await okra_cli(control_plane, env, "promote", "web")
        assert code == 0, err

        async def completed() -> bool:
            st = await cell_status(rt_client, ns)
            return st.get("health") == "Healthy" and st.get("stableVersion") == "v2"

        assert await eventually(completed, within=60)
        await asyncio.sleep(0.3)  # one more look at AWS
    finally:
        done.set()
        await recorder
    assert seen[0] == {"web-a-v1": 50, "web-b-v1": 50}
    # AWS is sampled every 0.1 s, so a step the Cell passes straight through (no pause, no
    # analysis) can be missed under load; what is seen must be the plan's weights, in its order,
    # ending where the plan ends
    it = iter(planned)
    assert all(w in it for w in seen[1:]), (seen, planned)
    assert seen[-1] == planned[-1]
    assert len(seen) >= 3, seen
