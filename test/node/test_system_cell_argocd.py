"""Seed 002's system Cell end to end, every link real: okra-manager (a process, every
controller), a real Argo CD (repo-server, application-controller, applicationset-controller)
in the test's namespace of the management control plane, eight workload control planes
(`fleet`) that are EKS clusters in moto through the local-EKS bridge (DescribeCluster answers
with the plane; okra-manager's AWS calls go through its proxy), moto for the ALB, the check
Jobs run by the Job controller and the kubelet on the node (the node suite's plane, busybox),
and a local stand-in for Datadog's v1 query API.

The system starts on an old set (mycluster-web-1-v1, mycluster-web-2-v1, mycluster-api-v0,
mycluster-backgroundjobs-v0: seed 002's Cell with those clusters in `spec.clusters`) and
completes. Then seed 002's Cell (`test/fixtures/seed-002-system-cell.yaml`) is applied as it
stands, while mycluster-web-2-v2 is not in EKS yet: the Cell waits and says so, nothing moves;
once the cluster arrives, web walks to its new pair in steps of 10 (stepWeight: 10), api
moves all at once (stepWeight: 100), backgroundjobs (DeleteBeforeCreate, no ALB) leaves its
old cluster before its new one gets the application, and the system ends Completed with
every application Synced. Then the old set is applied again while api's check fails on its
old cluster: the check is retried (the seed's "run all the checks with retries": 3 failed
tries, `retries` defaulting to 2), then api waits the seed's 60 seconds ("Waiting 60 seconds
before starting a rollback") and goes back to mycluster-api-v1, while web moves back to its
old pair. Both Cells are applied with `kubectl apply -f`, as a user applies
them. The weights are read from moto every 50 ms; a sampler checks the order of everything
okra does against what it waits for.

What the test fills in the fixture (its `...` placeholders), and its only other changes:
- apiVersion's group is okra.mumo.co; metadata.namespace is the test's; the `status` block
  (the sketch's example of what okra reports) is left out.
- ARNs: the api cluster's `targetGroupARN` label, both `alb.listenerARN`s (one listener of an
  ALB in moto, rules at priorities 10 and 11).
- `argocd.applicationSet`: web's `name` is `web`; api's and backgroundjobs' `selector` is
  `matchLabels: {app: <application>}` (the label the ApplicationSets put on their
  Applications).
- The `dd` checks: `query` is a Datadog query over the same `{{.Vars...}}` the sketch names,
  and `interval: 1s` (the default, 10s, would make web's ten steps last over a minute and a
  half). As in the sketch they name no provider: okra-manager runs them on its default
  metrics provider (`--default-metrics-provider '{"datadog": {}}'`; the Datadog address and
  keys are in the `datadog` Secret of okra's namespace, as for any Datadog analysis).
- The precheck `run-test`: `image` is the node's busybox (imported into the node), `command`
  is `sh -c`, `args` a script that prints a line and exits 0.
- web's `alb.forwardConfig.targetGroup.arn: ...`: the sketch says beside it that `arn` does not
  work when the selector matches two or more clusters, and web's matches two. It is the
  sketch's commented alternative, `arnFromLabel: targetGroupARN` (what api uses), with a
  `targetGroupARN` label on each web cluster, naming that cluster's target group.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

import iampolicy
from conftest import Fleet
from e2e.conftest import CELL, Env, OkraManager
from e2e.test_cell_argocd import APPLICATION, SECRET, Sampler, application_set
from okra_runtime import GVK, Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD
from okra_testkit.images import BUSYBOX_IMAGE
from okra_testkit.localeks import LocalEks
from support import eventually

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "test" / "fixtures" / "seed-002-system-cell.yaml"
SYSTEM = "mysystem"
ROLE = "myservice-role"
SECRET_TYPE = "argocd.argoproj.io/secret-type"
OLD = {
    "mycluster-web-1-v1": "web",
    "mycluster-web-2-v1": "web",
    "mycluster-api-v0": "api",
    "mycluster-backgroundjobs-v0": "backgroundjobs",
}
NEW = {
    "mycluster-web-1-v2": "web",
    "mycluster-web-2-v2": "web",
    "mycluster-api-v1": "api",
    "mycluster-backgroundjobs-v1": "backgroundjobs",
}
LATE = "mycluster-web-2-v2"
PRIORITY = {"web": 10, "api": 11}
DD_KEYS = {"api-key": "dd-system-api", "app-key": "dd-system-app"}
JOB = GVK("batch", "v1", "Job")
PRECHECK = "echo 'run-test: 12 of 12 passed'"
pytestmark = pytest.mark.timeout(900)


class Datadog:
    """GET /api/v1/query: one series whose last point is 0 (no errors) for any query, or 1
    (over the seed's max, 0.1) for a query about a cluster in `failing`; 403 unless both keys
    match. `queries` are the queries asked, in order."""

    def __init__(self) -> None:
        self.queries: list[str] = []
        self.failing: set[str] = set()

    async def query(self, request: web.Request) -> web.Response:
        if (
            request.headers.get("DD-API-KEY") != DD_KEYS["api-key"]
            or request.headers.get("DD-APPLICATION-KEY") != DD_KEYS["app-key"]
        ):
            return web.json_response({"errors": ["Forbidden"]}, status=403)
        q = request.query["query"]
        self.queries.append(q)
        bad = any(f"cluster:{c}," in q for c in self.failing)
        point = [int(float(request.query["to"]) * 1000), 1.0 if bad else 0.0]
        return web.json_response(
            {"status": "ok", "query": q, "series": [{"metric": "errors", "pointlist": [point]}]}
        )


@pytest.fixture
async def datadog(rt_client: Client, namespace: str) -> AsyncIterator[Datadog]:
    """The stand-in, serving; its address and keys in the `datadog` Secret of okra's namespace."""
    dd = Datadog()
    app = web.Application()
    app.router.add_get("/api/v1/query", dd.query)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    address = str(server.make_url("")).rstrip("/")
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "datadog", "namespace": namespace},
            "stringData": {**DD_KEYS, "address": address},
        }
    )
    try:
        yield dd
    finally:
        await server.close()


