"""bench/cell: how fast okra reacts, and what an idle Cell costs in AWS calls.

Reaction: the time from creating an AWSTargetGroup of a new version to okra's
first ModifyRule on the listener rule, as seen by a proxy in front of the AWS
endpoint (moto), over several rounds. The anchor is the original okra, which
finds new target groups by polling every 30 s (0-30 s, 15 s on average).

Idle cost: AWS calls by action during an idle window after the rollout, with
okra's default resync (300 s): the target is no writes and at most one
DescribeRules per resync per Cell.

    bench/cell/run.sh [--rounds 5] [--idle 60]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import IO

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import GVK, Client
from okra_runtime.crdgen import write_crds
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import Seeder

NS = "bench"
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")


async def scenario(
    cp: ControlPlane, aws: MotoServer, rounds: int, idle: float, log: IO[bytes]
) -> dict[str, object]:
    proxy = CountingProxy(aws.endpoint_url)
    await proxy.start()
    manager = await asyncio.create_subprocess_exec(
        *local_command(cp.kubeconfig(), NS, aws_endpoint_url=proxy.endpoint_url),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, **EMULATOR_ENV},
    )
    seed = Seeder(aws.config)
    try:
        async with await Client.from_kubeconfig(cp.kubeconfig()) as c:
            await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
            net = await seed.network()
            alb = await seed.alb("bench", net)

            async def target_group(version: int) -> float:
                arn = await seed.target_group(f"web-v{version}", net)
                await seed.register_targets(arn, await seed.instances(1, net))
                t0 = time.monotonic()
                await c.create(
                    {
                        "apiVersion": "okra.mumo.co/v1alpha1",
                        "kind": "AWSTargetGroup",
                        "metadata": {
                            "name": f"web-v{version}",
                            "namespace": NS,
                            "labels": {"role": "web", "okra.mumo.co/version": f"v{version}"},
                        },
                        "spec": {"arn": arn},
                    }
                )
                return t0

            async def first(action: str, since: float, within: float = 60) -> float:
                deadline = time.monotonic() + within
                while time.monotonic() < deadline:
                    for t, a in proxy.calls:
                        if t >= since and a == action:
                            return t - since
                    await asyncio.sleep(0.005)
                raise TimeoutError(f"no {action} within {within}s")

            await target_group(1)
            await c.create(
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "Cell",
                    "metadata": {"name": "web", "namespace": NS},
                    "spec": {
                        "ingress": {
                            "type": "AWSApplicationLoadBalancer",
                            "awsApplicationLoadBalancer": {
                                "listenerARN": alb.listener_arn,
                                "targetGroupSelector": {"matchLabels": {"role": "web"}},
                            },
                        }
                    },
                }
            )
            await first("CreateRule", 0.0)
            reactions = []
            for version in range(2, rounds + 2):
                await asyncio.sleep(1.0)  # let the previous switch settle
                t0 = await target_group(version)
                reactions.append(await first("ModifyRule", t0))

            async def idle_since() -> float:
                while True:  # wait for the Cell to report Healthy on the last version
                    st = (await c.get(CELL, "web", NS)).get("status") or {}
                    if (
                        st.get("health") == "Healthy"
                        and st.get("stableVersion") == f"v{rounds + 1}"
                    ):
                        return time.monotonic()
                    await asyncio.sleep(0.1)

            start = await idle_since()
            await asyncio.sleep(idle)
            calls = collections.Counter(proxy.actions(start))
    finally:
        manager.terminate()
        await asyncio.wait_for(manager.wait(), 30)
        await proxy.stop()
    return {"reaction_seconds": reactions, "idle_window_seconds": idle, "idle_calls": dict(calls)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--idle", type=float, default=60.0)
    a = p.parse_args()
    with ControlPlane(name="bench-cell", controller_manager=False) as cp, MotoServer() as aws:
        crds = cp.dir / "crds"
        crds.mkdir()
        write_crds(CRD_MODELS, crds)
        cp.install_crds([crds])
        with open(cp.dir / "okra-manager.log", "wb") as log:
            out = asyncio.run(scenario(cp, aws, a.rounds, a.idle, log))
    r = out["reaction_seconds"]
    assert isinstance(r, list)
    calls = out["idle_calls"]
    assert isinstance(calls, dict)
    writes = {k: v for k, v in calls.items() if not k.startswith("Describe")}
    print("\nbench/cell: new AWSTargetGroup -> first ModifyRule (listener rule weights)")
    print(f"{'':24}{'okra (this run)':>18}{'original okra':>18}")
    print(f"{'median':24}{statistics.median(r):>17.3f}s{'15 s (polls/30s)':>18}")
    print(f"{'min / max':24}{min(r):>8.3f}s /{max(r):>6.3f}s{'0 s / 30 s':>18}")
    print(f"{'rounds':24}{len(r):>18}")
    print(f"target < 1 s: {'met' if max(r) < 1 else 'not met'}")
    print(f"\nidle Cell, {out['idle_window_seconds']:.0f} s after the rollout (resync 300 s):")
    print(f"  AWS calls by action: {calls or 'none'}")
    print(f"  writes: {writes or 'none'}  (target: none; at most one DescribeRules per resync)")
    Path(__file__).with_name("results.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
