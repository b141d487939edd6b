"""The kill-point matrix: okra-manager SIGKILLed at each kind of moment of a rollout,
restarted at once (as a kubelet would), and the rollout checked to carry on exactly.

Points: the moment the AWS proxy forwards the first CreateRule, the canary's first
ModifyRule, a ModifyRule while a background analysis runs; during a timed pause, an
inline analysis, an indefinite pause; and the rollback's ModifyRule of a failed
version (its VersionBlocklist entry is written just before). After each restart the
rollout must resume (test/reliability/harness.py's `Point.problems`): under the same
rollout id, at the step it was at or the next, its canary's weight never lower, or end as
it was ending; at the end: one rollout id per version
in the names of all its Pauses and AnalysisRuns, the blocklist entry written once,
no weight regression and every sampled total 100. The matrix (point x outcome) is
printed.
"""

from __future__ import annotations

from typing import Any

import pytest

from e2e.conftest import BLOCKLIST, PAUSE, RUN, VERSION_ARG, Metrics, cell_obj, promote, wait_status

from .harness import Killer, Point, Sampler, World, error_rate_templates, rollout_ids


@pytest.mark.timeout(900)
async def test_kill_9_at_every_kind_of_moment_resumes_exactly(
    world: World, metrics: Metrics
) -> None:
    env, rt_client, ns = world.env, world.client, world.ns
    async with world.aws_proxy() as fp, Sampler(env) as sampler:
        okra = world.manager(aws=fp)
        killer = Killer(okra, rt_client, ns)
        fp.on_forward = killer.on_forward
        with okra:
            await _scenario(world, metrics, killer, sampler)
    runs = [r["metadata"]["name"] for r in (await rt_client.list(RUN, ns)).items]
    pauses = [p["metadata"]["name"] for p in (await rt_client.list(PAUSE, ns)).items]
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    v2_ids, v3_ids = rollout_ids(runs + pauses, "v2"), rollout_ids(runs + pauses, "v3")
    rise = sampler.shares("v2")[: sampler.shares("v2").index(100) + 1]
    print("\nkill point                                   rollout id      step     resumed in")
    for p in killer.points:
        same = "same" if p.rollout_before == p.rollout_after else "ended/changed"
        print(
            f"{p.name:<44} {p.rollout_before!s:>8}->{same:<13} "
            f"{p.step_before}->{p.step_after}   {p.resumed_in or 0:.1f}s  "
            f"{'; '.join(p.problems()) or 'ok'}"
        )
    print(
        f"v2: rollout ids in its runs and pauses {sorted(v2_ids)} ({len(runs)} runs, "
        f"{len(pauses)} pauses in all); v3: {sorted(v3_ids)}; blocklist "
        f"{[i['version'] for i in blocklist['spec']['items']]}; {len(sampler.samples)} samples, "
        f"totals {sorted(sampler.totals)}; v2 share {sampler.shares('v2')}"
    )
    assert len(v2_ids) == 1
    assert len(v3_ids) == 1
    assert [i["version"] for i in blocklist["spec"]["items"]] == ["v3"]
    assert sampler.totals == {100}
    assert rise == sorted(rise)
    killer.assert_resumed()


async def _scenario(world: World, metrics: Metrics, killer: Killer, sampler: Sampler) -> None:
    env, c, ns = world.env, world.client, world.ns
    await error_rate_templates(c, ns, metrics.url, slow_count=8)
    await sampler.target_group("web-a-v1", "v1")
    p = await killer.arm("CreateRule", "CreateRule forwarded (first rollout)")
    inline = {"analysis": {"templates": [{"templateName": "slow-error-rate"}], "args": VERSION_ARG}}
    steps: list[dict[str, Any]] = [
        {"setWeight": 20},
        {"pause": {"duration": "8s"}},
        inline,
        {"pause": {}},
        {"stepWeight": 30},
        {"pause": {}},
    ]
    bg = {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG, "startingStep": 1}
    await c.create(cell_obj(ns, env.alb.listener_arn, steps, background=bg))
    await killer.wait(p)
    await wait_status(c, ns, lambda s: s.get("health") == "Healthy")

    def at(version: str, index: int) -> Any:
        return lambda s: s.get("canaryVersion") == version and s.get("currentStepIndex") == index

    p = await killer.arm("ModifyRule", "ModifyRule forwarded (canary setWeight 20)")
    await sampler.target_group("web-a-v2", "v2")
    await killer.wait(p)
    await wait_status(c, ns, at("v2", 1))
    await killer.kill_now("during a timed pause (background running)")
    await wait_status(c, ns, at("v2", 2))
    await killer.kill_now("during an inline analysis")
    await wait_status(c, ns, at("v2", 3))
    await killer.kill_now("during an indefinite pause")
    p = await killer.arm("ModifyRule", "ModifyRule forwarded (stepWeight 30)")
    await promote(c, ns)
    await killer.wait(p)
    await wait_status(c, ns, at("v2", 5))
    await promote(c, ns)
    await wait_status(
        c, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
    )

    await sampler.target_group("web-a-v3", "v3")
    await wait_status(c, ns, at("v3", 1))
    # v3 goes bad only now: failing from the start, its background analysis could end the
    # rollout before step 1 was ever seen. The next ModifyRule is the rollback.
    p = await killer.arm("ModifyRule", "rollback ModifyRule forwarded (v3 blocked)")
    metrics.rates["v3"] = 0.5
    await killer.wait(p)
    await wait_status(c, ns, lambda s: s.get("health") == "Degraded")

    assert await env.rule_becomes({"web-a-v2": 100}, interval=0.1)


def test_a_point_resumed_only_where_its_rollout_goes_on_or_ends_as_it_was_ending() -> None:
    """What the matrix counts as resumed (`Point.problems`), situation by situation."""
    at = {"rolloutId": "r1", "currentStepIndex": 2, "canaryVersion": "v2", "canaryWeight": 20}
    at |= {"stableVersion": "v1", "health": "Progressing"}

    def problems(after: dict[str, Any] | None, before: dict[str, Any] = at) -> list[str]:
        return Point("p", before=before, after=after).problems()

    assert problems(at) == []  # nothing to change: as it was
    assert problems(at | {"currentStepIndex": 3, "canaryWeight": 40}) == []
    assert problems(at | {"currentStepIndex": 4}) == ["step 2 became 4"]
    assert problems(at | {"currentStepIndex": 1}) == ["step 2 became 1"]
    assert problems(at | {"rolloutId": "r2"}) == ["rollout r1 became r2"]
    assert problems(at | {"canaryWeight": 0}) == ["canary weight 20 went back to 0"]
    assert problems({"stableVersion": "v2", "health": "Healthy"}) == []  # promoted
    assert problems({"stableVersion": "v1", "health": "Degraded"}) == []  # rolled back
    assert problems({"stableVersion": "v1", "health": "Healthy"}) == [
        "the rollout ended neither way"
    ]
    assert problems(None) == [
        "never resumed (the point was not reached, or its restart not awaited)"
    ]
    assert problems({"rolloutId": "r1"}, before={}) == []  # a first rollout began
