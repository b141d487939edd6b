"""bench/cell/scale.py: many Cells on one okra-manager, as a curve over the number of Cells.

For each size (default 100, 1,000, 2,500, 5,000 Cells), on a fresh local control plane and a
fresh moto server behind a proxy that records every AWS call:

- every Cell has 2 versions x 2 target groups (4 AWSTargetGroups, each with one registered
  instance) and its own listener rule (a host condition); Cells are spread over listeners of
  one ALB, at most 50 rules per listener (AWS allows 100);
- okra-manager starts (cell, albconfig and pause controllers) and the bench measures
  - start-up: manager start -> /readyz 200 (every informer synced);
  - rollout: manager start -> every Cell Healthy (each rolls out v2, split over its two
    target groups), and over that window the CPU seconds of the manager, moto, the control
    plane and this process (the proxy), the AWS calls by action, the reconciles by result
    and the apiserver's requests by verb and resource;
  - idle, over `--idle` seconds (default 60) once every Cell is Healthy and has settled:
    the manager's CPU (user + system from /proc, % of one core), its RSS, and the AWS calls
    by action per minute. DESIGN §6: no writes, at most one DescribeRules per listener per
    resync period (300 s);
  - reaction: for `--reactions` Cells (spread over the range), one after the other, a target
    group of a new version (v3) is created in moto and then its AWSTargetGroup; the time from
    that create to the first ModifyRule the proxy sees (the manager writes nothing while
    idle, so the first write after the create is the reaction). p50 / p99 / max per size.

The figures go to JSON (`--out`, default bench/cell/scale.json, rewritten after every size so
a long run that is stopped keeps what it measured) and a PNG of the curves (`--png`, default
bench/cell/scale.png; matplotlib, a bench-only dependency: `pip install -e .[bench]`).
`--profile SIZE` records the manager with py-spy (also bench-only) from its start until the
end of the idle window at that size and writes a flame graph SVG beside the PNG.

    bench/cell/scale.sh [--sizes 100,1000,2500,5000] [--idle 60] [--reactions 20]

Nothing here is asserted: the targets (1,000 Cells Healthy < 60 s, idle CPU < 5 % of a core,
RSS < 150 MiB, start-up < 5 s, reaction < 250 ms p99) are printed beside the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import aiohttp

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import GVK, Client
from okra_runtime.crdgen import write_crds
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.apimetrics import apiserver_requests
from okra_testkit.seed import Network, Seeder

HERE = Path(__file__).resolve().parent
NS = "scale"
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TICKS = os.sysconf("SC_CLK_TCK")
PER_LISTENER = 50
VERSIONS = ("v1", "v2")
GROUPS_PER_VERSION = 2
WRITES = {"ModifyRule", "CreateRule", "DeleteRule", "SetRulePriorities", "ModifyListener"}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_of(pids: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds (user + system) of each named group of processes; the bench's own
    process (the AWS recording proxy, the Healthy poll) as `bench`."""
    out = {}
    for name, group in pids.items():
        total = 0.0
        for pid in group:
            with contextlib.suppress(OSError):  # gone already
                total += cpu_seconds(pid)
        out[name] = total
    t = os.times()
    out["bench"] = t.user + t.system
    return out


async def scrape(port: int) -> dict[str, float]:
    """`controller_runtime_reconcile_total` by controller and result from the manager's
    /metrics."""
    out: dict[str, float] = {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/metrics") as resp,
    ):
        text = await resp.text()
    for line in text.splitlines():
        if line.startswith("controller_runtime_reconcile_total{"):
            labels, value = line[len("controller_runtime_reconcile_total{") :].split("} ")
            parts = dict(kv.split("=", 1) for kv in labels.split(","))
            key = f"{parts['controller'].strip(chr(34))}/{parts['result'].strip(chr(34))}"
            out[key] = float(value)
    return out


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


async def gather_limited(n: int, coros: list[Any]) -> None:
    sem = asyncio.Semaphore(n)

    async def one(c: Any) -> None:
        async with sem:
            await c

    await asyncio.gather(*(one(c) for c in coros))


