"""A system Cell (seed 002) on a real control plane, with EKS and the ALB in moto (EKS
through the local-EKS proxy): the system Cell controller, the Cell controller and the ALB
config controller in one in-process Manager. The clusters' Argo CD cluster Secrets point at a
shared workload control plane (reachability is read through them).

Shown: web (two clusters, `stepWeight: 50`) and api (one cluster, blue/green) rolled out onto
their clusters; a new pair of web clusters with the second one late: nothing moves while it is
missing, the Cell says which cluster it waits for; once it is there, web walks to the pair
step by step (weights read back from moto), each step held until the Check okra made for
each new cluster (the Check controller, a real HTTP metrics endpoint) has passed since the
step began, and api stays."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from integration.test_cli import okra as okra_cli
from okra_controllers.albconfig.controller import setup as setup_albconfigs
from okra_controllers.analysis.check_controller import setup as setup_checks
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.controller import setup as setup_cells
from okra_controllers.cell.system.controller import setup as setup_system_cells
from okra_controllers.nlbconfig.controller import setup as setup_nlbconfigs
from okra_controllers.route53config.controller import setup as setup_route53configs
from okra_controllers.settings import Settings
from okra_runtime import GVK, Client, Manager, ManagerOptions
from okra_testkit.awsread import listener_forward, weighted_records
from okra_testkit.emulator import MotoServer, forward_weights, record_weights
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import cluster_secret
from okra_testkit.localeks import LocalEks
from okra_testkit.seed import LoadBalancer, Network, Seeder
from support import ErrorRates, eventually, serve_error_rates

WRITES = ("ModifyRule", "ModifyListener", "ChangeResourceRecordSets")  # kept whole

REPO = Path(__file__).resolve().parents[2]
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TARGET_GROUP = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
EVENT = GVK("events.k8s.io", "v1", "Event")
pytestmark = pytest.mark.timeout(300)


class System:
    def __init__(
        self, c: Client, ns: str, eks: LocalEks, plane: ControlPlane, network: Network
    ) -> None:
        self.c, self.ns, self.eks, self.plane, self.network = c, ns, eks, plane, network
        self.seed = Seeder(eks.config)
        self.tgs: dict[str, str] = {}
        self.since = 0.0  # of the writes `rule_writes` and `record_writes` read

    async def cluster(
        self, name: str, role: str, eks: bool = True, backend: str = "alb"
    ) -> dict[str, Any]:
        """A cluster's target group (with a registered target, made first, as Terraform
        does) and, unless `eks` is False, its EKS cluster tagged with its role and its Argo
        CD cluster Secret; the spec.clusters entry naming them. `backend`: `alb` (an HTTP
        target group for a rule of the shared ALB), `nlb` (a TCP one, for an NLB listener),
        `route53` (an HTTP one behind an ALB of the cluster's own, as each cluster's
        Ingress gets one: the cluster's record points at that ALB)."""
        short = f"{self.ns[-6:]}-{name}"[:32]
        protocol = "TCP" if backend == "nlb" else "HTTP"
        arn = await self.seed.target_group(short, self.network, protocol=protocol)
        await self.seed.register_targets(arn, await self.seed.instances(1, self.network))
        if backend == "route53":
            own = await self.seed.alb(short, self.network)
            async with self.eks.config.client("elbv2") as elb:
                await elb.create_listener(
                    LoadBalancerArn=own.arn,
                    Protocol="HTTP",
                    Port=8080,
                    DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}],
                )
        self.tgs[name] = arn
        if eks:
            await self.arrives(name, role)
        return {"name": name, "eks": {}, "labels": {"role": role, "targetGroupARN": arn}}

    async def arrives(self, name: str, role: str) -> None:
        await self.eks.register(name, self.plane, self.network, tags={"role": role})
        await self.c.create(cluster_secret(name, self.plane, namespace=self.ns))

    async def weights(self, listener: str, priority: int) -> dict[str, int]:
        async with self.eks.config.client("elbv2") as elb:
            rules = (await elb.describe_rules(ListenerArn=listener))["Rules"]
        names = {arn: n for n, arn in self.tgs.items()}
        for r in rules:
            if r["Priority"] == str(priority):
                tgs = r["Actions"][0]["ForwardConfig"]["TargetGroups"]
                return {names.get(t["TargetGroupArn"], "?"): t["Weight"] for t in tgs}
        # none there: say which priorities the listener has (a failed comparison shows it)
        return {f"no rule at {priority}; rules at {sorted(r['Priority'] for r in rules)}": 0}

    async def nlb_weights(self, listener: str) -> dict[str, int]:
        """The NLB listener's default forward, by cluster name, weights above 0."""
        names = {arn: n for n, arn in self.tgs.items()}
        shown = await listener_forward(self.eks.config, listener)
        return {names.get(arn, "?"): w for arn, w in shown.items()}

    async def records(self, config: AwsConfig, zone: str, name: str, app: str) -> dict[str, int]:
        """The weighted A records of `name`, by cluster name (a record's SetIdentifier is
        its AWSTargetGroup's name, `sys-<app>-<cluster>`)."""
        shown = await weighted_records(config, zone, name)
        return {k.removeprefix(f"sys-{app}-"): w for k, w in shown.items()}

    async def weights_become(self, listener: str, priority: int, want: dict[str, int]) -> None:
        """AWS shows `want` at the rule of `priority` (AWS's reads are eventually consistent
        with its writes; a rule changed outside okra is put back by its drift check)."""

        async def shown() -> bool:
            return await self.weights(listener, priority) == want

        if not await eventually(shown, within=30):
            raise AssertionError((await self.weights(listener, priority), await self.debug()))

    def record_rule_writes(self) -> None:
        """Keep every forward and record write okra sends from now on (ModifyRule,
        ModifyListener, ChangeResourceRecordSets): `rule_writes` and `record_writes` read
        them."""
        self.eks.proxy.keep_bodies.update(WRITES)
        self.since = time.monotonic()

    def rule_writes(self, action: str = "ModifyRule") -> list[dict[str, int]]:
        """Each ModifyRule (or ModifyListener) okra sent since `record_rule_writes`: weights
        above 0 by cluster name."""
        names = {arn: n for n, arn in self.tgs.items()}
        return [
            {names.get(arn, arn): w for arn, w in forward_weights(body).items() if w}
            for _, body in self.eks.proxy.sent(action, self.since)
        ]

    def record_writes(self, name: str) -> list[tuple[float, dict[str, int]]]:
        """After each ChangeResourceRecordSets of `name` okra sent since
        `record_rule_writes`: when it was sent, and the weighted records it leaves (each
        write folded over the last), SetIdentifier -> weight."""
        records: dict[str, int] = {}
        out = []
        for t, body in self.eks.proxy.sent("ChangeResourceRecordSets", self.since):
            for ident, weight in record_weights(body, name).items():
                if weight is None:
                    records.pop(ident, None)
                else:
                    records[ident] = weight
            out.append((t, dict(records)))
        return out

    async def set_clusters(self, clusters: list[dict[str, Any]]) -> None:
        """Edit the system's spec.clusters, as a person does (a merge patch)."""
        await self.c.patch(CELL, "sys", {"spec": {"clusters": clusters}}, namespace=self.ns)

    async def debug(self) -> dict[str, Any]:
        """What to show when a wait fails: the status, the target groups, the Events."""
        tgs = await self.c.list(TARGET_GROUP, self.ns)
        events = await self.c.list(EVENT, self.ns)
        return {
            "status": await self.status(),
            "targetGroups": {t["metadata"]["name"]: t["metadata"]["labels"] for t in tgs.items},
            "events": [f"{e.get('reason')}: {e.get('note')}" for e in events.items],
        }

    async def status(self) -> dict[str, Any]:
        return (await self.c.get(CELL, "sys", self.ns)).get("status") or {}


