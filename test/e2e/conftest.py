"""e2e fixtures: the real okra-manager process against the real control plane and
a moto server (through a proxy that counts AWS calls), plus a metrics endpoint
whose values the test sets; and the seed-004 ProgressiveRollout world (`workloads`,
`app`, `rollout_okra`; e2e/progressive_world.py) on the real Argo CD."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio.client import ApiClient

import iampolicy
from e2e.progressive_world import APPLICATION_SET, CLUSTERS, SUITE, App
from okra_controllers.api.kinds import APPLICATION, PROGRESSIVE_ROLLOUT
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import GVK, Client
from okra_runtime.errors import NotFoundError
from okra_runtime.hotloop import LOOP_EVENT
from okra_testkit.emulator import CountingProxy, MotoServer, forward_weights
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD
from okra_testkit.seed import LoadBalancer, Network, Seeder
from support import eventually, fresh_namespace

REPO = Path(__file__).resolve().parents[2]
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TG = GVK("okra.mumo.co", "v1alpha1", "AWSTargetGroup")
RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")
PAUSE = GVK("okra.mumo.co", "v1alpha1", "Pause")
BLOCKLIST = GVK("okra.mumo.co", "v1alpha1", "VersionBlocklist")
VERSION_ARG = [
    {"name": "version", "valueFrom": {"fieldRef": {"fieldPath": "status.canaryVersion"}}}
]
"""An analysis argument `version`: the Cell's canary version."""
VERSION_LABEL = "okra.mumo.co/version"


@pytest.fixture(scope="session")
def okra_crds(control_plane: ControlPlane) -> list[str]:
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])


class Metrics:
    """GET /error-rate?version=V -> {"errorRate": <value set for V, default 0>}.

    `hold(V)` keeps V's answers back until `release(V)`: a test that must see
    what okra does while an analysis is running holds the analysis open instead
    of racing its interval.
    """

    def __init__(self) -> None:
        self.rates: dict[str, float] = {}
        self.url = ""
        self._held: dict[str, asyncio.Event] = {}

    def hold(self, version: str) -> None:
        self._held.setdefault(version, asyncio.Event())

    def release(self, version: str) -> None:
        if (gate := self._held.pop(version, None)) is not None:
            gate.set()

    async def handle(self, request: web.Request) -> web.Response:
        version = request.query["version"]
        if (gate := self._held.get(version)) is not None:
            await gate.wait()
        return web.json_response({"errorRate": self.rates.get(version, 0.0)})


