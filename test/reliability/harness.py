"""What the reliability tests share beyond the e2e harness (`e2e.conftest`: the
okra-manager process, a Cell's world, waiting on its status): `World` (the `world`
fixture: where a test starts its managers and proxies), the rule sampler, the
kill-and-restart driver of the kill-point tests, okra's watch counters, a
kubeconfig through a TCP proxy, and what changed in objects left idle."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from e2e.conftest import (
    CELL,
    Env,
    OkraManager,
    cell_obj,
    cell_status,
    error_rate_template,
    wait_status,
)
from faultproxy import ApiServerProxy, FaultProxy
from okra_runtime import GVK, Client
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.process import free_port
from support import eventually
from tcpproxy import StallingProxy

ALB_CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSApplicationLoadBalancerConfig")
WRITES = {"ModifyRule", "CreateRule"}
LEASE, RENEW_DEADLINE, RETRY_PERIOD = 8.0, 5.0, 1.0
"""Seconds: the leader tests' lease, shorter than okra-manager's default 15/10/2 so a
takeover after a kill or a partition takes about half as long."""
LEADER_ELECT = [
    "--leader-elect",
    f"--leader-elect-lease-duration={LEASE:g}",
    f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}",
    f"--leader-elect-retry-period={RETRY_PERIOD:g}",
]
"""The ELBv2 operations that change okra's rule."""


@dataclasses.dataclass
class World:
    """A reliability test's surroundings: the control plane, moto, one Cell's world
    (`env`) in the test's namespace, a client, and the test's directory for logs."""

    env: Env
    client: Client
    ns: str
    cp: ControlPlane
    moto: MotoServer
    tmp: Path

    def manager(
        self,
        name: str = "okra",
        *,
        aws: CountingProxy | None = None,
        api: ApiServerProxy | None = None,
        kubeconfig: Path | None = None,
        args: Sequence[str] = (),
        environ: dict[str, str] | None = None,
    ) -> OkraManager:
        """An okra-manager (not started) logging to `<name>.log`: AWS through `aws` (a fault
        proxy; default the env's counting proxy), the API server through `api` (with the
        admin's token) or `kubeconfig` (default the admin's, direct)."""
        log = self.tmp / f"{name}.log"
        if api is not None:
            kubeconfig = api.kubeconfig(log.with_suffix(".kubeconfig"), self.cp.token())
        env = self.env if aws is None else self.env.through(aws)
        return OkraManager(self.cp, env, log, kubeconfig=kubeconfig, args=args, environ=environ)

    def aws_proxy(self, **faults: Any) -> FaultProxy:
        """A fault proxy in front of moto (`faults`: FaultProxy's seed, rate, ...)."""
        return FaultProxy(self.moto.endpoint_url, **faults)

    def api_proxy(self) -> ApiServerProxy:
        """A proxy in front of kube-apiserver that names, kills at, stalls and expires."""
        return ApiServerProxy(self.cp.server, self.cp.ca_pem)


async def now(v: bool) -> bool:
    """`v`, as the awaitable `eventually` polls (for a check that needs no I/O)."""
    return v


class Sampler:
    """okra's rule read from moto (not through any proxy) every 100 ms while the
    sampler is entered: (version -> weight) per sample."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.version_of: dict[str, str] = {}
        self.samples: list[dict[str, int]] = []
        self.totals: set[int] = set()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Sampler:
        self._task = asyncio.create_task(self.run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def target_group(self, name: str, version: str) -> str:
        """`env.target_group`, its weight counted as `version`'s in the samples."""
        arn = await self.env.target_group(name, version)
        self.version_of[arn] = version
        return arn

    async def run(self) -> None:
        async with self.env.aws.config.client("elbv2") as elb:
            while True:
                rules = (await elb.describe_rules(ListenerArn=self.env.alb.listener_arn))["Rules"]
                self._sample(rules)
                await asyncio.sleep(0.1)

    def _sample(self, rules: list[dict[str, Any]]) -> None:
        for r in rules:
            fwd = next((a for a in r["Actions"] if a["Type"] == "forward"), None)
            if r.get("IsDefault") or fwd is None:
                continue
            by_version: dict[str, int] = {}
            total = 0
            for t in fwd["ForwardConfig"]["TargetGroups"]:
                total += t["Weight"]
                v = self.version_of.get(t["TargetGroupArn"], "?")
                by_version[v] = by_version.get(v, 0) + t["Weight"]
            self.totals.add(total)
            self.samples.append(by_version)

    def shares(self, version: str) -> list[int]:
        """The version's weight in each sample, repeats dropped."""
        out: list[int] = []
        for s in self.samples:
            w = s.get(version, 0)
            if not out or out[-1] != w:
                out.append(w)
        return out