def assert_whole_pairs(writes: list[dict[str, int]], pair: set[str]) -> None:
    """Every rule write that gives the new pair weight gives it to both clusters of it."""
    assert writes, "no ModifyRule recorded"
    for w in writes:
        given = pair & set(w)
        assert given in (set(), pair), f"weight to {sorted(given)} alone: {w} (of {writes})"


def application(
    name: str, role: str, listener: str, priority: int, step: int, rates: str = ""
) -> dict[str, Any]:
    """An application behind its own listener rule; with `rates` (an ErrorRates URL), a
    check of each cluster's error rate gates every step."""
    checks = []
    if rates:
        url = f"{rates}/rate?cluster={{{{.Vars.eksClusterName}}}}"
        checks = [
            {
                "name": "errors",
                "analysis": {
                    "interval": "1s",
                    "provider": {"web": {"url": url, "jsonPath": "{$.rate}"}},
                    "max": 0.1,
                },
            }
        ]
    return {
        "checks": checks,
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": role}},
        "alb": {
            "listenerARN": listener,
            "forwardConfig": {
                "priority": priority,
                "targetGroup": {"arnFromLabel": "targetGroupARN"},
            },
            "updateStrategy": {"stepWeight": step, "totalWeight": 100},
        },
    }


class Okra:
    """The controllers in an in-process Manager that can be killed at any moment (its task
    cancelled: nothing is flushed or handed over) and started again, as a SIGKILLed
    okra-manager is."""

    def __init__(self, rt_client: Client, namespace: str, aws: Any) -> None:
        self.c, self.ns, self.aws = rt_client, namespace, aws
        self.task: asyncio.Task[None] | None = None
        self.mgr: Manager | None = None

    def start(self) -> None:
        settings = Settings(
            namespace=self.ns,
            okra_namespace=self.ns,
            aws=self.aws,
            concurrency=2,
            cluster_poll_interval=1.0,
            drift_check=5.0,
        )
        self.mgr = Manager(
            self.c, ManagerOptions(namespace=self.ns, metrics_address=None, probe_address=None)
        )
        for setup in (
            setup_system_cells,
            setup_cells,
            setup_albconfigs,
            setup_nlbconfigs,
            setup_route53configs,
            setup_checks,
        ):
            setup(self.mgr, settings)
        self.task = asyncio.create_task(self.mgr.start())

    async def kill(self) -> None:
        assert self.task is not None
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task
        self.task = None

    async def restart(self) -> None:
        await self.kill()
        self.start()

    async def stop(self) -> None:
        if self.task is not None and self.mgr is not None:
            self.mgr.stop()
            await asyncio.wait_for(self.task, 30)


