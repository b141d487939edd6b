"""Every object a rollout leaves behind stays still once the rollout has ended.

One okra-manager (a real process, every poll and drift check at 1 s) watches one namespace
in which every way a rollout can end has been reached:

- single Cells: on an ALB, v1 -> v2 Completed (an analysis step passed); on an ALB, an
  NLB and Route 53, v1 -> v3 ended in Error (v3's analysis failed, all traffic back to
  v1, v3 blocked); on an ALB, v1 given a sixth target group, held Degraded (a forward
  action holds at most 5) until someone fixes it;
- system Cells (seed 002: two applications, web on a pair of clusters with a check per
  cluster, api on one; EKS in moto through the local-EKS proxy): web moved to a new pair
  and Completed; the new pair's check failed with `failurePolicy: Rollback` (Failed, web
  back on the old pair); the same with `failurePolicy: Stop` (Failed, web Stopped).

Once every end state is read back (status, config Synced, AWS's weights, and no Check
left: a system Cell's Checks gate its steps, and one left would measure and write its
status every interval for ever), all the namespace's Cells, load balancer configs,
VersionBlocklists, AnalysisRuns, Pauses, AWSTargetGroups and Checks are watched together
for 30 s: none may be made or deleted, change its resourceVersion, or grow a string or
list in its status.

Printed: the objects watched and the resourceVersions that moved.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from e2e.conftest import (
    BLOCKLIST,
    CELL,
    PAUSE,
    RUN,
    TG,
    Env,
    Metrics,
    OkraManager,
    cell_obj,
    error_rate_template,
)
from e2e.test_cell_nlb import NLB_CONFIG, NlbEnv, nlb_cell, nlb_env  # noqa: F401 -- fixture
from e2e.test_cell_route53 import (  # noqa: F401 -- fixture
    ANALYSIS,
    R53,
    R53_CONFIG,
    r53,
    r53_cell,
    synced,
)
from integration.test_system_cell import System, application
from okra_controllers.api.kinds import CHECK
from okra_runtime import GVK, Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import Seeder
from support import ErrorRates, eventually, serve_error_rates

from .harness import ALB_CONFIG, watch_idle

IDLE = 30.0
KINDS = (CELL, ALB_CONFIG, NLB_CONFIG, R53_CONFIG, BLOCKLIST, RUN, PAUSE, TG, CHECK)
ENDED = 300.0
"""How long a scenario may take to reach its end state (a loaded 2-core machine)."""


async def status(c: Client, ns: str, gvk: GVK, name: str) -> dict[str, Any]:
    return (await c.get(gvk, name, ns)).get("status") or {}


async def reaches(c: Client, ns: str, gvk: GVK, name: str, pred: Any, what: str) -> None:
    """`gvk` `name`'s status satisfies `pred` within ENDED seconds."""
    last: dict[str, Any] = {}

    async def ok() -> bool:
        nonlocal last
        last = await status(c, ns, gvk, name)
        return bool(pred(last))

    assert await eventually(ok, within=ENDED, interval=0.5), (gvk.kind, name, what, last)


async def config_settled(c: Client, ns: str, gvk: GVK, name: str) -> None:
    """The Cell's load balancer config has applied its latest spec."""

    async def ok() -> bool:
        obj = await c.get(gvk, name, ns)
        st = obj.get("status") or {}
        return synced(st) and st.get("observedGeneration") == obj["metadata"]["generation"]

    assert await eventually(ok, within=ENDED, interval=0.5), await status(c, ns, gvk, name)


async def blocked(c: Client, ns: str, name: str) -> list[str]:
    return [i["version"] for i in (await c.get(BLOCKLIST, name, ns))["spec"]["items"]]


def ended_in_error(st: dict[str, Any]) -> bool:
    return (
        st.get("phase") == "Error"
        and st.get("stableVersion") == "v1"
        and "version v3 failed" in (st.get("message") or "")
    )


async def alb_cell(env: Env, name: str, to: str, rates: Metrics, failing: bool) -> None:
    """A Cell on `env`'s ALB (its target groups labelled role=`name`) serving v1, then
    rolled out to `to` through 50 % and an analysis: Completed, or (`failing`) Error."""
    c, ns = env.client, env.namespace
    cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}, ANALYSIS])
    cell["metadata"]["name"] = name
    ingress = cell["spec"]["ingress"]["awsApplicationLoadBalancer"]
    ingress["targetGroupSelector"] = {"matchLabels": {"role": name}}
    await env.target_group(f"{name}-v1", "v1", labels={"role": name})
    await c.create(cell)
    await reaches(c, ns, CELL, name, lambda s: s.get("stableVersion") == "v1", "serving v1")
    if failing:
        rates.rates[to] = 0.5
    await env.target_group(f"{name}-{to}", to, labels={"role": name})
    if failing:
        await reaches(c, ns, CELL, name, ended_in_error, "Error, back on v1")
        assert await env.rule_becomes({f"{name}-v1": 100}, within=ENDED)
        assert await blocked(c, ns, name) == [to]
    else:
        await reaches(
            c,
            ns,
            CELL,
            name,
            lambda s: s.get("phase") == "Completed" and s.get("stableVersion") == to,
            f"Completed on {to}",
        )
        assert await env.rule_becomes({f"{name}-{to}": 100}, within=ENDED)
    await config_settled(c, ns, ALB_CONFIG, name)