async def retrying(make: Any, attempts: int = 20) -> Any:
    """moto answers a 500 now and then under concurrent writes (its create scans every
    target group while another request thread inserts one; more often the more there
    are): retry a seeding call at once, a few milliseconds later. The seeding client has
    botocore's own retries off, whose backoff (up to seconds per 500) made seeding 4,000
    target groups take 1.4x as long."""
    for attempt in range(attempts):
        try:
            return await make()
        except Exception as e:
            if attempt == attempts - 1 or "Duplicate" in str(e):
                raise
            await asyncio.sleep(0.005 * (attempt + 1))


def tg_name(cell: int, version: str, group: int) -> str:
    return f"c{cell}-{version}-{group}"


def target_group_object(cell: int, version: str, group: int, arn: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSTargetGroup",
        "metadata": {
            "name": tg_name(cell, version, group),
            "namespace": NS,
            "labels": {"cell": f"c{cell}", "okra.mumo.co/version": version},
        },
        "spec": {"arn": arn},
    }


def cell_object(cell: int, listener_arn: str) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": f"c{cell}", "namespace": NS},
        "spec": {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": listener_arn,
                    "targetGroupSelector": {"matchLabels": {"cell": f"c{cell}"}},
                    "listenerRule": {
                        "priority": cell % PER_LISTENER + 1,
                        "hosts": [f"c{cell}.example.com"],
                    },
                },
            }
        },
    }


class Seeded:
    """The ALB's listeners and a way to add target groups (each with the one instance
    registered) through one elbv2 client: a client per call, as `Seeder` makes, costs
    ~20x the calls themselves at thousands of target groups."""

    def __init__(self, elb: Any, net: Network, instance: str, listeners: list[str]) -> None:
        self.elb, self.net, self.instance, self.listeners = elb, net, instance, listeners

    async def target_group(self, name: str) -> str:
        async def create() -> str:
            out = await self.elb.create_target_group(
                Name=name, Protocol="HTTP", Port=80, VpcId=self.net.vpc_id, TargetType="instance"
            )
            return str(out["TargetGroups"][0]["TargetGroupArn"])

        arn: str = await retrying(create)
        await retrying(
            lambda: self.elb.register_targets(TargetGroupArn=arn, Targets=[{"Id": self.instance}])
        )
        return arn


async def seed_aws(
    aws: MotoServer, elb: Any, cells: int
) -> tuple[Seeded, dict[tuple[int, str, int], str]]:
    seed = Seeder(aws.config)
    net = await seed.network()
    alb = await seed.alb("scale", net)
    listeners = [alb.listener_arn]
    for port in range(1, (cells + PER_LISTENER - 1) // PER_LISTENER):
        out = await elb.create_listener(
            LoadBalancerArn=alb.arn,
            Protocol="HTTP",
            Port=8000 + port,
            DefaultActions=[
                {
                    "Type": "fixed-response",
                    "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain"},
                }
            ],
        )
        listeners.append(out["Listeners"][0]["ListenerArn"])
    (instance,) = await seed.instances(1, net)
    seeded = Seeded(elb, net, instance, listeners)
    arns: dict[tuple[int, str, int], str] = {}

    async def tg(key: tuple[int, str, int]) -> None:
        arns[key] = await seeded.target_group(tg_name(*key))

    keys = [(i, v, g) for i in range(cells) for v in VERSIONS for g in range(GROUPS_PER_VERSION)]
    await gather_limited(16, [tg(k) for k in keys])
    return seeded, arns


async def wait_ready(port: int, proc: asyncio.subprocess.Process, limit: float) -> float:
    """Seconds until the manager's /readyz answers 200 (polled every 20 ms)."""
    start = time.monotonic()
    async with aiohttp.ClientSession() as http:
        while time.monotonic() - start < limit:
            if proc.returncode is not None:
                raise RuntimeError(f"okra-manager exited with {proc.returncode}")
            try:
                async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                    if resp.status == 200:
                        return time.monotonic() - start
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.02)
    raise TimeoutError(f"/readyz not 200 after {limit:.0f}s")