@contextlib.asynccontextmanager
async def running(rt_client: Client, namespace: str, aws: Any) -> AsyncIterator[Okra]:
    okra = Okra(rt_client, namespace, aws)
    okra.start()
    try:
        yield okra
    finally:
        await okra.stop()


@pytest.fixture
async def rates() -> AsyncIterator[ErrorRates]:
    async with serve_error_rates() as r:
        yield r


@pytest.fixture
async def world(
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    workload_plane: ControlPlane,
    moto: MotoServer,
) -> AsyncIterator[tuple[System, LoadBalancer]]:
    """EKS in moto through the local-EKS proxy, a network and an ALB; the clusters' Argo CD
    Secrets point at the shared workload plane."""
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    async with LocalEks(moto) as eks:
        network = await Seeder(eks.config).network()
        alb = await Seeder(eks.config).alb(f"sys-{namespace[-8:]}", network)
        yield System(rt_client, namespace, eks, workload_plane, network), alb


async def test_the_system_waits_for_its_late_cluster_then_walks_web_and_keeps_api(
    world: tuple[System, LoadBalancer],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    rates: ErrorRates,
) -> None:
    s, alb = world
    v1 = [
        await s.cluster("web-1-v1", "web"),
        await s.cluster("web-2-v1", "web"),
        await s.cluster("api-v1", "api"),
    ]
    apps = [
        application("web", "web", alb.listener_arn, 10, 50, rates.url),
        application("api", "api", alb.listener_arn, 11, 100),
    ]
    cell = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "sys", "namespace": namespace},
        "spec": {"clusters": v1, "applications": apps},
    }
    await rt_client.create(cell)
    async with running(rt_client, namespace, s.eks.config) as okra:

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=90), await s.debug()
        await s.weights_become(alb.listener_arn, 10, {"web-1-v1": 50, "web-2-v1": 50})
        await s.weights_become(alb.listener_arn, 11, {"api-v1": 100})

        # A new web pair; the second cluster is not in EKS yet.
        s.record_rule_writes()
        web_1_v2 = await s.cluster("web-1-v2", "web")
        late = await s.cluster("web-2-v2", "web", eks=False)
        await s.set_clusters([web_1_v2, late, v1[2]])

        async def pending() -> bool:
            # Pending from the edit on (before EKS answers for web-1-v2 too), then only
            # the late cluster waited for
            st = await s.status()
            not_ready = [c["name"] for c in st.get("clusters") or [] if not c["ready"]]
            return st.get("phase") == "Pending" and not_ready == ["web-2-v2"]

        assert await eventually(pending, within=30), await s.debug()
        st = await s.status()
        assert "web-2-v2: not found in EKS" in st["message"]
        assert [c["name"] for c in st["clusters"] if not c["ready"]] == ["web-2-v2"]
        since = next(c["waitingSince"] for c in st["clusters"] if c["name"] == "web-2-v2")
        await okra.restart()  # killed while Pending: resumes Pending, the same wait
        await asyncio.sleep(2)  # two more looks at EKS: still nothing moves
        assert await s.weights(alb.listener_arn, 10) == {"web-1-v1": 50, "web-2-v1": 50}
        st = await s.status()
        assert st["phase"] == "Pending"
        assert [c["waitingSince"] for c in st["clusters"] if not c["ready"]] == [since]

        # It arrives: web walks to the new pair in steps of 50, api stays.
        await s.arrives("web-2-v2", "web")
        seen: list[int] = []

        async def walked() -> bool:
            w = await s.weights(alb.listener_arn, 10)
            share = sum(v for k, v in w.items() if k.endswith("-v2"))
            if not seen or seen[-1] != share:
                seen.append(share)
                if share == 50:  # killed mid-walk: resumes at the same step
                    await okra.restart()
            return share == 100 and (await s.status()).get("phase") == "Completed"

        assert await eventually(walked, within=120, interval=0.05), (seen, await s.debug())
        assert seen == [0, 50, 100]  # never backwards, across the restarts
        # no write gave the new version's weight to one cluster of the pair
        assert_whole_pairs(s.rule_writes(), {"web-1-v2", "web-2-v2"})
        started = [e for e in (await s.debug())["events"] if e.startswith("MigrationStarted")]
        assert len(started) == 3, started  # web v1, api v1, web v2: each once
        # each step waited for a run of the check on both new clusters
        assert {"web-1-v2", "web-2-v2"} <= set(rates.queries)
        assert await s.weights(alb.listener_arn, 11) == {"api-v1": 100}
        st = await s.status()
        apps_st = {a["name"]: a for a in st["applications"]}
        assert (apps_st["web"]["phase"], apps_st["web"]["version"]) == ("Synced", "v2")
        assert apps_st["web"]["serving"] == ["web-1-v2", "web-2-v2"]
        assert (apps_st["api"]["phase"], apps_st["api"]["version"]) == ("Synced", "v1")

        # `okra get cell` shows the system as a tree
        code, out, err = await okra_cli(control_plane, namespace, "get", "cell", "sys")
        assert code == 0, err
        assert "Cell sys (a system: 3 clusters, 2 applications)" in out
        assert "  web-1-v2  ready" in out
        assert "  web  Synced  (Cell sys-web)" in out
        assert "    └─ v2 serving: web-1-v2 (50%), web-2-v2 (50%)" in out
        assert "    └─ v1 serving: api-v1 (100%)" in out
        code, out, err = await okra_cli(control_plane, namespace, "status", "sys", "--no-watch")
        assert (code, err) == (0, "")
        assert "  application web: Synced" in out.splitlines()[1]

        # The system's notification subscriptions reach its application Cells, and leave
        # them when the system drops them.
        key = "notifications.okra.mumo.co/subscribe.on-rollout-failed.team"

        async def subscribed(want: str | None) -> bool:
            for app in ("web", "api"):
                cell = await rt_client.get(CELL, f"sys-{app}", namespace)
                if (cell["metadata"].get("annotations") or {}).get(key) != want:
                    return False
            return True

        for value in ("#deploys", None):
            note = {"metadata": {"annotations": {key: value}}}
            await rt_client.patch(CELL, "sys", note, namespace=namespace)
            done = functools.partial(subscribed, value)
            assert await eventually(done, within=30), await s.debug()


