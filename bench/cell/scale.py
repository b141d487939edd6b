"""bench/cell/scale.py: many Cells on one okra-manager — how long until all are
rolled out, and what the manager costs while they sit idle.

Each Cell has its own target group (one healthy instance) and its own listener
rule (a host condition, a distinct priority); Cells are spread over listeners of
one ALB, 50 per listener (AWS allows 100 rules per listener), as they would be
in an account that runs this many. The
idle window starts once every Cell reports Healthy; CPU is the manager
process's user+system time over the window (from /proc), as % of one core.
DESIGN §6 target: 1,000 Cells, idle CPU < 5 % of a core.

    bench/cell/scale.sh [--cells 1000] [--idle 120]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.aws.emulator import CountingProxy, MotoServer
from okra_controllers.aws.seed import Seeder
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import GVK, Client
from okra_runtime.crdgen import write_crds
from okra_runtime.envtest import ControlPlane

NS = "scale"
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def gather_limited(n: int, coros: list[Any]) -> None:
    sem = asyncio.Semaphore(n)

    async def one(c: Any) -> None:
        async with sem:
            await c

    await asyncio.gather(*(one(c) for c in coros))


async def scenario(
    cp: ControlPlane, aws: MotoServer, cells: int, idle: float, log: IO[bytes]
) -> dict[str, Any]:
    seed = Seeder(aws.config)
    net = await seed.network()
    alb = await seed.alb("scale", net)
    per_listener = 50
    listeners = [alb.listener_arn]
    async with aws.config.client("elbv2") as elb:
        for port in range(1, (cells + per_listener - 1) // per_listener):
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
    arns: list[str] = [""] * cells

    async def tg(i: int) -> None:
        for attempt in range(5):  # moto answers an occasional 500 under concurrent load
            try:
                if not arns[i]:
                    arns[i] = await seed.target_group(f"web-{i}", net)
                await seed.register_targets(arns[i], [instance])
                return
            except Exception:
                if attempt == 4:
                    raise
                await asyncio.sleep(0.5)

    t = time.monotonic()
    await gather_limited(16, [tg(i) for i in range(cells)])
    print(f"{cells} target groups in moto in {time.monotonic() - t:.1f}s", flush=True)
    async with await Client.from_kubeconfig(cp.kubeconfig()) as c:
        await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})

        async def objects(i: int) -> None:
            await c.create(
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "AWSTargetGroup",
                    "metadata": {
                        "name": f"web-{i}",
                        "namespace": NS,
                        "labels": {"cell": f"c{i}", "okra.mumo.co/version": "v1"},
                    },
                    "spec": {"arn": arns[i]},
                }
            )
            await c.create(
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "Cell",
                    "metadata": {"name": f"c{i}", "namespace": NS},
                    "spec": {
                        "ingress": {
                            "type": "AWSApplicationLoadBalancer",
                            "awsApplicationLoadBalancer": {
                                "listenerARN": alb.listener_arn,
                                "targetGroupSelector": {"matchLabels": {"cell": f"c{i}"}},
                                "listenerRule": {"priority": i + 1, "hosts": [f"c{i}.example.com"]},
                            },
                        }
                    },
                }
            )

        await gather_limited(32, [objects(i) for i in range(cells)])
        proxy = CountingProxy(aws.endpoint_url)
        await proxy.start()
        manager = await asyncio.create_subprocess_exec(
            *local_command(
                cp.kubeconfig(),
                NS,
                aws_endpoint_url=proxy.endpoint_url,
                controllers="cell,albconfig,pause",
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **EMULATOR_ENV},
        )
        try:
            start = time.monotonic()
            while True:
                items = (await c.list(CELL, NS)).items
                healthy = sum((i.get("status") or {}).get("health") == "Healthy" for i in items)
                if healthy == cells:
                    break
                if time.monotonic() - start > 1800:
                    raise TimeoutError(f"only {healthy}/{cells} Cells healthy after 30 min")
                await asyncio.sleep(2)
            rollout = time.monotonic() - start
            print(
                f"all {cells} Cells Healthy after {rollout:.1f}s; idle window {idle:.0f}s",
                flush=True,
            )
            await asyncio.sleep(5)  # let the last status writes and events settle
            cpu0, t0, since = cpu_seconds(manager.pid), time.monotonic(), time.monotonic()
            await asyncio.sleep(idle)
            cpu = (cpu_seconds(manager.pid) - cpu0) / (time.monotonic() - t0) * 100
            rss = rss_mib(manager.pid)
            calls = collections.Counter(proxy.actions(since))
        finally:
            manager.terminate()
            await asyncio.wait_for(manager.wait(), 60)
            await proxy.stop()
    return {
        "cells": cells,
        "rollout_seconds": rollout,
        "idle_seconds": idle,
        "idle_cpu_percent_of_a_core": cpu,
        "rss_mib": rss,
        "idle_aws_calls": dict(calls),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cells", type=int, default=1000)
    p.add_argument("--idle", type=float, default=120.0)
    a = p.parse_args()
    with ControlPlane(name="scale", controller_manager=False) as cp, MotoServer() as aws:
        crds = cp.dir / "crds"
        crds.mkdir()
        write_crds(CRD_MODELS, crds)
        cp.install_crds([crds])
        with open(cp.dir / "okra-manager.log", "wb") as log:
            out = asyncio.run(scenario(cp, aws, a.cells, a.idle, log))
    cpu = out["idle_cpu_percent_of_a_core"]
    print(f"\nbench/cell/scale: {out['cells']} Cells on one okra-manager")
    print(f"  time until all Healthy:        {out['rollout_seconds']:.1f} s")
    print(
        f"  idle CPU over {out['idle_seconds']:.0f} s:          {cpu:.2f} % of a core "
        f"(target < 5 %: {'met' if cpu < 5 else 'not met'})"
    )
    print(f"  manager RSS:                   {out['rss_mib']:.0f} MiB")
    print(
        f"  AWS calls while idle:          {out['idle_aws_calls'] or 'none'} "
        "(resync every 300 s: at most one DescribeRules per Cell per resync)"
    )


if __name__ == "__main__":
    main()
