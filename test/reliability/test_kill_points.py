"""The kill-point matrix: okra-manager SIGKILLed at each kind of moment of a rollout,
restarted at once (as a kubelet would), and the rollout checked to carry on exactly.

Points: the moment the AWS proxy forwards the first CreateRule, the canary's first
ModifyRule, a ModifyRule while a background analysis runs; during a timed pause, an
inline analysis, an indefinite pause; and the rollback's ModifyRule of a failed
version (its VersionBlocklist entry is written just before). After each restart the
rollout must resume with the same rollout id; at the end: one rollout id per version
in the names of all its Pauses and AnalysisRuns, the blocklist entry written once,
no weight regression and every sampled total 100. The matrix (point x outcome) is
printed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import CELL, Env, Metrics, OkraManager, cell_obj, cell_status, error_rate_template
from faultproxy import FaultProxy
from okra_runtime import GVK, Client
from okra_runtime.errors import NotFoundError
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from support import eventually

from .test_aws_faults import VERSION_ARG, Sampler

BLOCKLIST = GVK("okra.mumo.co", "v1alpha1", "VersionBlocklist")
RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")
PAUSE = GVK("okra.mumo.co", "v1alpha1", "Pause")


@dataclasses.dataclass
class Point:
    name: str
    rollout_before: str | None = None
    rollout_after: str | None = None
    step_before: int | None = None
    step_after: int | None = None
    resumed_in: float | None = None
    outcome: str = "not reached"


class Killer:
    """Kills okra-manager when the proxy forwards an armed operation, or on demand,
    and restarts it."""

    def __init__(self, okra: OkraManager, client: Client, ns: str) -> None:
        self.okra, self.client, self.ns = okra, client, ns
        self.armed: dict[str, Point] = {}
        self.points: list[Point] = []
        self.killed = asyncio.Event()
        self._pending: list[asyncio.Task[None]] = []

    def on_forward(self, op: str) -> None:
        point = self.armed.pop(op, None)
        if point is not None:
            self.okra.kill()  # the request is on its way to AWS; its sender is gone
            self._pending.append(asyncio.ensure_future(self._after_kill(point)))

    async def arm(self, op: str, name: str) -> Point:
        p = Point(name)
        self.points.append(p)
        await self._before(p)
        self.killed.clear()
        self.armed[op] = p
        return p

    async def kill_now(self, name: str) -> Point:
        p = Point(name)
        self.points.append(p)
        await self._before(p)
        self.okra.kill()
        await self._after_kill(p)
        return p

    async def wait(self, p: Point, within: float = 120) -> None:
        assert await eventually(lambda: _true(p.resumed_in is not None), within=within), p

    def _starts(self) -> int:
        return self.okra.log.read_text(errors="replace").count('"caches synced"')

    async def _before(self, p: Point) -> None:
        try:
            st = await cell_status(self.client, self.ns)
        except NotFoundError:
            return
        p.rollout_before, p.step_before = st.get("rolloutId"), st.get("currentStepIndex")

    async def _after_kill(self, p: Point) -> None:
        killed_at = time.monotonic()
        st = await cell_status(self.client, self.ns)
        p.rollout_before = st.get("rolloutId") or p.rollout_before
        p.step_before = st.get("currentStepIndex", p.step_before)
        starts = self._starts()
        self.okra.start()
        # Resumed: the restarted manager changed the Cell's status, or (where nothing is
        # to change, as in an indefinite pause) has its caches synced and reconciled.
        before = st

        async def progressed() -> bool:
            now = await cell_status(self.client, self.ns)
            return now != before or self._starts() > starts

        await eventually(progressed, within=120, interval=0.1)
        if self._starts() > starts and await cell_status(self.client, self.ns) == before:
            await asyncio.sleep(1.0)  # one reconcile of the unchanged Cell
        after = await cell_status(self.client, self.ns)
        p.rollout_after, p.step_after = after.get("rolloutId"), after.get("currentStepIndex")
        p.resumed_in = time.monotonic() - killed_at
        self.killed.set()


async def _true(v: bool) -> bool:
    return v


def rollout_ids(names: list[str], version: str) -> set[str]:
    out = set()
    for n in names:
        m = re.match(rf"web-{version}-([0-9a-f]{{8}})-", n)
        if m:
            out.add(m.group(1))
    return out


@pytest.mark.timeout(900)
async def test_kill_9_at_every_kind_of_moment_resumes_exactly(
    env: Env,
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    moto: MotoServer,
    tmp_path: Path,
) -> None:
    ns = namespace
    async with FaultProxy(moto.endpoint_url) as fp:
        okra = OkraManager(control_plane, dataclasses.replace(env, proxy=fp), tmp_path / "okra.log")
        killer = Killer(okra, rt_client, ns)
        fp.on_forward = killer.on_forward
        version_of: dict[str, str] = {}
        sampler = Sampler(env, version_of)
        sampling = asyncio.create_task(sampler.run())
        okra.start()
        try:
            await _scenario(env, metrics, rt_client, ns, killer, version_of)
        finally:
            sampling.cancel()
            await asyncio.gather(sampling, return_exceptions=True)
            okra.stop()
    runs = [r["metadata"]["name"] for r in (await rt_client.list(RUN, ns)).items]
    pauses = [p["metadata"]["name"] for p in (await rt_client.list(PAUSE, ns)).items]
    blocklist = await rt_client.get(BLOCKLIST, "web", ns)
    v2_ids, v3_ids = rollout_ids(runs + pauses, "v2"), rollout_ids(runs + pauses, "v3")
    rise = sampler.shares("v2")[: sampler.shares("v2").index(100) + 1]
    print("\nkill point                                   rollout id      step     resumed in")
    for p in killer.points:
        same = "same" if p.rollout_before == p.rollout_after else "ended/changed"
        if p.outcome == "not reached":
            p.outcome = "ok"
        print(
            f"{p.name:<44} {p.rollout_before!s:>8}->{same:<13} "
            f"{p.step_before}->{p.step_after}   {p.resumed_in or 0:.1f}s  {p.outcome}"
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
    for p in killer.points:
        assert p.resumed_in is not None, p
        if p.rollout_before and p.rollout_after:
            assert p.rollout_before == p.rollout_after, p


async def _scenario(
    env: Env,
    metrics: Metrics,
    c: Client,
    ns: str,
    killer: Killer,
    version_of: dict[str, str],
) -> None:
    async def status(pred: Any, within: float = 120) -> dict[str, Any]:
        async def ok() -> bool:
            return bool(pred(await cell_status(c, ns)))

        assert await eventually(ok, within=within, interval=0.1), await cell_status(c, ns)
        return await cell_status(c, ns)

    slow = error_rate_template(ns, metrics.url, name="slow-error-rate")
    slow["spec"]["metrics"][0]["count"] = 8  # an inline analysis long enough to kill in
    await c.create(error_rate_template(ns, metrics.url))
    await c.create(slow)
    version_of[await env.target_group("web-a-v1", "v1")] = "v1"
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
    await status(lambda s: s.get("health") == "Healthy")

    def at(version: str, index: int) -> Any:
        return lambda s: s.get("canaryVersion") == version and s.get("currentStepIndex") == index

    async def promote() -> None:
        st = await cell_status(c, ns)
        await c.patch(
            CELL,
            "web",
            {
                "metadata": {
                    "annotations": {
                        "okra.mumo.co/promote": f"{st['rolloutId']}/{st['currentStepIndex']}"
                    }
                }
            },
            namespace=ns,
        )

    p = await killer.arm("ModifyRule", "ModifyRule forwarded (canary setWeight 20)")
    version_of[await env.target_group("web-a-v2", "v2")] = "v2"
    await killer.wait(p)
    await status(at("v2", 1))
    await killer.kill_now("during a timed pause (background running)")
    await status(at("v2", 2))
    await killer.kill_now("during an inline analysis")
    await status(at("v2", 3))
    await killer.kill_now("during an indefinite pause")
    p = await killer.arm("ModifyRule", "ModifyRule forwarded (stepWeight 30)")
    await promote()
    await killer.wait(p)
    await status(at("v2", 5))
    await promote()
    await status(lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2")

    version_of[await env.target_group("web-a-v3", "v3")] = "v3"
    await status(at("v3", 1))
    # v3 goes bad only now: failing from the start, its background analysis could end the
    # rollout before step 1 was ever seen. The next ModifyRule is the rollback.
    p = await killer.arm("ModifyRule", "rollback ModifyRule forwarded (v3 blocked)")
    metrics.rates["v3"] = 0.5
    await killer.wait(p)
    await status(lambda s: s.get("health") == "Degraded")

    async def back() -> bool:
        return await env.rule_weights() == {"web-a-v2": 100}

    assert await eventually(back, within=60)