async def alb_held_degraded(world: Env, name: str) -> None:
    """A Cell on an ALB of its own in `world` serving v1 on one target group, then given
    five more of v1, one at a time: six in one forward action, which an ALB does not take.
    The Cell is held Degraded (its weights as they were) and says what to fix."""
    c, ns = world.client, world.namespace
    alb = await world.aws.alb(f"{name}-{ns[-8:]}", world.network)
    env = dataclasses.replace(world, alb=alb, tg_arns={})
    cell = cell_obj(ns, env.alb.listener_arn, [{"setWeight": 50}])
    cell["metadata"]["name"] = name
    cell["spec"]["ingress"]["awsApplicationLoadBalancer"]["targetGroupSelector"] = {
        "matchLabels": {"role": name}
    }
    await env.target_group(f"{name}-v1", "v1", labels={"role": name})
    await c.create(cell)
    await reaches(c, ns, CELL, name, lambda s: s.get("stableVersion") == "v1", "serving v1")
    for n in range(2, 7):
        await env.target_group(f"{name}-{n}-v1", "v1", labels={"role": name})
    await reaches(
        c,
        ns,
        CELL,
        name,
        lambda s: (
            s.get("health") == "Degraded"
            and "forward action holds at most 5" in (s.get("message") or "")
        ),
        "held Degraded: six target groups",
    )
    await config_settled(c, ns, ALB_CONFIG, name)
    # what it wrote before the sixth came (a new target group of the serving version joins
    # at once): v1's, at most 5, all of the weight
    shown = await env.rule_weights()
    assert 1 <= len(shown) <= 5, shown
    assert all(n.startswith(name) and n.endswith("-v1") for n in shown), shown
    assert sum(shown.values()) == 100, shown


async def nlb_rolled_back(n: NlbEnv, rates: Metrics) -> None:
    """A canary on an NLB listener: v1, then v3 at 50 % fails its analysis: Error."""
    c, ns, name = n.env.client, n.env.namespace, "nlb"
    strategy = {"type": "Canary", "canary": {"steps": [{"setWeight": 50}, ANALYSIS]}}
    cell = nlb_cell(ns, n.nlb.listener_arn, strategy, key="awsNetworkLoadBalancer")
    cell["metadata"]["name"] = name  # its target groups: NlbEnv's, labelled role=web
    await n.target_group("nlb-v1", "v1")
    await c.create(cell)
    await reaches(c, ns, CELL, name, lambda s: s.get("stableVersion") == "v1", "serving v1")
    rates.rates["v3"] = 0.5
    await n.target_group("nlb-v3", "v3")
    await reaches(c, ns, CELL, name, ended_in_error, "Error, back on v1")

    async def back() -> bool:
        return await n.listener_weights() == {"nlb-v1": 100}

    assert await eventually(back, within=ENDED), await n.listener_weights()
    assert await blocked(c, ns, name) == ["v3"]
    await config_settled(c, ns, NLB_CONFIG, name)


async def route53_rolled_back(r: R53, rates: Metrics) -> None:
    """A canary of weighted records (TTL 1 s): v1, then v3 at 50 % fails its analysis:
    Error, and the Cell says the rollback is in effect (no note of a time still to come)."""
    c, ns, name = r.env.client, r.env.namespace, "dns"
    record = f"dns.a-{ns[-8:]}.example.test"
    await r.version("dns-v1", "v1", {"cell": name})
    await c.create(r53_cell(ns, name, r.zone, record, [{"setWeight": 50}, ANALYSIS], ttl=1))
    await reaches(c, ns, CELL, name, lambda s: s.get("stableVersion") == "v1", "serving v1")
    rates.rates["v3"] = 0.5
    await r.version("dns-v3", "v3", {"cell": name})
    await reaches(
        c,
        ns,
        CELL,
        name,
        lambda s: ended_in_error(s) and "not yet in effect" not in s["message"],
        "Error, back on v1, in effect",
    )
    await r.records_become(record, {"dns-v1": 100})
    assert await blocked(c, ns, name) == ["v3"]
    await config_settled(c, ns, R53_CONFIG, name)