async def wait_healthy(
    c: Client, cells: int, start: float, limit: float = 1800, curve: list[Any] | None = None
) -> float:
    """Seconds from `start` until every Cell's status says Healthy, from one list and then
    a watch: the bench's own load on the apiserver (and on the 2 cores the manager, moto
    and the apiserver share) stays one event per Cell change, where polling lists of
    1,000 Cells twice a second cost the apiserver and the bench seconds of CPU."""
    listed = await c.list(CELL, NS)
    health = {i["metadata"]["name"]: (i.get("status") or {}).get("health") for i in listed.items}
    rv = listed.resource_version

    def healthy() -> int:
        return sum(h == "Healthy" for h in health.values())

    while healthy() < cells:
        left = limit - (time.monotonic() - start)
        if left <= 0:
            raise TimeoutError(f"only {healthy()}/{cells} Cells healthy after {limit:.0f}s")
        try:
            async with asyncio.timeout(left):
                async for ev in c.watch(CELL, NS, resource_version=rv, timeout_seconds=300):
                    obj = ev["object"]
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if ev["type"] in ("ADDED", "MODIFIED"):
                        before = healthy()
                        health[obj["metadata"]["name"]] = (obj.get("status") or {}).get("health")
                        if curve is not None and healthy() != before and healthy() % 50 == 0:
                            curve.append((round(time.monotonic() - start, 2), healthy()))
                    if healthy() >= cells:
                        break
        except TimeoutError:
            continue
    return time.monotonic() - start


async def first_write(
    proxy: CountingProxy, action: str, since: float, seen: int, limit: float = 60
) -> float:
    """Seconds from `since` to the first `action` among the proxy's calls after the first
    `seen` (the calls list only grows)."""
    while True:
        batch = proxy.calls[seen:]
        for t, a in batch:
            if a == action and t >= since:
                return t - since
        seen += len(batch)
        if time.monotonic() - since > limit:
            raise TimeoutError(f"no {action} within {limit:.0f}s")
        await asyncio.sleep(0.002)


def py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    return found if Path(found).exists() else None


async def scenario(
    cp: ControlPlane, aws: MotoServer, cells: int, a: argparse.Namespace, log: IO[bytes]
) -> dict[str, Any]:
    async with dataclasses.replace(aws.config, total_max_attempts=1).client("elbv2") as elb:
        return await scenario_with(cp, aws, elb, cells, a, log)