@pytest.fixture
def argo(control_plane: ControlPlane, namespace: str) -> Iterator[ArgoCD]:
    """Argo CD in the test's namespace (the system Cell reads cluster Secrets and Applications
    in its own), with an ApplicationSet per application: a ConfigMap onto every cluster
    Secret labelled `myservice-role: <application>`, in the test's namespace there."""
    with ArgoCD(control_plane, namespace=namespace) as a:
        assert a.git is not None
        files = {}
        for name in ("web", "api", "backgroundjobs"):
            config_map = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": {"app": name},
            }
            files[f"{name}/configmap.yaml"] = yaml.safe_dump(config_map)
        a.git.commit(files, "the system's applications")
        a.apply(
            [
                application_set(a, namespace, name, {ROLE: name}, labels={"app": name})
                for name in ("web", "api", "backgroundjobs")
            ]
        )
        yield a


def seed_cell(namespace: str, listener: str, tgs: dict[str, str]) -> dict[str, Any]:
    """The fixture, filled in as the module's docstring says."""
    doc: dict[str, Any] = yaml.safe_load(FIXTURE.read_text())
    doc["apiVersion"] = "okra.mumo.co/v1alpha1"
    doc["metadata"]["namespace"] = namespace
    del doc["status"]
    spec = doc["spec"]
    for c in spec["clusters"]:
        if c["labels"]["role"] in ("web", "api"):
            c["labels"]["targetGroupARN"] = tgs[c["name"]]
    apps = {a["name"]: a for a in spec["applications"]}
    apps["web"]["argocd"]["applicationSet"]["name"] = "web"
    target_group = apps["web"]["alb"]["forwardConfig"]["targetGroup"]
    assert target_group == {"arn": "..."}
    apps["web"]["alb"]["forwardConfig"]["targetGroup"] = {"arnFromLabel": "targetGroupARN"}
    for name in ("api", "backgroundjobs"):
        apps[name]["argocd"]["applicationSet"]["selector"] = {"matchLabels": {"app": name}}
    for name in ("web", "api"):
        apps[name]["alb"]["listenerARN"] = listener
        for check in apps[name]["checks"]:
            query = check["analysis"]["query"]
            cluster = (
                "{{.Vars.eksClusterName}}" if "eksClusterName" in query else "{{.Vars.clusterName}}"
            )
            check["analysis"]["query"] = (
                "sum:trace.http.request.errors{cluster:" + cluster + ",listener:"
                "{{.Vars.albListenerARN}},target_group:{{.Vars.targetGroupARN}}}.as_rate()"
            )
            check["analysis"]["interval"] = "1s"
    job = apps["backgroundjobs"]["prechecks"][0]["job"]["template"]["spec"]
    assert job == {"image": "...", "command": "...", "args": "..."}
    job.update(image=BUSYBOX_IMAGE, command=["sh", "-c"])
    job["args"] = [PRECHECK]
    return doc