async def test_a_failed_check_waits_its_delay_across_a_restart_then_rolls_web_back(
    world: tuple[System, LoadBalancer], rt_client: Client, namespace: str, rates: ErrorRates
) -> None:
    """`failurePolicy: Rollback` with a delay: the application says it waits, a manager
    killed during the wait resumes the same wait (the time is in the status), then web's
    traffic goes back to the pair that served it; api is not touched."""
    s, alb = world
    v1 = [await s.cluster(n, r) for n, r in (("a-1", "web"), ("a-2", "web"), ("api", "api"))]
    web = application("web", "web", alb.listener_arn, 10, 50, rates.url)
    web["failurePolicy"] = {"type": "Rollback", "delaySeconds": 4}
    apps = [web, application("api", "api", alb.listener_arn, 11, 100)]
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": v1, "applications": apps},
        }
    )
    async with running(rt_client, namespace, s.eks.config) as okra:

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=90), await s.debug()
        rates.values["b-1"] = 0.5  # above max 0.1: the new pair's first cluster fails
        s.record_rule_writes()
        # the pair listed the other way round from the first test's: its target groups are
        # made in the other order
        b_1, b_2 = await s.cluster("b-1", "web"), await s.cluster("b-2", "web")
        v2 = [b_2, b_1, v1[2]]
        await s.set_clusters(v2)

        async def web_app() -> dict[str, Any]:
            st = await s.status()
            return next((a for a in st.get("applications") or [] if a["name"] == "web"), {})

        async def waiting() -> bool:
            return (await web_app()).get("phase") == "CheckFailed"

        assert await eventually(waiting, within=60), await s.debug()
        app = await web_app()
        assert "check sys-web-errors-b-1 failed" in app["message"]
        assert "Waiting 4 seconds before starting a rollback" in app["message"]
        assert await s.weights(alb.listener_arn, 10) == {
            "a-1": 25,
            "a-2": 25,
            "b-1": 25,
            "b-2": 25,
        }
        rollback_at = app["rollbackAt"]
        await okra.restart()

        async def reverted() -> bool:
            return (await web_app()).get("phase") == "Reverted"

        assert await eventually(reverted, within=60), await s.debug()
        assert (await web_app())["rollbackAt"] == rollback_at  # the same wait, not a new one
        await s.weights_become(alb.listener_arn, 10, {"a-1": 50, "a-2": 50})
        st = await s.status()
        assert st["phase"] == "Failed"
        api = next(a for a in st["applications"] if a["name"] == "api")
        assert api["phase"] == "Synced"
        assert await s.weights(alb.listener_arn, 11) == {"api": 100}
        said = [
            e
            for e in (await s.debug())["events"]
            if e.startswith("CheckFailed: application web")  # the system Cell's, not a Check's
        ]
        assert len(said) == 1, said
        assert_whole_pairs(s.rule_writes(), {"b-1", "b-2"})