@pytest.fixture
async def metrics() -> AsyncIterator[Metrics]:
    m = Metrics()
    app = web.Application()
    app.router.add_get("/error-rate", m.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    m.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    yield m
    await runner.cleanup()


@dataclass
class Env:
    """One Cell's world: a listener, target groups in AWS and as AWSTargetGroups."""

    client: Client
    aws: Seeder
    namespace: str
    network: Network
    alb: LoadBalancer
    proxy: CountingProxy
    tg_arns: dict[str, str] = field(default_factory=dict)

    async def target_group(
        self, name: str, version: str, *, healthy: bool = True, labels: dict[str, str] | None = None
    ) -> str:
        arn = await self.aws.target_group(f"{name}-{self.namespace[-6:]}"[:32], self.network)
        if healthy:
            ids = await self.aws.instances(1, self.network)
            await self.aws.register_targets(arn, ids)
        await self.client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": name,
                    "namespace": self.namespace,
                    "labels": {"role": "web", VERSION_LABEL: version, **(labels or {})},
                },
                "spec": {"arn": arn},
            }
        )
        self.tg_arns[name] = arn
        return arn

    def through(self, proxy: CountingProxy) -> Env:
        """This world with okra-manager's AWS calls going through `proxy` (a fault proxy)."""
        return replace(self, proxy=proxy)

    def rule_writes(self, since: float = 0.0) -> list[dict[str, int]]:
        """Weights by target group name of each ModifyRule okra sent since `since` (with
        `proxy.keep_bodies` holding "ModifyRule"), in order: exactly what it wrote."""
        by_arn = {a: n for n, a in self.tg_arns.items()}
        return [
            {by_arn.get(arn, arn): w for arn, w in forward_weights(body).items()}
            for _, body in self.proxy.sent("ModifyRule", since)
        ]

    async def rule_weights(self) -> dict[str, int]:
        """Weights by target group name in okra's rule, read from AWS (moto)."""
        by_arn = {a: n for n, a in self.tg_arns.items()}
        async with self.aws.config.client("elbv2") as elb:
            rules = (await elb.describe_rules(ListenerArn=self.alb.listener_arn))["Rules"]
        for r in rules:
            if r.get("IsDefault"):
                continue
            fwd = next((a for a in r["Actions"] if a["Type"] == "forward"), None)
            if fwd is None:
                continue
            return {
                by_arn.get(t["TargetGroupArn"], t["TargetGroupArn"]): t["Weight"]
                for t in fwd["ForwardConfig"]["TargetGroups"]
                if t["Weight"] > 0
            }
        return {}

    async def rule_becomes(
        self, want: dict[str, int], within: float = 60, interval: float = 0.05
    ) -> bool:
        """okra's rule in AWS shows `want` within `within` seconds."""

        async def ok() -> bool:
            return await self.rule_weights() == want

        return await eventually(ok, within=within, interval=interval)


@contextlib.asynccontextmanager
async def world(moto: MotoServer, rt_client: Client, namespace: str) -> AsyncIterator[Env]:
    """One Cell's world in `namespace`: a network, an ALB, the proxy okra-manager reaches
    AWS through. Afterwards, every call it made through the proxy must be one the IAM
    policy grants."""
    proxy = CountingProxy(moto.endpoint_url)
    await proxy.start()
    try:
        seed = Seeder(moto.config)
        network = await seed.network()
        alb = await seed.alb(f"web-{namespace[-8:]}", network)
        yield Env(rt_client, seed, namespace, network, alb, proxy)
    finally:
        await proxy.stop()
    # Only okra-manager talks through the proxy (the seeder goes to moto directly): every call
    # it made must be one the IAM policy grants.
    policy = iampolicy.load()
    denied = sorted({a for a in proxy.actions() if not iampolicy.operation_allowed(policy, a)})
    assert not denied, f"okra-manager called AWS actions config/iam/policy.json lacks: {denied}"


@pytest.fixture
async def env(
    moto: MotoServer, rt_client: Client, namespace: str, okra_crds: list[str]
) -> AsyncIterator[Env]:
    async with world(moto, rt_client, namespace) as e:
        yield e


@pytest.fixture
async def other_env(
    moto: MotoServer, rt_client: Client, kube: ApiClient, okra_crds: list[str]
) -> AsyncIterator[Env]:
    """A second world like `env`, in a namespace of its own."""
    async with fresh_namespace(kube) as ns, world(moto, rt_client, ns) as e:
        yield e