def old_cell(seed: dict[str, Any], tgs: dict[str, str]) -> dict[str, Any]:
    """The seed's Cell on the old set of clusters."""
    doc = copy.deepcopy(seed)
    doc["spec"]["clusters"] = [
        {
            "name": name,
            "eks": {},
            "labels": {"role": role, **({"targetGroupARN": tgs[name]} if name in tgs else {})},
        }
        for name, role in OLD.items()
    ]
    return doc


class SystemSampler(Sampler):
    """`Sampler`'s facts for the system: one sample reads the cluster Secrets, then the
    weights in moto (with the elbv2 client `elb`), then the Applications, then the system
    Cell's status (each fact okra acted on is read before what it waited for)."""

    def __init__(self, c: Client, ns: str, env: Env, tgs: dict[str, str], elb: Any) -> None:
        super().__init__(c, ns, None)
        self.aws, self.tgs, self.elb = env, tgs, elb

    async def sample(self) -> None:
        now: set[str] = set()
        secrets = await self.c.list(SECRET, self.ns, label_selector=f"{SECRET_TYPE}=cluster")
        for s in secrets.items:
            cluster = s["metadata"]["name"].removeprefix("cluster-")
            role = (OLD | NEW).get(cluster)
            labelled = role is not None and (s["metadata"].get("labels") or {}).get(ROLE) == role
            now.add(f"{'labelled' if labelled else 'unlabelled'} {cluster}")
        for app in PRIORITY:
            share = (await shares(self.elb, self.aws, self.tgs, app)).get("new", 0)
            if share:
                now.add(f"{app} moved")
            now.add(f"{app} {share}")
        apps = {
            a["metadata"]["name"]: a.get("status") or {}
            for a in (await self.c.list(APPLICATION, self.ns)).items
        }
        for name, st in apps.items():
            now.add(f"app {name}")
            sync = (st.get("sync") or {}).get("status")
            health = (st.get("health") or {}).get("status")
            if sync == "Synced" and health == "Healthy":
                now.add(f"healthy {name}")
        names = {f"{role}-{c}" for c, role in (OLD | NEW).items()}
        now |= {f"no {name}" for name in names if name not in apps}
        self.last["apps"] = apps
        st = (await self.c.get(CELL, SYSTEM, self.ns)).get("status") or {}
        ready = {c["name"] for c in st.get("clusters") or [] if c.get("ready")}
        if set(NEW) <= ready:
            now.add("all new clusters ready")
        now.add(f"system {st.get('phase')}")
        not_ready = [c["name"] for c in st.get("clusters") or [] if not c.get("ready")]
        message = st.get("message") or ""
        if st.get("phase") == "Pending" and len(not_ready) == 1 and "not found in EKS" in message:
            now.add(f"system waits for {not_ready[0]}")
        self.last["system"] = st
        t = time.monotonic()
        for fact in now:
            self.seen.setdefault(fact, t)
        for if_, then in self.rules:
            if if_ in now and then not in now:
                self.broken.append(f"{if_} without {then}: {sorted(now)}")


async def shares(elb: Any, env: Env, tgs: dict[str, str], app: str) -> dict[str, int]:
    """The weights of `app`'s listener rule in moto (read with the elbv2 client `elb`), summed
    over its old and its new clusters."""
    side = {arn: ("new" if name in NEW else "old") for name, arn in tgs.items()}
    rules = (await elb.describe_rules(ListenerArn=env.alb.listener_arn))["Rules"]
    out: dict[str, int] = {}
    for r in rules:
        if r["Priority"] != str(PRIORITY[app]):
            continue
        for t in r["Actions"][0]["ForwardConfig"]["TargetGroups"]:
            key = side.get(t["TargetGroupArn"], t["TargetGroupArn"])
            out[key] = out.get(key, 0) + t["Weight"]
    return {k: v for k, v in out.items() if v}


@contextlib.asynccontextmanager
async def watch_weights(env: Env, tgs: dict[str, str]) -> AsyncIterator[dict[str, list[int]]]:
    """Every 50 ms, each application's share on its new clusters in moto: the sequence of
    distinct values seen, per application."""
    seen: dict[str, list[int]] = {app: [] for app in PRIORITY}

    async def poll() -> None:
        async with env.aws.config.client("elbv2") as elb:
            while True:
                for app, walk in seen.items():
                    share = (await shares(elb, env, tgs, app)).get("new", 0)
                    if not walk or walk[-1] != share:
                        walk.append(share)
                await asyncio.sleep(0.05)

    task = asyncio.create_task(poll())
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def kubectl_apply(plane: ControlPlane, doc: dict[str, Any]) -> None:
    """`kubectl apply -f` of `doc`, as a user applies a manifest."""
    await asyncio.to_thread(plane.kubectl, "apply", "-f", "-", input_text=yaml.safe_dump(doc))