async def test_replacing_one_cluster_keeps_the_other_s_share_then_a_failed_check_restores_it(
    world: tuple[System, LoadBalancer], rt_client: Client, namespace: str, rates: ErrorRates
) -> None:
    """web served by {a, b} is moved to {a, c}: at every reading of the rule from moto, a
    has its 50 and b's share walks to c (steps of 25: 13, 25, ...); every rule write okra
    sends lists a once, at 50, and totals 100. c's check then fails: the rollback puts
    the rule back to exactly {a: 50, b: 50}."""
    s, alb = world
    a, b = await s.cluster("a", "web"), await s.cluster("b", "web")
    web = application("web", "web", alb.listener_arn, 10, 25, rates.url)
    web["failurePolicy"] = {"type": "Rollback", "delaySeconds": 0}
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": [a, b], "applications": [web]},
        }
    )
    async with running(rt_client, namespace, s.eks.config):

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=90), await s.debug()
        await s.weights_become(alb.listener_arn, 10, {"a": 50, "b": 50})
        s.record_rule_writes()
        c = await s.cluster("c", "web")
        await s.set_clusters([a, c])

        readings: list[dict[str, int]] = []

        async def walked_then_reverted() -> bool:
            w = await s.weights(alb.listener_arn, 10)
            if not readings or readings[-1] != w:
                readings.append(w)
            if w.get("c", 0) >= 25:
                rates.values["c"] = 0.5  # half way: c's check fails from now on
            apps = (await s.status()).get("applications") or []
            return bool(apps) and apps[0].get("phase") == "Reverted"

        assert await eventually(walked_then_reverted, within=120, interval=0.05), (
            readings,
            await s.debug(),
        )
        await s.weights_become(alb.listener_arn, 10, {"a": 50, "b": 50})
        readings.append(await s.weights(alb.listener_arn, 10))
        # a's share never moved; b's walked to c in the planned steps, then came back
        assert all(r.get("a") == 50 and sum(r.values()) == 100 for r in readings), readings
        walk = [
            {"a": 50, "b": 50},
            {"a": 50, "b": 37, "c": 13},
            {"a": 50, "b": 25, "c": 25},
            {"a": 50, "b": 12, "c": 38},
        ]
        back = readings.index({"a": 50, "b": 50}, 1)
        assert readings[:back] == walk[:back], readings
        assert back >= 3, readings  # it reached c: 25 before the check failed
        assert set(map(str, readings[back:])) == {str({"a": 50, "b": 50})}, readings
        writes = s.rule_writes()
        assert writes, "no ModifyRule recorded"
        assert all(w["a"] == 50 and sum(w.values()) == 100 for w in writes), writes
        assert writes[-1] == {"a": 50, "b": 50}
        app = (await s.status())["applications"][0]
        assert (app["version"], app["servingVersion"], app["serving"]) == ("v2", "v1", ["a", "b"])
        assert "check sys-web-errors-c failed" in app["message"]