RESUME_WITHIN = 120.0
"""Seconds from a kill to the restarted okra-manager's first reconcile of the Cell: past
it the point fails (a restart takes a few seconds; this is the bound of a loaded machine)."""


@dataclasses.dataclass
class Point:
    """One kill point and the Cell's status around it: `before`, what the killed manager
    left; `after`, the first status the restarted one wrote (or `before` again, when its
    first reconcile found nothing to change, as in an indefinite pause)."""

    name: str
    before: dict[str, Any] = dataclasses.field(default_factory=dict)
    after: dict[str, Any] | None = None
    resumed_in: float | None = None
    task: asyncio.Task[None] | None = None

    @property
    def rollout_before(self) -> str | None:
        return self.before.get("rolloutId")

    @property
    def rollout_after(self) -> str | None:
        return (self.after or {}).get("rolloutId")

    @property
    def step_before(self) -> int | None:
        return self.before.get("currentStepIndex")

    @property
    def step_after(self) -> int | None:
        return (self.after or {}).get("currentStepIndex")

    def brief(self) -> str:
        """The point, its problems and the fields of the status they are about."""
        keys = "rolloutId currentStepIndex canaryVersion canaryWeight stableVersion health message"

        def fields(st: dict[str, Any] | None) -> dict[str, Any] | None:
            return None if st is None else {k: st.get(k) for k in keys.split()}

        before, after = fields(self.before), fields(self.after)
        return f"{self.name}: {self.problems()}; before {before}; after {after}"

    def problems(self) -> list[str]:
        """How the restart failed to resume the rollout where the kill left it: a rollout
        under way goes on under its id at the step it was at or the next one, its canary's
        weight never lower; or it ends as it was ending (its canary promoted, or rolled
        back with the version blocked)."""
        if self.after is None:
            return ["never resumed (the point was not reached, or its restart not awaited)"]
        b, a = self.before, self.after
        if not b.get("rolloutId"):
            return []  # no rollout to resume: a first one may begin
        if not a.get("rolloutId"):
            promoted = a.get("stableVersion") == b.get("canaryVersion")
            rolled_back = a.get("health") == "Degraded" and a.get("stableVersion") == b.get(
                "stableVersion"
            )
            return [] if promoted or rolled_back else ["the rollout ended neither way"]
        out = []
        if a["rolloutId"] != b["rolloutId"]:
            out.append(f"rollout {b['rolloutId']} became {a['rolloutId']}")
        step_b, step_a = b.get("currentStepIndex") or 0, a.get("currentStepIndex") or 0
        if step_a not in (step_b, step_b + 1):
            out.append(f"step {step_b} became {step_a}")
        weight_b, weight_a = b.get("canaryWeight") or 0, a.get("canaryWeight") or 0
        if weight_a < weight_b:
            out.append(f"canary weight {weight_b} went back to {weight_a}")
        return out