class OkraManager:
    """The okra-manager process of a test: started (and restarted, as a kubelet would)
    and stopped or SIGKILLed by the test (`with okra:` starts it and stops it at the end),
    its output appended to `log`.

    It watches `env`'s namespace and reaches AWS through `env`'s proxy; with no `env`,
    it watches `namespace` and has no AWS (`controllers` says which run then).
    `kubeconfig` (default: the plane's admin one) is how it reaches the API server (a
    proxy's, a ServiceAccount's); `args` are added to its command line; `environ` to its
    environment (over the emulator's credentials). All three may change between starts."""

    def __init__(
        self,
        cp: ControlPlane,
        env: Env | None,
        log: Path,
        *,
        namespace: str | None = None,
        controllers: str | None = None,
        kubeconfig: Path | None = None,
        args: Sequence[str] = (),
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.cp, self.env, self.log = cp, env, log
        namespace = namespace or (env.namespace if env is not None else None)
        assert namespace, "an okra-manager watches env's namespace or the one given"
        self.namespace, self.controllers = namespace, controllers
        self.kubeconfig, self.args = kubeconfig, tuple(args)
        self.environ = dict(environ or {})
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self, kubeconfig: str | os.PathLike[str]) -> list[str]:
        """Its command line, reaching the API server with `kubeconfig`."""
        return local_command(
            kubeconfig,
            self.namespace,
            aws_endpoint_url=self.env.proxy.endpoint_url if self.env is not None else None,
            controllers=self.controllers,
        )

    def start(self) -> None:
        command = self.command(self.kubeconfig or self.cp.kubeconfig())
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [*command, *self.args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **EMULATOR_ENV, **self.environ},
            )

    def __enter__(self) -> OkraManager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if exc[0] is None:
            self.assert_no_write_loop()

    def assert_no_write_loop(self) -> None:
        """It never rewrote an object without pause (its write-loop guard said none)."""
        loops = [r for r in self.records() if r.get("event") == LOOP_EVENT]
        assert not loops, f"okra-manager rewrote objects without pause: {loops}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def text(self) -> str:
        """What it has logged so far, over all its starts."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def tail(self) -> str:
        """The end of what it has logged: for a failed assertion's message."""
        return self.text()[-4000:]

    def said(self, words: str) -> bool:
        """It has logged `words` (anywhere in a line)."""
        return words in self.text()

    async def says(self, words: str, within: float = 60, interval: float = 0.1) -> bool:
        """It logs `words` within `within` seconds (or has already)."""

        async def ok() -> bool:
            return self.said(words)

        return await eventually(ok, within=within, interval=interval)

    def records(self) -> list[dict[str, Any]]:
        """Its JSON log lines, parsed (other lines are left out)."""
        return [rec for line in self.text().splitlines() if (rec := _record(line)) is not None]

    def error_lines(self) -> list[dict[str, Any]]:
        """Its error-level lines (and any line not in JSON that has a traceback or ERROR)."""
        out = []
        for line in self.text().splitlines():
            rec = _record(line)
            if rec is None and ("Traceback" in line or "ERROR" in line):
                out.append({"event": line})
            elif rec is not None and rec.get("level") in ("error", "critical"):
                out.append(rec)
        return out

    def logged_at(self, event: str) -> datetime.datetime:
        """When it logged `event` (its first such line)."""
        for rec in self.records():
            if rec.get("event") == event:
                return datetime.datetime.fromisoformat(str(rec["timestamp"]))
        raise AssertionError(f"{self.log.name} has no {event!r} line")

    def last_lines(self, last: int = 60) -> str:
        """Its last lines above debug level: why something it did was slow."""
        lines = [line for line in self.text().splitlines() if '"level": "debug"' not in line]
        return "okra-manager's last lines:\n" + "\n".join(lines[-last:])


def _record(line: str) -> dict[str, Any] | None:
    """A JSON log line, parsed; None for any other line."""
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) else None


@pytest.fixture
def okra(control_plane: ControlPlane, env: Env, tmp_path: Path) -> Iterator[OkraManager]:
    m = OkraManager(control_plane, env, tmp_path / "okra-manager.log")
    m.start()
    yield m
    m.stop()
    m.assert_no_write_loop()


def cell_obj(
    namespace: str, listener_arn: str, steps: list[dict[str, Any]], **spec: Any
) -> dict[str, Any]:
    canary: dict[str, Any] = {"steps": steps}
    if "background" in spec:
        canary["analysis"] = spec.pop("background")
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": listener_arn,
                    "targetGroupSelector": {"matchLabels": {"role": "web"}},
                },
            },
            "updateStrategy": {"type": "Canary", "canary": canary},
            **spec,
        },
    }