async def test_a_kept_cluster_walks_to_completion_then_okra_abort_restores_the_pair(
    world: tuple[System, LoadBalancer],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    rates: ErrorRates,
) -> None:
    """{k, l} to {k, m} to the end: k at 50 in every reading and write, and once {k, m}
    serves, k's second AWSTargetGroup is gone and the walk's end needed no write of its
    own. Then {k, m} to {k, n}, n's check failing with failurePolicy Stop: held at the
    first step, `okra abort sys --application web` puts back {k: 50, m: 50} exactly (the
    module's clusters are named apart: EKS in moto is shared by its tests)."""
    s, alb = world
    a, b = await s.cluster("k", "web"), await s.cluster("l", "web")
    web = application("web", "web", alb.listener_arn, 10, 50, rates.url)
    web["failurePolicy"] = {"type": "Stop"}
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": [a, b], "applications": [web]},
        }
    )
    readings: list[dict[str, int]] = []

    async def reading() -> dict[str, int]:
        w = await s.weights(alb.listener_arn, 10)
        if not readings or readings[-1] != w:
            readings.append(w)
        return w

    async def web_app() -> dict[str, Any]:
        return next(iter((await s.status()).get("applications") or []), {})

    async with running(rt_client, namespace, s.eks.config):

        async def completed() -> bool:
            await reading()
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=90), await s.debug()
        await s.weights_become(alb.listener_arn, 10, {"k": 50, "l": 50})
        s.record_rule_writes()
        readings.clear()
        c = await s.cluster("m", "web")
        await s.set_clusters([a, c])

        async def on_a_c() -> bool:
            w = await reading()
            app = await web_app()
            return w == {"k": 50, "m": 50} and (app.get("phase"), app.get("version")) == (
                "Synced",
                "v2",
            )

        assert await eventually(on_a_c, within=90, interval=0.05), (readings, await s.debug())
        assert readings == [
            {"k": 50, "l": 50},
            {"k": 50, "l": 25, "m": 25},
            {"k": 50, "m": 50},
        ], readings

        async def one_object_each() -> bool:
            tgs = (await s.debug())["targetGroups"]
            return sorted(tgs) == ["sys-web-k", "sys-web-m"]

        assert await eventually(one_object_each, within=30), await s.debug()
        assert s.rule_writes() == [{"k": 50, "l": 25, "m": 25}, {"k": 50, "m": 50}]

        rates.values["n"] = 0.5  # above max 0.1: n's check fails, Stop holds the walk
        readings.clear()
        d = await s.cluster("n", "web")
        await s.set_clusters([a, d])

        async def stopped() -> bool:
            await reading()
            return (await web_app()).get("phase") == "Stopped"

        assert await eventually(stopped, within=90, interval=0.05), (readings, await s.debug())
        assert await s.weights(alb.listener_arn, 10) == {"k": 50, "m": 25, "n": 25}
        # the tree shows k's one share in both sets: AWS has one weight for it
        code, out, err = await okra_cli(control_plane, namespace, "get", "cell", "sys")
        assert code == 0, err
        assert "    ├─ v2 serving: k (50%), m (25%)" in out, out
        assert "    └─ v3 going to: k (50%), n (25%)" in out, out
        code, out, err = await okra_cli(
            control_plane, namespace, "abort", "sys", "--application", "web"
        )
        assert code == 0, err
        assert out.startswith("cell sys-web: aborting rollout")
        await s.weights_become(alb.listener_arn, 10, {"k": 50, "m": 50})
        await reading()
        assert readings == [
            {"k": 50, "m": 50},
            {"k": 50, "m": 25, "n": 25},
            {"k": 50, "m": 50},
        ], readings
        writes = s.rule_writes()
        assert all(w["k"] == 50 and sum(w.values()) == 100 for w in writes), writes
        assert writes[-1] == {"k": 50, "m": 50}

        async def reverted() -> bool:  # no longer "stays where it is": it went back
            return (await web_app()).get("phase") == "Reverted"

        assert await eventually(reverted, within=30), await s.debug()
