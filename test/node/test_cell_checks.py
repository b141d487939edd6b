"""Prechecks and postchecks (seed 002's lifecycle) end to end: okra-manager (a real
process) creates the check Jobs on the node suite's plane, where the Job controller and the
kubelet run them (busybox, `sh -c`); moto for AWS. A failing precheck blocks the rollout
before any traffic moves; a passing one lets it proceed; a failing postcheck rolls back;
okra-manager killed with SIGKILL while a check's Job runs resumes on the same Job. (What a
failed check's Pod said, in the Cell's status and Event: test_install.py's precheck test.)"""

from __future__ import annotations

from typing import Any

from e2e.conftest import BLOCKLIST, CELL, Env, OkraManager, cell_obj, wait_status
from okra_runtime import GVK, Client
from support import eventually

from .test_install import check

JOB = GVK("batch", "v1", "Job")


def ran(job: dict[str, Any]) -> bool:
    """The Job's Pod ran to its end on the node: succeeded or failed, once."""
    status = job.get("status") or {}
    return int(status.get("succeeded", 0)) + int(status.get("failed", 0)) == 1


async def test_a_failing_precheck_blocks_the_rollout_before_any_traffic(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    fails = check("run-test", "echo '2 of 40 tests failed'; exit 3")
    # v1 rolls out before the (failing) check is added: the first rollout runs checks too.
    # No wait before the rollback (a failed precheck waits rollbackDelaySeconds, default 60).
    cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}], rollbackDelaySeconds=0)
    await rt_client.create(cell)
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
    assert len(jobs) == 1
    assert jobs[0]["status"].get("failed") == 1, jobs[0]["status"]
    assert jobs[0]["metadata"]["ownerReferences"][0]["kind"] == "Cell"
    assert [r["phase"] for r in st["checks"]] == ["Failed"]


async def test_precheck_passes_manager_killed_mid_job_then_postcheck_rolls_back(
    env: Env, okra: OkraManager, rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    slow_pass = check("run-test", "sleep 4")
    post_fail = check("smoke", "echo 'smoke: 503'; exit 1")
    cell = cell_obj(
        ns,
        env.alb.listener_arn,
        [{"setWeight": 50}],
        prechecks=[slow_pass],
        rollbackDelaySeconds=3,
    )
    await rt_client.create(cell)
    # v1's first rollout runs the precheck too; the failing postcheck comes after it.
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy")
    await rt_client.patch(CELL, "web", {"spec": {"postchecks": [post_fail]}}, namespace=ns)
    (first,) = (await rt_client.list(JOB, ns)).items  # v1's precheck
    await env.target_group("web-a-v2", "v2")
    st = await wait_status(rt_client, ns, lambda s: s.get("phase") == "Init")
    assert "Init: precheck run-test running" in st["message"]

    async def job_running() -> bool:
        jobs = (await rt_client.list(JOB, ns)).items
        return any(
            (j.get("status") or {}).get("active")
            for j in jobs
            if j["metadata"]["name"] != first["metadata"]["name"]
        )

    assert await eventually(job_running, within=60)
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
    jobs = (await rt_client.list(JOB, ns)).items
    # One per rollout and check (v1's precheck, v2's precheck and postcheck), each run once
    # on the node: the restart created no second precheck Job.
    assert len(jobs) == 3, [j["metadata"]["name"] for j in jobs]
    assert all(ran(j) for j in jobs), [j["status"] for j in jobs]
    assert {(r["stage"], r["phase"]) for r in st["checks"]} == {
        ("precheck", "Succeeded"),
        ("postcheck", "Failed"),
    }
    modified = env.proxy.actions().count("ModifyRule")
    assert modified >= 3  # 50%, 100%, then back to v1
