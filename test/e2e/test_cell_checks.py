"""Prechecks and postchecks (seed 002's lifecycle) end to end: okra-manager (a real
process) creates the check Jobs on the real control plane; `jobrunner.JobRunner` plays
the kubelet (the control plane has no nodes and none can run here: see its docstring);
moto for AWS. A failing precheck blocks the rollout before any traffic moves; a passing
one lets it proceed; a failing postcheck rolls back; okra-manager killed with SIGKILL
while a check's Job runs resumes on the same Job."""

from __future__ import annotations

import sys
from typing import Any

from jobrunner import JOB, JobRunner
from okra_runtime import Client
from support import eventually, wait_events

from .conftest import BLOCKLIST, CELL, Env, OkraManager, cell_obj, wait_status


def check(name: str, script: str) -> dict[str, Any]:
    return {
        "name": name,
        "job": {
            "template": {
                "spec": {
                    "image": "registry.example.com/checks:1",
                    "command": [sys.executable, "-c", script],
                }
            }
        },
    }


async def test_a_failing_precheck_blocks_the_rollout_before_any_traffic(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    fails = check("run-test", "import sys; print('2 of 40 tests failed'); sys.exit(3)")
    # v1 rolls out before the (failing) check is added: the first rollout runs checks too.
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}]))
    async with JobRunner(rt_client, ns) as runner:
        await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
        await rt_client.patch(CELL, "web", {"spec": {"prechecks": [fails]}}, namespace=ns)
        await env.target_group("web-a-v2", "v2")
        st = await wait_status(rt_client, ns, lambda s: s.get("phase") == "Error")
    assert st["health"] == "Degraded"
    assert "precheck run-test failed (Job web-" in st["message"]
    assert "exit code 3: 2 of 40 tests failed" in st["message"]
    assert "v2 is blocked" in st["message"]
    assert await env.rule_weights() == {"web-a-v1": 100}
    assert env.proxy.actions().count("ModifyRule") == 0  # the first rollout created the rule
    blocked = await rt_client.get(BLOCKLIST, "web", ns)
    assert [i["version"] for i in blocked["spec"]["items"]] == ["v2"]
    jobs = (await rt_client.list(JOB, ns)).items
    assert [j["metadata"]["name"] for j in jobs] == runner.started
    assert len(jobs) == 1
    assert jobs[0]["metadata"]["ownerReferences"][0]["kind"] == "Cell"
    assert [r["phase"] for r in st["checks"]] == ["Failed"]


async def test_a_failed_check_job_says_what_its_pod_said(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    """As on a node: the Job's condition says only that its backoff limit was reached; the
    Pod's terminated container status has the exit code and the output's tail. okra reads
    the Pod and the status message and the RolloutFailed Event say both."""
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    script = "import sys; print('collecting'); print('2 of 40 tests failed'); sys.exit(3)"
    fails = check("run-test", script)
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}]))
    async with JobRunner(rt_client, ns, pods=True):
        await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
        await rt_client.patch(CELL, "web", {"spec": {"prechecks": [fails]}}, namespace=ns)
        await env.target_group("web-a-v2", "v2")
        st = await wait_status(rt_client, ns, lambda s: s.get("phase") == "Error")
    (job,) = (await rt_client.list(JOB, ns)).items
    assert job["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == (
        "FallbackToLogsOnError"
    )
    (failed,) = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed["message"] == "Job has reached the specified backoff limit"
    said = "BackoffLimitExceeded: exit code 3: 2 of 40 tests failed"
    assert f"precheck run-test failed (Job {job['metadata']['name']}: {said})" in st["message"]
    assert [r["message"] for r in st["checks"]] == [said]
    events = await wait_events(rt_client, ns, "RolloutFailed")
    assert any(said in (e.get("note") or "") for e in events), events
    assert await env.rule_weights() == {"web-a-v1": 100}


async def test_precheck_passes_manager_killed_mid_job_then_postcheck_rolls_back(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    slow_pass = check("run-test", "import time; time.sleep(4)")
    post_fail = check("smoke", "import sys; print('smoke: 503'); sys.exit(1)")
    cell = cell_obj(
        ns,
        env.alb.listener_arn,
        [{"setWeight": 50}],
        prechecks=[slow_pass],
        rollbackDelaySeconds=3,
    )
    await rt_client.create(cell)
    async with JobRunner(rt_client, ns) as runner:
        # v1's first rollout runs the precheck too; the failing postcheck comes after it.
        await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
        await rt_client.patch(CELL, "web", {"spec": {"postchecks": [post_fail]}}, namespace=ns)
        first = len(runner.started)
        assert first == 1  # v1's precheck
        await env.target_group("web-a-v2", "v2")
        st = await wait_status(rt_client, ns, lambda s: s.get("phase") == "Init")
        assert "Init: precheck run-test running" in st["message"]

        async def job_running() -> bool:
            return len(runner.started) > first

        assert await eventually(job_running, within=30)
        okra.kill()  # SIGKILL while the precheck's Job runs
        assert await env.rule_weights() == {"web-a-v1": 100}  # nothing moved during Init
        okra.start()

        # The precheck passes, traffic moves, v2 reaches 100%, the postcheck fails: v2 keeps
        # serving for rollbackDelaySeconds, then back.
        st = await wait_status(rt_client, ns, lambda s: s.get("phase") == "Error")
        assert "postcheck smoke failed" in st["message"]
        assert "exit code 1: smoke: 503" in st["message"]
        assert "Waiting 3 seconds before starting a rollback" in st["message"]
        assert st["rollbackAt"]
        assert await env.rule_weights() == {"web-a-v2": 100}
        st = await wait_status(rt_client, ns, lambda s: "Rolling back" in (s.get("message") or ""))
    assert st["stableVersion"] == "v1"

    async def back() -> bool:
        return await env.rule_weights() == {"web-a-v1": 100}

    assert await eventually(back, within=20), await env.rule_weights()
    jobs = sorted(j["metadata"]["name"] for j in (await rt_client.list(JOB, ns)).items)
    # One per rollout and check (v1's precheck, v2's precheck and postcheck): the restart
    # created no second precheck Job.
    assert len(jobs) == 3, jobs
    assert sorted(runner.started) == jobs
    assert {(r["stage"], r["phase"]) for r in st["checks"]} == {
        ("precheck", "Succeeded"),
        ("postcheck", "Failed"),
    }
    modified = env.proxy.actions().count("ModifyRule")
    assert modified >= 3  # 50%, 100%, then back to v1