async def back_to_the_old_set_api_failing(
    plane: ControlPlane,
    c: Client,
    ns: str,
    datadog: Datadog,
    seed: dict[str, Any],
    tgs: dict[str, str],
    elb: Any,
    env: Env,
) -> None:
    """The old set applied again, api's check failing on mycluster-api-v0: retried three
    times, then the seed's wait (60 s, no failurePolicy in the seed), then api back on
    mycluster-api-v1; web moves back to its old pair meanwhile."""
    datadog.failing.add("mycluster-api-v0")
    about_v0 = "cluster:mycluster-api-v0,"
    await kubectl_apply(plane, old_cell(seed, tgs))

    async def api() -> dict[str, Any]:
        st = (await c.get(CELL, SYSTEM, ns)).get("status") or {}
        return next((a for a in st.get("applications") or [] if a["name"] == "api"), {})

    async def waiting() -> bool:
        return "Waiting 60 seconds before starting a rollback" in (await api()).get("message", "")

    assert await eventually(waiting, within=240, interval=0.2), await api()
    decided = time.monotonic()
    st = await api()
    assert st["phase"] == "CheckFailed", st
    assert "failed 3 tries in a row (retries: 2)" in st["message"], st
    # each try is a run of the check since the step began: three runs, each one failing
    assert sum(about_v0 in q for q in datadog.queries) >= 3, datadog.queries
    assert await shares(elb, env, tgs, "api") == {"old": 100}  # blue/green: all moved

    async def reverted() -> bool:
        return (await api()).get("phase") == "Reverted"

    assert await eventually(reverted, within=180, interval=0.2), await api()
    waited = time.monotonic() - decided
    # the seed's 60 s, less what it took to see the decision (a loaded machine samples late)
    assert waited >= 50, waited
    st = await api()
    assert st["message"].endswith("rolled back: traffic back to mycluster-api-v1"), st
    assert await shares(elb, env, tgs, "api") == {"new": 100}

    async def web_back() -> bool:
        return await shares(elb, env, tgs, "web") == {"old": 100}

    assert await eventually(web_back, within=240, interval=0.5), await shares(elb, env, tgs, "web")