async def system_cell(s: System, name: str, rates: ErrorRates, policy: str | None) -> None:
    """Seed 002's system Cell `name`: web on a pair of clusters (a check of each cluster's
    error rate gating every step of 50 %), api on one; Completed on v1, then web moved to a
    new pair. With `policy` (Rollback or Stop) the new pair's first cluster fails its check."""
    c, ns = s.c, s.ns
    alb = await s.seed.alb(f"{name}-{ns[-8:]}", s.network)
    web_role, api_role = f"{name}-web", f"{name}-api"
    v1 = [
        await s.cluster(f"{name}-1-v1", web_role),
        await s.cluster(f"{name}-2-v1", web_role),
        await s.cluster(f"{name}-api", api_role),
    ]
    web = application("web", web_role, alb.listener_arn, 10, 50, rates.url)
    if policy is not None:
        web["failurePolicy"] = {"type": policy, "delaySeconds": 1}
    api = application("api", api_role, alb.listener_arn, 11, 100)
    await c.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"clusters": v1, "applications": [web, api]},
        }
    )
    await reaches(c, ns, CELL, name, lambda st: st.get("phase") == "Completed", "Completed")
    if policy is not None:
        rates.values[f"{name}-1-v2"] = 0.5  # above max 0.1
    v2 = [
        await s.cluster(f"{name}-1-v2", web_role),
        await s.cluster(f"{name}-2-v2", web_role),
        v1[2],
    ]
    await c.patch(CELL, name, {"spec": {"clusters": v2}}, namespace=ns)

    def web_app(st: dict[str, Any]) -> dict[str, Any]:
        return next((a for a in st.get("applications") or [] if a["name"] == "web"), {})

    if policy is None:
        await reaches(
            c,
            ns,
            CELL,
            name,
            lambda st: (
                st.get("phase") == "Completed"
                and web_app(st).get("version") == "v2"
                and web_app(st).get("phase") == "Synced"
            ),
            "Completed on v2",
        )
        pair = {f"{name}-1-v2": 50, f"{name}-2-v2": 50}
    else:
        ended = "Reverted" if policy == "Rollback" else "Stopped"
        await reaches(
            c,
            ns,
            CELL,
            name,
            lambda st: st.get("phase") == "Failed" and web_app(st).get("phase") == ended,
            f"Failed, web {ended}",
        )
        pair = {f"{name}-1-v1": 50, f"{name}-2-v1": 50}
        if policy == "Stop":  # where the failed step left it
            pair = {f"{name}-1-v1": 25, f"{name}-2-v1": 25, f"{name}-1-v2": 25, f"{name}-2-v2": 25}
    await s.weights_become(alb.listener_arn, 10, pair)
    await s.weights_become(alb.listener_arn, 11, {f"{name}-api": 100})

    async def checks_gone() -> bool:  # they gate steps; none is left to gate
        owned = [
            k["metadata"]["name"]
            for k in (await c.list(CHECK, ns)).items
            if any(r["name"] == name for r in k["metadata"].get("ownerReferences") or [])
        ]
        return not owned

    assert await eventually(checks_gone, within=ENDED), (await c.list(CHECK, ns)).items


@pytest.mark.timeout(900)
async def test_every_object_of_every_ended_rollout_stays_still_for_30_seconds(
    r53: R53,  # noqa: F811 -- the fixture imported above
    nlb_env: NlbEnv,  # noqa: F811 -- the fixture imported above
    metrics: Metrics,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    moto: MotoServer,
    tmp_path: Path,
) -> None:
    c, ns = rt_client, namespace
    await c.create(error_rate_template(ns, metrics.url))
    async with LocalEks(moto) as eks, serve_error_rates() as rates:
        network = await Seeder(eks.config).network()
        s = System(c, ns, eks, workload_plane, network)
        # One manager for all of them, its AWS through the local-EKS proxy (EKS clusters
        # answer with the workload plane's address there; everything else is moto's).
        okra = OkraManager(
            control_plane,
            r53.env.through(eks.proxy),
            tmp_path / "okra-manager.log",
            args=[
                "--eks-poll-interval", "1",
                "--cluster-poll-interval", "1",
                "--drift-check-period", "1",
            ],
        )  # fmt: skip
        with okra:
            await asyncio.gather(
                alb_cell(r53.env, "alb-ok", "v2", metrics, failing=False),
                alb_cell(nlb_env.env, "alb-rb", "v3", metrics, failing=True),
                alb_held_degraded(r53.env, "alb-six"),
                nlb_rolled_back(nlb_env, metrics),
                route53_rolled_back(r53, metrics),
                system_cell(s, "sys-ok", rates, None),
                system_cell(s, "sys-rb", rates, "Rollback"),
                system_cell(s, "sys-st", rates, "Stop"),
            )
            idle = await watch_idle(c, ns, KINDS, IDLE)
            print(f"\nafter every rollout ended, {IDLE:.0f} s idle: {idle.report()}")
            print("watched:", ", ".join(idle.watched))
            assert not idle.changes, "\n".join(idle.changes)
            kinds = {k.split()[0] for k in idle.watched}
            assert kinds >= {k.kind for k in KINDS if k not in (PAUSE, CHECK)}, kinds
            assert not okra.error_lines(), okra.last_lines()