def error_rate_template(namespace: str, url: str, name: str = "error-rate") -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AnalysisTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "args": [{"name": "version"}],
            "metrics": [
                {
                    "name": "error-rate",
                    "interval": "1s",
                    "count": 2,
                    "successCondition": "result < 0.05",
                    "provider": {
                        "web": {
                            "url": f"{url}/error-rate?version={{{{args.version}}}}",
                            "jsonPath": "{$.errorRate}",
                        }
                    },
                }
            ],
        },
    }


async def cell_status(c: Client, namespace: str) -> dict[str, Any]:
    return (await c.get(CELL, "web", namespace)).get("status") or {}


async def wait_status(
    c: Client, namespace: str, pred: Any, within: float = 120, interval: float = 0.1
) -> dict[str, Any]:
    """The Cell's status for which `pred` held (failing with the last one seen). The very
    status read that held, not a read after it: the rollout may have moved on since."""
    last: dict[str, Any] = {}

    async def ok() -> bool:
        nonlocal last
        last = await cell_status(c, namespace)
        return bool(pred(last))

    assert await eventually(ok, within=within, interval=interval), last
    return last


async def promote(c: Client, namespace: str) -> None:
    """What `okra promote` does: end the Cell's current step (a pause) now."""
    st = await cell_status(c, namespace)
    value = f"{st['rolloutId']}/{st['currentStepIndex']}"
    patch = {"metadata": {"annotations": {"okra.mumo.co/promote": value}}}
    await c.patch(CELL, "web", patch, namespace=namespace)


@pytest.fixture(scope="session")
def workloads(
    argocd: ArgoCD, fleet: Callable[[str], ControlPlane], control_plane: ControlPlane
) -> dict[str, ControlPlane]:
    """Three workload control planes registered with Argo CD, labelled by area and region."""
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    planes = {}
    for name, labels in CLUSTERS.items():
        planes[name] = fleet(name)
        argocd.register_cluster(name, planes[name], {**labels, **SUITE})
    return planes


@pytest.fixture
async def app(
    argocd: ArgoCD, workloads: dict[str, ControlPlane], rt_client: Client
) -> AsyncIterator[App]:
    """A fresh ApplicationSet of the seed-004 world (and its ProgressiveRollout, once made),
    deleted afterwards."""
    a = App(argocd, rt_client, planes=workloads)
    yield a
    with contextlib.suppress(NotFoundError):
        await rt_client.delete(PROGRESSIVE_ROLLOUT, a.name, argocd.namespace)
    with contextlib.suppress(NotFoundError):
        await rt_client.delete(APPLICATION_SET, a.name, argocd.namespace)
    # Argo CD deletes an Application's resources in the foreground, which a workload plane
    # without a garbage collector never finishes: its Applications' finalizers are taken off,
    # or Argo CD goes on reconciling them (about ten writes a second) for the whole session.
    for item in (await rt_client.list(APPLICATION, argocd.namespace)).items:
        meta = item["metadata"]
        owners = {o.get("name") for o in meta.get("ownerReferences") or []}
        if a.name in owners and meta.get("finalizers"):
            with contextlib.suppress(NotFoundError):
                await rt_client.patch(
                    APPLICATION,
                    meta["name"],
                    {"metadata": {"finalizers": None}},
                    namespace=argocd.namespace,
                )


@pytest.fixture
def rollout_okra(
    control_plane: ControlPlane, argocd: ArgoCD, tmp_path: Path
) -> Iterator[OkraManager]:
    """okra-manager running the ProgressiveRollout and AnalysisRun controllers in Argo CD's
    namespace (no AWS)."""
    o = OkraManager(
        control_plane,
        None,
        tmp_path / "okra-manager.log",
        namespace=argocd.namespace,
        controllers="progressiverollout,analysisrun",
    )
    o.start()
    try:
        yield o
    finally:
        o.stop()