class Killer:
    """Kills okra-manager when a proxy passes an armed operation (`on_forward`), or on
    demand, restarts it at once (as a kubelet would) and records each `Point`.

    A restart has resumed when it wrote the Cell's status, finished a reconcile of the Cell
    (its metrics, on a fresh port each start, say so: an indefinite pause has nothing to
    write), or was killed by the next armed point (at a write of its own)."""

    def __init__(self, okra: OkraManager, client: Client, ns: str) -> None:
        self.okra, self.client, self.ns = okra, client, ns
        self.armed: dict[str, Point] = {}
        self.points: list[Point] = []
        self._args = okra.args
        self._start = 0  # the number of the manager's current start (0: the test's own)
        self._killed: set[int] = set()  # starts that were killed
        self._left: dict[int, dict[str, Any]] = {}  # start -> the status its kill found
        self._ports: dict[int, int] = {}  # start -> its metrics port
        self._new_metrics_port()

    def _new_metrics_port(self) -> None:
        self._ports[self._start] = port = free_port()
        self.okra.args = (*self._args, "--metrics-bind-address", f"127.0.0.1:{port}")

    def _kill(self) -> None:
        self._killed.add(self._start)
        self.okra.kill()

    def on_forward(self, op: str) -> None:
        point = self.armed.pop(op, None)
        if point is not None:
            self._kill()  # the request is on its way; its sender is gone
            point.task = asyncio.create_task(self._after_kill(point))

    async def arm(self, op: str, name: str) -> Point:
        p = Point(name)
        self.points.append(p)
        self.armed[op] = p
        return p

    async def kill_now(self, name: str) -> Point:
        p = Point(name)
        self.points.append(p)
        self._kill()
        await self._after_kill(p)
        return p

    def assert_resumed(self) -> None:
        """Every point was resumed from (`Point.problems`)."""
        bad = [p.brief() for p in self.points if p.problems()]
        assert not bad, "\n".join(bad)

    async def wait(self, p: Point, within: float = RESUME_WITHIN + 30) -> None:
        """Until `p` fired and the manager it killed resumed (failing past `within`)."""
        assert await eventually(lambda: now(p.task is not None), within=within), p.name
        assert p.task is not None
        await p.task  # raises what went wrong after the kill
        assert not p.problems(), p.brief()

    async def _after_kill(self, p: Point) -> None:
        killed_at = time.monotonic()
        cell = await self.client.get(CELL, "web", self.ns)
        p.before = self._left[self._start] = cell.get("status") or {}
        changed = asyncio.create_task(
            self._first_change(p.before, cell["metadata"]["resourceVersion"])
        )
        try:
            self._start += 1
            mine = self._start
            self._new_metrics_port()
            self.okra.start()
            await self._resumed(p, mine, changed)
            # what the restart wrote first, if it wrote (its kill, if it was killed, came
            # after that write: the status then has it)
            if mine in self._left:
                current = self._left[mine]
            else:
                current = await cell_status(self.client, self.ns)
            p.after = p.before if current == p.before else await asyncio.wait_for(changed, 30)
        finally:
            changed.cancel()
        p.resumed_in = time.monotonic() - killed_at

    async def _resumed(self, p: Point, start: int, changed: asyncio.Task[Any]) -> None:
        async def resumed() -> bool:
            if changed.done() or start in self._left:
                return True
            return start not in self._killed and await self._reconciles(start) > 0

        proc = self.okra.proc
        assert await eventually(resumed, within=RESUME_WITHIN, interval=0.1), (
            f"{p.name}: the restarted okra-manager (exit code {proc and proc.poll()})"
            f" did not reconcile the Cell within {RESUME_WITHIN:g}s of the kill"
        )

    async def _first_change(self, status: dict[str, Any], rv: str) -> dict[str, Any]:
        """The Cell's first status other than `status`, from `rv` on (a watch)."""
        while True:
            async for ev in self.client.watch(
                CELL, self.ns, resource_version=rv, field_selector="metadata.name=web"
            ):
                if ev["type"] in ("BOOKMARK", "MODIFIED"):
                    rv = ev["object"]["metadata"]["resourceVersion"]
                if ev["type"] == "MODIFIED" and (ev["object"].get("status") or {}) != status:
                    return dict(ev["object"].get("status") or {})

    async def _reconciles(self, start: int) -> float:
        """The Cell reconciles okra-manager's `start` has finished (0 while it starts)."""
        url = f"http://127.0.0.1:{self._ports[start]}/metrics"
        try:
            text = await asyncio.to_thread(_get, url)
        except OSError as e:
            why = getattr(e, "reason", e)
            if isinstance(why, ConnectionRefusedError | TimeoutError) or start in self._killed:
                # not serving yet; or serving, but its loop too busy starting (a loaded
                # machine) to answer within _get's timeout; or killed while it answered.
                # _resumed's RESUME_WITHIN bounds how long that may last.
                return 0.0
            raise
        total = 0.0
        for line in text.splitlines():
            m = re.match(r"controller_runtime_reconcile_total\{(.*)\} (\S+)", line)
            if m and 'controller="cell"' in m.group(1) and 'result="error"' not in m.group(1):
                total += float(m.group(2))
        return total


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())


async def error_rate_templates(c: Client, ns: str, metrics_url: str, slow_count: int) -> None:
    """The AnalysisTemplates `error-rate` and `slow-error-rate`, the same metric measured
    `slow_count` times (an inline analysis long enough to kill okra-manager in)."""
    slow = error_rate_template(ns, metrics_url, name="slow-error-rate")
    slow["spec"]["metrics"][0]["count"] = slow_count
    await c.create(error_rate_template(ns, metrics_url))
    await c.create(slow)


def rollout_ids(names: list[str], version: str) -> set[str]:
    """The rollout ids in the names of a version's Pauses and AnalysisRuns."""
    out = set()
    for n in names:
        m = re.match(rf"web-{version}-([0-9a-f]{{8}})-", n)
        if m:
            out.add(m.group(1))
    return out


