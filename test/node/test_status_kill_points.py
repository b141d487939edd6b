"""The check-Job kill point (test/reliability/test_status_kill_points.py's, here where the
Job runs: the Job controller and the kubelet on the node, busybox): okra-manager SIGKILLed
the instant it creates a precheck's Job, reaching kube-apiserver through `ApiServerProxy`
(test/faultproxy.py), and restarted at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.conftest import Env, cell_obj
from okra_runtime import GVK, Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from reliability.harness import Killer, World
from reliability.test_status_kill_points import _serving, hooks

from .test_install import check

JOB = GVK("batch", "v1", "Job")


@pytest.fixture
def world(
    env: Env,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    moto: MotoServer,
    tmp_path: Path,
) -> World:
    """reliability's world (test/reliability/conftest.py), on the node's plane."""
    return World(env, rt_client, namespace, control_plane, moto, tmp_path)


@pytest.mark.timeout(600)
async def test_kill_9_at_a_check_jobs_create_resumes_on_the_same_job(
    world: World,
) -> None:
    """The check-Job point: okra-manager SIGKILLed the instant it creates a precheck's
    Job, after the server made it (the reply lost: the restarted manager must find it,
    not make a second) and before (the request dropped: the restarted manager makes it).
    Each rollout ends with exactly one Job per check, named by its rollout id, and the
    version serving."""
    env, c, ns = world.env, world.client, world.ns
    passes = check("smoke", "echo ok")
    async with world.api_proxy() as api:
        okra = world.manager(api=api)
        killer = Killer(okra, c, ns)
        kills: list[str] = []
        api.on_request, api.on_response = hooks(killer, kills)
        with okra:
            await env.target_group("web-a-v1", "v1")
            after = await killer.arm("after create jobs", "after Job create (precheck v1)")
            await c.create(
                cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}], prechecks=[passes])
            )
            await killer.wait(after)
            await _serving(c, ns, "v1")
            before = await killer.arm("before create jobs", "before Job create (precheck v2)")
            await env.target_group("web-a-v2", "v2")
            await killer.wait(before)
            await _serving(c, ns, "v2")
    listed = (await c.list(JOB, ns)).items
    jobs = sorted(j["metadata"]["name"] for j in listed)
    print(f"\n{'kill point (check Job)':<40} resumed in")
    for p in killer.points:
        print(f"{p.name:<40} {p.resumed_in or 0:.1f}s")
    print(f"Jobs: {jobs}")
    assert len(kills) == 2, kills
    killer.assert_resumed()
    # one Job per rollout (v1's first rollout, v2's): none made twice, none lost
    assert len(jobs) == 2, jobs
    assert all(j.startswith("web-") and j.endswith("-prec-smoke") for j in jobs), jobs
    assert len({j.split("-")[1] for j in jobs}) == 2, jobs  # two rollout ids
    assert all((j.get("status") or {}).get("succeeded") == 1 for j in listed), listed