async def test_seed_002_system_cell_migrates_web_api_and_backgroundjobs(
    argo: ArgoCD,
    fleet: Fleet,
    env: Env,
    moto: MotoServer,
    datadog: Datadog,
    control_plane: ControlPlane,
    rt_client: Client,
    namespace: str,
    tmp_path: Path,
) -> None:
    ns = namespace
    # Eight workload clusters (Argo CD tells clusters apart by server URL), registered with
    # Argo CD by a cluster Secret each (no application labels: okra adds them).
    planes = dict(
        zip(
            OLD | NEW,
            await asyncio.gather(*(asyncio.to_thread(fleet, n) for n in OLD | NEW)),
            strict=True,
        )
    )
    for name, plane in planes.items():
        argo.register_cluster(name, plane)
    tgs = {}
    for name, role in (OLD | NEW).items():
        if role in PRIORITY:
            tgs[name] = await env.aws.target_group(f"{name[10:]}-{ns[-6:]}"[:32], env.network)
            await env.aws.register_targets(tgs[name], await env.aws.instances(1, env.network))
    seed = seed_cell(ns, env.alb.listener_arn, tgs)

    async with (
        LocalEks(moto) as eks,
        env.aws.config.client("elbv2") as elb,
    ):
        # The EKS clusters are made in moto directly: only okra-manager's calls go through the
        # local-EKS proxy (checked against the IAM policy at the end).
        for name, role in (OLD | NEW).items():
            await eks.register(name, planes[name])
            if name != LATE:
                await env.aws.eks_cluster(name, env.network, tags={"role": role})
        okra = OkraManager(
            control_plane,
            env.through(eks.proxy),
            tmp_path / "okra-manager.log",
            args=[
                "--cluster-poll-interval",
                "1",
                "--default-metrics-provider",
                '{"datadog": {}}',
            ],
        )
        with okra:
            await kubectl_apply(control_plane, old_cell(seed, tgs))
            s = SystemSampler(rt_client, ns, env, tgs, elb)

            async def phase(want: str) -> bool:
                st = (await rt_client.get(CELL, SYSTEM, ns)).get("status") or {}
                return st.get("phase") == want

            assert await eventually(lambda: phase("Completed"), within=300, interval=0.5), (
                (await rt_client.get(CELL, SYSTEM, ns)).get("status"),
                okra.last_lines(),
            )
            assert await shares(elb, env, tgs, "web") == {"old": 100}
            assert await shares(elb, env, tgs, "api") == {"old": 100}
            for name, role in OLD.items():
                await s.until(f"labelled {name}", within=10)
                await s.until(f"healthy {role}-{name}", within=60)
            (first,) = (await rt_client.list(JOB, ns)).items
            assert (
                first["status"].get("succeeded") == 1
            )  # backgroundjobs' first rollout ran its precheck

            s.rules = [
                ("web moved", "healthy web-mycluster-web-1-v2"),
                ("web moved", "healthy web-mycluster-web-2-v2"),
                ("api moved", "healthy api-mycluster-api-v1"),
                ("unlabelled mycluster-web-1-v1", "web 100"),
                ("unlabelled mycluster-web-2-v1", "web 100"),
                ("unlabelled mycluster-api-v0", "api 100"),
                (
                    "labelled mycluster-backgroundjobs-v1",
                    "no backgroundjobs-mycluster-backgroundjobs-v0",
                ),
            ]
            async with watch_weights(env, tgs) as walks:
                # Seed 002's Cell, while mycluster-web-2-v2 is not in EKS yet.
                await kubectl_apply(control_plane, seed)
                await s.until(f"system waits for {LATE}", within=60)
                st = s.last["system"]
                assert st["message"].startswith(f"waiting for clusters: {LATE}: not found in EKS")
                assert [c["name"] for c in st["clusters"] if not c["ready"]] == [LATE], st
                for _ in range(3):  # a few more looks at EKS: nothing moves
                    await s.sample()
                assert walks == {"web": [0], "api": [0]}
                moved = [f"labelled {n}" for n in NEW] + [f"unlabelled {n}" for n in OLD]
                assert not [fact for fact in moved if fact in s.seen], s.seen

                await env.aws.eks_cluster(LATE, env.network, tags={"role": "web"})
                await s.until("labelled mycluster-backgroundjobs-v1", within=240)
                await s.until("web 100", within=400)
                await s.until("api 100", within=60)
                for name in OLD:
                    await s.until(f"unlabelled {name}", within=120)
                    await s.until(f"no {OLD[name]}-{name}", within=120)
                await s.until("system Completed", within=120)
            assert s.broken == []
            assert walks["web"] == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100], walks
            assert walks["api"] == [0, 100], walks
            s.order(
                "all new clusters ready",
                "healthy web-mycluster-web-2-v2",
                "web moved",
                "unlabelled mycluster-web-2-v1",
            )
            s.order("all new clusters ready", "healthy api-mycluster-api-v1", "api moved")
            s.order(
                "unlabelled mycluster-backgroundjobs-v0",
                "labelled mycluster-backgroundjobs-v1",
                "healthy backgroundjobs-mycluster-backgroundjobs-v1",
            )
            st = s.last["system"]
            assert {a["name"]: a["phase"] for a in st["applications"]} == {
                "web": "Synced",
                "api": "Synced",
                "backgroundjobs": "Synced",
            }, st
            serving = {a["name"]: a["serving"] for a in st["applications"]}
            assert serving == {
                "web": ["mycluster-web-1-v2", "mycluster-web-2-v2"],
                "api": ["mycluster-api-v1"],
                "backgroundjobs": ["mycluster-backgroundjobs-v1"],
            }
            assert await shares(elb, env, tgs, "web") == {"new": 100}
            assert await shares(elb, env, tgs, "api") == {"new": 100}
            # A Check per new cluster, its query rendered for it; each of web's ten steps
            # waited for a run of both of web's (a run since the step began), api's one step
            # for a run of api's.
            for name, runs in (
                ("mycluster-web-1-v2", 10),
                ("mycluster-web-2-v2", 10),
                ("mycluster-api-v1", 1),
            ):
                query = f"cluster:{name},listener:{env.alb.listener_arn},target_group:{tgs[name]}}}"
                assert sum(query in q for q in datadog.queries) >= runs, datadog.queries
            # the precheck ran once more, for backgroundjobs' new cluster
            jobs = (await rt_client.list(JOB, ns)).items
            assert len(jobs) == 2
            assert all(j["status"].get("succeeded") == 1 for j in jobs), jobs
            await back_to_the_old_set_api_failing(
                control_plane, rt_client, ns, datadog, seed, tgs, elb, env
            )
        # nothing went wrong, its shutdown included (the clusters' connections closed)
        assert okra.error_lines() == [], okra.last_lines()
        policy = iampolicy.load()
        actions = eks.proxy.actions()
        denied = sorted({a for a in actions if not iampolicy.operation_allowed(policy, a)})
        assert not denied, f"okra-manager called AWS actions config/iam/policy.json lacks: {denied}"