async def scenario_with(
    cp: ControlPlane, aws: MotoServer, elb: Any, cells: int, a: argparse.Namespace, log: IO[bytes]
) -> dict[str, Any]:
    t = time.monotonic()
    seeded, arns = await seed_aws(aws, elb, cells)
    seed_s = time.monotonic() - t
    say(f"[{cells}] {len(arns)} target groups in moto in {seed_s:.0f}s")
    async with await Client.from_kubeconfig(cp.kubeconfig()) as c:
        await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

        async def objects(i: int) -> None:
            for v in VERSIONS:
                for g in range(GROUPS_PER_VERSION):
                    await c.create(target_group_object(i, v, g, arns[(i, v, g)]))
            await c.create(cell_object(i, seeded.listeners[i // PER_LISTENER]))

        t = time.monotonic()
        await gather_limited(32, [objects(i) for i in range(cells)])
        say(f"[{cells}] Cells and AWSTargetGroups created in {time.monotonic() - t:.0f}s")
        proxy = CountingProxy(aws.endpoint_url)
        await proxy.start()
        port = free_port()
        cmd = local_command(
            cp.kubeconfig(),
            NS,
            aws_endpoint_url=proxy.endpoint_url,
            controllers="cell,albconfig,pause",
        )
        cmd += ["--health-probe-bind-address", f"127.0.0.1:{port}"]
        metrics_port = free_port()
        cmd += ["--metrics-bind-address", f"127.0.0.1:{metrics_port}"]
        manager = await asyncio.create_subprocess_exec(
            *cmd, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **EMULATOR_ENV}
        )
        start = time.monotonic()
        pids = {"manager": [manager.pid], "moto": [aws.pid or 0], "control plane": cp.pids}
        cpu_start = cpu_of(pids)
        calls_before = len(proxy.calls)
        api_before = await apiserver_requests(c)
        curve: list[Any] = []
        profiler: asyncio.subprocess.Process | None = None
        svg = Path(a.png).with_name(f"scale-profile-{cells}.svg")
        if a.profile == cells:
            spy = py_spy()
            if spy is None:
                say("py-spy is not installed (pip install -e .[bench]); no profile")
            else:
                profiler = await asyncio.create_subprocess_exec(
                    spy, "record", "--pid", str(manager.pid), "--rate", "50", "--nonblocking",
                    "--format", "flamegraph", "-o", str(svg),
                    stdout=log, stderr=subprocess.STDOUT,
                )  # fmt: skip
        try:
            ready = await wait_ready(port, manager, 600)
            say(f"[{cells}] okra-manager ready (/readyz 200) after {ready:.2f}s")
            rollout = await wait_healthy(c, cells, start, curve=curve)
            cpu_rollout = cpu_seconds(manager.pid)
            cpu_end = cpu_of(pids)
            cpu_during = {k: round(cpu_end[k] - cpu_start[k], 1) for k in cpu_end}
            rollout_calls = dict(collections.Counter(a for _, a in proxy.calls[calls_before:]))
            reconciles = await scrape(metrics_port)
            api_requests = dict(await apiserver_requests(c) - api_before)
            say(f"[{cells}] apiserver requests during rollout: {api_requests}")
            say(f"[{cells}] CPU s during rollout: {cpu_during}")
            say(f"[{cells}] AWS calls during rollout: {rollout_calls}")
            say(f"[{cells}] reconciles until Healthy: {reconciles}")
            say(f"[{cells}] all Healthy after {rollout:.1f}s; settling, then {a.idle:.0f}s idle")
            await asyncio.sleep(a.settle)  # the last status writes and events
            cpu0, t0 = cpu_seconds(manager.pid), time.monotonic()
            await asyncio.sleep(a.idle)
            window = time.monotonic() - t0
            cpu = (cpu_seconds(manager.pid) - cpu0) / window * 100
            rss = rss_mib(manager.pid)
            calls = collections.Counter(proxy.actions(t0))
            say(f"[{cells}] idle: {cpu:.2f} % CPU, {rss:.0f} MiB, AWS calls {dict(calls)}")
            if profiler is not None:
                profiler.send_signal(signal.SIGINT)
                await asyncio.wait_for(profiler.wait(), 120)
                profiler = None
            reactions = []
            step = max(1, cells // max(1, a.reactions))
            for i in range(0, cells, step)[: a.reactions]:
                arn = await seeded.target_group(tg_name(i, "v3", 0))
                seen, t1 = len(proxy.calls), time.monotonic()
                await c.create(target_group_object(i, "v3", 0, arn))
                reactions.append(await first_write(proxy, "ModifyRule", t1, seen))
            say(f"[{cells}] reaction p99 {percentile(reactions, 99)}s over {len(reactions)}")
        finally:
            if profiler is not None and profiler.returncode is None:
                profiler.send_signal(signal.SIGINT)
                await asyncio.wait_for(profiler.wait(), 120)
            manager.terminate()
            await asyncio.wait_for(manager.wait(), 60)
            await proxy.stop()
    minutes = window / 60
    return {
        "cells": cells,
        "listeners": len(seeded.listeners),
        "target_groups": len(arns),
        "seed_seconds": seed_s,
        "ready_seconds": ready,
        "rollout_seconds": rollout,
        "cpu_seconds_until_healthy": cpu_rollout,
        "rollout_cpu_seconds_by_process": cpu_during,
        "rollout_aws_calls": rollout_calls,
        "rollout_reconciles": reconciles,
        "rollout_apiserver_requests": api_requests,
        "rollout_healthy_curve": curve,
        "idle_seconds": window,
        "idle_cpu_percent_of_a_core": cpu,
        "rss_mib": rss,
        "idle_aws_calls": dict(calls),
        "idle_aws_calls_per_minute": {k: v / minutes for k, v in sorted(calls.items())},
        "idle_aws_writes": sum(v for k, v in calls.items() if k in WRITES),
        "reaction_seconds": reactions,
        "reaction_p50_seconds": statistics.median(reactions) if reactions else None,
        "reaction_p99_seconds": percentile(reactions, 99),
        "reaction_max_seconds": max(reactions) if reactions else None,
        "profile_svg": str(svg) if a.profile == cells else None,
        "loadavg_after": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def plot(results: list[dict[str, Any]], png: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib is not installed (pip install -e .[bench]); no PNG")
        return
    n = [r["cells"] for r in results]
    panels: list[tuple[str, list[tuple[str, str]], float | None]] = [
        ("seconds until all Healthy", [("rollout_seconds", "rollout")], 60.0),
        ("start-up: seconds until /readyz 200", [("ready_seconds", "ready")], 5.0),
        ("idle CPU, % of one core", [("idle_cpu_percent_of_a_core", "idle CPU")], 5.0),
        ("RSS, MiB", [("rss_mib", "RSS")], 150.0),
        (
            "new target group -> first ModifyRule, s",
            [("reaction_p50_seconds", "p50"), ("reaction_p99_seconds", "p99")],
            0.25,
        ),
        ("idle AWS calls per minute", [], None),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    for ax, (title, series, target) in zip(axes.flat, panels, strict=True):
        if series:
            for key, label in series:
                ax.plot(n, [r.get(key) for r in results], marker="o", label=label)
        else:
            actions = sorted({k for r in results for k in r["idle_aws_calls_per_minute"]})
            for action in actions:
                ys = [r["idle_aws_calls_per_minute"].get(action, 0) for r in results]
                ax.plot(n, ys, marker="o", label=action)
            ax.plot(n, [r["listeners"] / 5 for r in results], "k:", label="1/listener/300 s")
        if target is not None:
            ax.axhline(target, color="red", linestyle="--", linewidth=1, label="target")
        ax.set_title(title)
        ax.set_xlabel("Cells")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"okra-manager scale ({os.cpu_count()} CPUs, shared)")
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    say(f"curves in {png}")


def report(r: dict[str, Any]) -> str:
    met = {True: "met", False: "NOT met"}
    p99 = r["reaction_p99_seconds"]
    lines = [
        f"bench/cell/scale: {r['cells']} Cells ({r['target_groups']} target groups, "
        f"{r['listeners']} listeners) on one okra-manager; load after: {r['loadavg_after']}",
        f"  start-up (/readyz 200):        {r['ready_seconds']:.2f} s (target < 5 s at 1,000: "
        f"{met[r['ready_seconds'] < 5]})",
        f"  time until all Healthy:        {r['rollout_seconds']:.1f} s (target < 60 s at 1,000: "
        f"{met[r['rollout_seconds'] < 60]})",
        f"  idle CPU over {r['idle_seconds']:.0f} s:          "
        f"{r['idle_cpu_percent_of_a_core']:.2f} % of a core "
        f"(target < 5 %: {met[r['idle_cpu_percent_of_a_core'] < 5]})",
        f"  manager RSS:                   {r['rss_mib']:.0f} MiB (target < 150 MiB at 1,000: "
        f"{met[r['rss_mib'] < 150]})",
        f"  idle AWS calls per minute:     "
        f"{ {k: round(v, 2) for k, v in r['idle_aws_calls_per_minute'].items()} or 'none' }, "
        f"writes {r['idle_aws_writes']} (target 0; DescribeRules <= {r['listeners']} per 300 s)",
        "  new target group -> ModifyRule: "
        + (
            "not measured"
            if p99 is None
            else f"p50 {r['reaction_p50_seconds'] * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
            f"max {r['reaction_max_seconds'] * 1000:.0f} ms over {len(r['reaction_seconds'])} "
            f"(target p99 < 250 ms: {met[p99 < 0.25]})"
        ),
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--sizes", default="100,1000,2500,5000", help="comma-separated Cell counts")
    p.add_argument("--cells", type=int, help="one size only (the former interface)")
    p.add_argument("--idle", type=float, default=60.0, help="idle window, seconds")
    p.add_argument("--settle", type=float, default=10.0, help="seconds before the idle window")
    p.add_argument("--reactions", type=int, default=20, help="reaction samples per size")
    p.add_argument("--profile", type=int, default=0, help="py-spy the manager at this size")
    p.add_argument("--out", default=str(HERE / "scale.json"))
    p.add_argument("--png", default=str(HERE / "scale.png"))
    a = p.parse_args()
    sizes = [a.cells] if a.cells else [int(s) for s in a.sizes.split(",") if s.strip()]
    meta = {
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "argv": sys.argv[1:],
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    results: list[dict[str, Any]] = []
    for cells in sizes:
        meta_load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        say(f"[{cells}] starting a control plane and moto (load average {meta_load})")
        with ControlPlane(name="scale", controller_manager=False) as cp, MotoServer() as aws:
            crds = cp.dir / "crds"
            crds.mkdir()
            write_crds(CRD_MODELS, crds)
            cp.install_crds([crds])
            with open(cp.dir / "okra-manager.log", "wb") as log:
                out = asyncio.run(scenario(cp, aws, cells, a, log))
        out["loadavg_before"] = meta_load
        results.append(out)
        print(report(out), flush=True)
        Path(a.out).write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
        plot(results, Path(a.png))
    print(f"\nfigures in {a.out}")


if __name__ == "__main__":
    main()