def counters(port: int) -> dict[tuple[str, str], float]:
    """(metric, reason) -> value summed over kinds, from okra-manager's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = re.match(
            r"(okra_runtime_(?:watch_restarts|informer_relists)_total)\{(.*)\} (\S+)", line
        )
        if not m:
            continue
        reason = re.search(r'reason="([^"]*)"', m.group(2))
        key = (m.group(1), reason.group(1) if reason else "")
        out[key] = out.get(key, 0.0) + float(m.group(3))
    return out


async def serving_v1(env: Env, c: Client, ns: str) -> None:
    """The Cell (a canary of `setWeight: 20` and an indefinite pause) created and serving
    v1 from two target groups, web-a-v1 and web-b-v1, healthy."""
    await env.target_group("web-a-v1", "v1")
    await env.target_group("web-b-v1", "v1")
    steps: list[dict[str, Any]] = [{"setWeight": 20}, {"pause": {}}]
    await c.create(cell_obj(ns, env.alb.listener_arn, steps))
    assert await env.rule_becomes({"web-a-v1": 50, "web-b-v1": 50}), await env.rule_weights()
    await wait_status(c, ns, lambda s: s.get("health") == "Healthy", within=60)


def via(control_plane: ControlPlane, proxy: StallingProxy, path: Path) -> Path:
    """The admin kubeconfig with the server behind `proxy` (TLS passes through)."""
    config = yaml.safe_load(control_plane.kubeconfig().read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path.write_text(yaml.safe_dump(config))
    return path


def status_sizes(value: Any, path: str = "status") -> dict[str, int]:
    """The length of every string and list in `value` (an object's status), by its path
    (`status.applications[0].message`)."""
    out: dict[str, int] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(status_sizes(v, f"{path}.{k}"))
    elif isinstance(value, list):
        out[path] = len(value)
        for i, v in enumerate(value):
            out.update(status_sizes(v, f"{path}[{i}]"))
    elif isinstance(value, str):
        out[path] = len(value)
    return out


async def _objects(c: Client, ns: str, kinds: Iterable[GVK]) -> dict[str, dict[str, Any]]:
    """`ns`'s objects of `kinds`, by "Kind name"."""
    out = {}
    for gvk in kinds:
        for obj in (await c.list(gvk, ns)).items:
            out[f"{gvk.kind} {obj['metadata']['name']}"] = obj
    return out


@dataclasses.dataclass
class Idle:
    """What `watch_idle` saw: the objects at the start of the window, and what changed."""

    watched: list[str]
    changes: list[str]
    versions: dict[str, tuple[str, str]]  # object -> resourceVersion at the start, at the end

    def report(self) -> str:
        moved = {k: (a, b) for k, (a, b) in self.versions.items() if a != b}
        lines = [f"{len(self.watched)} objects watched; resourceVersion changed on {len(moved)}"]
        lines += [f"  {k}: {a} -> {b} (+{int(b) - int(a)})" for k, (a, b) in moved.items()]
        return "\n".join(lines)


async def watch_idle(c: Client, ns: str, kinds: Iterable[GVK], seconds: float) -> Idle:
    """`ns`'s objects of `kinds` left alone for `seconds`: each one's resourceVersion and the
    length of every string and list in its status are read at the start and at the end.
    A change is an object made or gone, its resourceVersion moved, or a status field grown
    (named, with the end of a grown string: what was added)."""
    kinds = list(kinds)
    before = await _objects(c, ns, kinds)
    await asyncio.sleep(seconds)  # the window itself: what the caller asserts is still
    after = await _objects(c, ns, kinds)
    changes = [f"{k}: made during the window" for k in sorted(after.keys() - before.keys())]
    changes += [f"{k}: gone during the window" for k in sorted(before.keys() - after.keys())]
    versions = {}
    for k in sorted(before.keys() & after.keys()):
        a, b = before[k], after[k]
        rv = (a["metadata"]["resourceVersion"], b["metadata"]["resourceVersion"])
        versions[k] = rv
        if rv[0] != rv[1]:
            changes.append(f"{k}: resourceVersion {rv[0]} -> {rv[1]}")
        sizes_a, sizes_b = status_sizes(a.get("status")), status_sizes(b.get("status"))
        for path, n in sorted(sizes_b.items()):
            if n > sizes_a.get(path, 0):
                grown = f"{k}: {path} grew from {sizes_a.get(path, 0)} to {n}"
                tail = _at(b, path)
                if isinstance(tail, str):
                    grown += f", ending {tail[-160:]!r}"
                changes.append(grown)
    return Idle(sorted(before), changes, versions)


def _at(obj: dict[str, Any], path: str) -> Any:
    """The value at a path `status_sizes` named."""
    value: Any = obj
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value.get(part)
    return value
