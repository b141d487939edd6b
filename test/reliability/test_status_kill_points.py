"""Kill points at the API server: okra-manager SIGKILLed the instant it writes a Cell,
Pause or AnalysisRun status, restarted at once (as a kubelet would).

The manager reaches kube-apiserver through `ApiServerProxy` (test/faultproxy.py), which
names each request as RBAC does (`update cells/status`). At each point the manager is
killed either *before* the write reaches the server (the request is dropped) or *after*
the server applied it (the reply is lost). After every restart the rollout carries on
with the same rollout id at the step it was at or the next, its canary's weight never
lower (harness.py's `Point.problems`); at the end there is one rollout id in the names
of all Pauses and AnalysisRuns, one Pause per pause step and one AnalysisRun per analysis
(inline, background) of the rollout, no weight regression, every sampled total 100. The
matrix (point x outcome) is printed. The check-Job point (the create of a precheck's Job,
killed before and after it reaches the server) is in the node suite, where the Job runs
(test/node/test_status_kill_points.py). Kill points at timed moments and at AWS writes are
in test_kill_points.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from e2e.conftest import PAUSE, RUN, VERSION_ARG, Metrics, cell_obj, promote, wait_status
from faultproxy import KubeCall
from okra_runtime import Client
from support import eventually

from .harness import Killer, Sampler, World, error_rate_templates, rollout_ids


def hooks(killer: Killer, kills: list[str]) -> tuple[Any, Any]:
    """The proxy's hooks: kill when an armed `before|after <verb> <resource>/status
    [<phase written>]` comes by (the phase makes a point exact: a Pause's Started write,
    not its Cancelled one)."""

    def fire(when: str, call: KubeCall) -> bool:
        for op in (f"{when} {call.op} {call.phase}".rstrip(), f"{when} {call.op}"):
            if op in killer.armed:
                kills.append(call.name)  # the object whose write it was
                killer.on_forward(op)
                return True
        return False

    def before(call: KubeCall) -> bool:
        return fire("before", call)  # True: dropped, the write never reaches the server

    def after(call: KubeCall) -> None:
        fire("after", call)

    return before, after


@pytest.mark.timeout(900)
async def test_kill_9_at_each_status_write_resumes_exactly(world: World, metrics: Metrics) -> None:
    env, rt_client, ns = world.env, world.client, world.ns
    async with world.aws_proxy() as fp, world.api_proxy() as api, Sampler(env) as sampler:
        okra = world.manager(aws=fp, api=api)
        killer = Killer(okra, rt_client, ns)
        kills: list[str] = []
        api.on_request, api.on_response = hooks(killer, kills)
        with okra:
            await _scenario(world, metrics, killer, sampler)
    runs = [r["metadata"]["name"] for r in (await rt_client.list(RUN, ns)).items]
    pauses = [p["metadata"]["name"] for p in (await rt_client.list(PAUSE, ns)).items]
    v2_ids = rollout_ids(runs + pauses, "v2")
    shares = sampler.shares("v2")
    print(
        f"\n{'kill point (status write)':<40} {'object':<26} rollout id         step    resumed in"
    )
    for p, obj in zip(killer.points, kills, strict=False):
        if p.rollout_before is None and p.rollout_after is None:
            rid = "- (no rollout)"
        elif p.rollout_before is None:
            rid = f"{p.rollout_after} (first written)"
        elif p.rollout_after is None:
            rid = f"{p.rollout_before} (ended)"
        else:
            rid = p.rollout_after if p.rollout_after == p.rollout_before else "CHANGED"
        print(
            f"{p.name:<40} {obj:<26} {rid:<18} {p.step_before}->{p.step_after}"
            f"    {p.resumed_in or 0:.1f}s"
        )
    print(
        f"v2: rollout ids {sorted(v2_ids)}; runs {sorted(runs)}; pauses {sorted(pauses)}; "
        f"{len(sampler.samples)} samples, totals {sorted(sampler.totals)}; v2 share {shares}"
    )
    assert len(v2_ids) == 1, (runs, pauses)
    # One run per analysis (the inline one and the background one), one Pause per pause step.
    assert len(runs) == 2, runs
    assert len(pauses) == 2, pauses
    assert sampler.totals == {100}
    assert shares == sorted(shares)
    killer.assert_resumed()


async def _scenario(world: World, metrics: Metrics, killer: Killer, sampler: Sampler) -> None:
    env, c, ns = world.env, world.client, world.ns

    def at(index: int) -> Any:
        return lambda s: s.get("canaryVersion") == "v2" and s.get("currentStepIndex") == index

    await error_rate_templates(c, ns, metrics.url, slow_count=6)
    await sampler.target_group("web-a-v1", "v1")
    steps: list[dict[str, Any]] = [
        {"setWeight": 20},
        {"pause": {}},
        {"analysis": {"templates": [{"templateName": "slow-error-rate"}], "args": VERSION_ARG}},
        {"setWeight": 50},
        {"pause": {}},
    ]
    bg = {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG, "startingStep": 1}

    # Each batch is armed before the test sets off what writes it; within a batch the
    # writes come in the order of the list, each after the restart the previous one caused
    # (a point that fires early would still be a kill at that kind of write).
    async def batch(*points: tuple[str, str]) -> list[Any]:
        return [await killer.arm(op, name) for op, name in points]

    async def waited(ps: list[Any]) -> None:
        for p in ps:
            await killer.wait(p)

    ps = await batch(("after update cells/status", "after Cell status (first rollout)"))
    await c.create(cell_obj(ns, env.alb.listener_arn, steps, background=bg))
    await waited(ps)
    await wait_status(
        c, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v1"
    )

    ps = await batch(
        ("before update cells/status", "before Cell status (rollout id recorded)"),
        ("after update cells/status", "after Cell status (canary)"),
        ("before update pauses/status Started", "before Pause status Started"),
    )
    await sampler.target_group("web-a-v2", "v2")
    await waited(ps)
    await wait_status(c, ns, at(1))

    async def background_done() -> bool:
        runs = (await c.list(RUN, ns)).items
        return any(
            r["metadata"]["name"].endswith("-bg")
            and (r.get("status") or {}).get("phase") == "Successful"
            for r in runs
        )

    assert await eventually(background_done, within=60)
    ps = await batch(
        ("after update analysisruns/status Running", "after AnalysisRun status Running"),
        ("before update analysisruns/status Successful", "before AnalysisRun status Successful"),
        ("after update pauses/status Started", "after Pause status Started"),
    )
    await promote(c, ns)  # an indefinite pause ends by promotion; its Pause ends with the rollout
    await waited(ps)
    await wait_status(c, ns, at(4))

    ps = await batch(
        ("before update cells/status Completed", "before Cell status Completed (complete)"),
        ("before update pauses/status Cancelled", "before Pause status Cancelled"),
        ("after update pauses/status Cancelled", "after Pause status Cancelled"),
    )
    await promote(c, ns)
    await waited(ps)
    await wait_status(
        c, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
    )

    assert await env.rule_becomes({"web-a-v2": 100}, interval=0.1)


async def _serving(c: Client, ns: str, version: str) -> None:
    await wait_status(
        c, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == version
    )
