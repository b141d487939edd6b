"""`make demo`: a real cluster canary on your machine, start to finish.

It starts a local control plane (kube-apiserver + etcd) and a moto server for
AWS, runs okra-manager as its own process against them, creates an ALB with a
listener and two v1 target groups, and a Cell that canaries through
`stepWeight 20, pause 5s, analysis, stepWeight 40, pause 5s`. Then it brings
up v2 and shows the rollout live, weights read back from AWS, until v2 serves
100%; then v3, whose analysis fails, so okra sends all traffic back to v2 and
blocks v3. It ends with a summary and leaves nothing running (Ctrl-C too).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from aiohttp import web

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import GVK, Client
from okra_runtime.crdgen import write_crds
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.seed import LoadBalancer, Network, Seeder

NS = "demo"
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
BLOCKLIST = GVK("okra.mumo.co", "v1alpha1", "VersionBlocklist")
STEPS = [
    {"stepWeight": 20},
    {"pause": {"duration": "5s"}},
    {
        "analysis": {
            "templates": [{"templateName": "error-rate"}],
            "args": [
                {
                    "name": "version",
                    "valueFrom": {"fieldRef": {"fieldPath": "status.canaryVersion"}},
                }
            ],
        }
    },
    {"stepWeight": 40},
    {"pause": {"duration": "5s"}},
]
ERROR_RATES = {"v1": 0.01, "v2": 0.01, "v3": 0.25}
PHASE_TIMEOUT = 120.0


def say(text: str) -> None:
    print(text, flush=True)


async def observe(
    read_weights: Callable[[], Awaitable[dict[str, int]]],
    read_status: Callable[[], Awaitable[dict[str, Any]]],
) -> tuple[dict[str, Any], dict[str, int]]:
    """The Cell's status and the weights in AWS for one line: the weights first, then the
    status. The Cell writes its status before the weights it plans reach AWS, so a status
    read after the weights is never older than them: a line never says "waiting for v3"
    beside weights that already give v3 traffic. (The status may be newer: a step that
    AWS does not show yet says so itself.)"""
    weights = await read_weights()
    status = await read_status()
    return status, weights


def narration(elapsed: float, status: Mapping[str, Any], weights: Mapping[str, int]) -> str:
    """One line (and the status message under it) of the demo's story."""
    w = " ".join(f"{n}={v}" for n, v in sorted(weights.items())) or "-"
    return (
        f"[{elapsed:6.1f}s] {status.get('phase', '-'):<11} "
        f"AWS: {w}\n{'':10}{status.get('message', '')}"
    )


class Demo:
    def __init__(self, cp: ControlPlane, aws: MotoServer) -> None:
        self.cp, self.aws = cp, aws
        self.seed = Seeder(aws.config)
        self.start = time.monotonic()
        self.tg_arns: dict[str, str] = {}
        self.client: Client
        self.network: Network
        self.alb: LoadBalancer
        self.metrics_url = ""

    async def metrics_server(self) -> web.AppRunner:
        async def handle(request: web.Request) -> web.Response:
            return web.json_response({"errorRate": ERROR_RATES.get(request.query["version"], 1.0)})

        app = web.Application()
        app.router.add_get("/error-rate", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.metrics_url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return runner

    async def target_group(self, name: str, version: str) -> None:
        arn = await self.seed.target_group(name, self.network)
        await self.seed.register_targets(arn, await self.seed.instances(1, self.network))
        self.tg_arns[name] = arn
        await self.client.create(
            {
                "apiVersion": "okra.mumo.co/v1alpha1",
                "kind": "AWSTargetGroup",
                "metadata": {
                    "name": name,
                    "namespace": NS,
                    "labels": {"role": "web", "okra.mumo.co/version": version},
                },
                "spec": {"arn": arn},
            }
        )
        say(f"  + target group {name} ({version})")

    async def aws_weights(self) -> dict[str, int]:
        names = {a: n for n, a in self.tg_arns.items()}
        async with self.aws.config.client("elbv2") as elb:
            rules = (await elb.describe_rules(ListenerArn=self.alb.listener_arn))["Rules"]
        for r in rules:
            fwd = next((a for a in r["Actions"] if a["Type"] == "forward"), None)
            if not r.get("IsDefault") and fwd:
                return {
                    names.get(t["TargetGroupArn"], "?"): t["Weight"]
                    for t in fwd["ForwardConfig"]["TargetGroups"]
                    if t["Weight"] > 0
                }
        return {}

    async def cell_status(self) -> dict[str, Any]:
        status: dict[str, Any] = (await self.client.get(CELL, "web", NS)).get("status") or {}
        return status

    async def watch_until(self, done: Any, what: str) -> dict[str, Any]:
        """Print a line whenever the Cell or the weights in AWS change, until `done`."""
        last = None
        deadline = time.monotonic() + PHASE_TIMEOUT
        while time.monotonic() < deadline:
            st, weights = await observe(self.aws_weights, self.cell_status)
            frame = (st.get("phase"), st.get("message"), tuple(sorted(weights.items())))
            if frame != last:
                last = frame
                say(narration(time.monotonic() - self.start, st, weights))
            if done(st, weights):
                return st
            await asyncio.sleep(0.25)
        raise TimeoutError(f"timed out after {PHASE_TIMEOUT:.0f}s waiting for {what}")

    async def run(self) -> int:
        runner = await self.metrics_server()
        try:
            return await self._scenario()
        finally:
            await runner.cleanup()

    async def _scenario(self) -> int:
        self.client = await Client.from_kubeconfig(self.cp.kubeconfig())
        async with self.client:
            await self.client.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
            )
            self.network = await self.seed.network()
            self.alb = await self.seed.alb("demo-web", self.network)
            say(f"ALB listener {self.alb.listener_arn}")
            await self.client.create(
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "AnalysisTemplate",
                    "metadata": {"name": "error-rate", "namespace": NS},
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
                                        "url": self.metrics_url
                                        + "/error-rate?version={{args.version}}",
                                        "jsonPath": "{$.errorRate}",
                                    }
                                },
                            }
                        ],
                    },
                }
            )
            await self.target_group("web-1-v1", "v1")
            await self.target_group("web-2-v1", "v1")
            await self.client.create(
                {
                    "apiVersion": "okra.mumo.co/v1alpha1",
                    "kind": "Cell",
                    "metadata": {"name": "web", "namespace": NS},
                    "spec": {
                        "ingress": {
                            "type": "AWSApplicationLoadBalancer",
                            "awsApplicationLoadBalancer": {
                                "listenerARN": self.alb.listener_arn,
                                "targetGroupSelector": {"matchLabels": {"role": "web"}},
                            },
                        },
                        # Every version runs on two clusters: a rollout starts only once
                        # both target groups of the new version exist.
                        "replicas": 2,
                        "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
                    },
                }
            )
            say("\n== Cell web created: the first version goes straight to 100%")
            await self.watch_until(
                lambda s, w: s.get("health") == "Healthy" and w == {"web-1-v1": 50, "web-2-v1": 50},
                "v1 at 100%",
            )

            say("\n== v2 comes up: canary 20% -> pause -> analysis -> 60% -> pause -> 100%")
            await self.target_group("web-1-v2", "v2")
            await self.target_group("web-2-v2", "v2")
            await self.watch_until(
                lambda s, w: (
                    s.get("stableVersion") == "v2"
                    and s.get("health") == "Healthy"
                    and w == {"web-1-v2": 50, "web-2-v2": 50}
                ),
                "v2 at 100%",
            )

            say("\n== v3 comes up with a 25% error rate: its analysis fails")
            await self.target_group("web-1-v3", "v3")
            await self.target_group("web-2-v3", "v3")
            await self.watch_until(
                lambda s, w: (
                    s.get("health") == "Degraded" and w == {"web-1-v2": 50, "web-2-v2": 50}
                ),
                "the rollback to v2",
            )
            blocklist = await self.client.get(BLOCKLIST, "web", NS)
            weights = await self.aws_weights()
        say("\n== Summary")
        say("final weights in AWS: " + ", ".join(f"{n}={w}" for n, w in sorted(weights.items())))
        for item in blocklist["spec"]["items"]:
            say(f"blocked: {item['version']} ({item['cause']})")
        say(f"done in {time.monotonic() - self.start:.0f}s")
        return 0


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _raise_interrupt)
    say("starting a local control plane and a moto server ...")
    rc = 1
    with ControlPlane(name="demo") as cp, MotoServer() as aws:
        crds = Path(tempfile.mkdtemp(prefix="crds-", dir=cp.dir))
        write_crds(CRD_MODELS, crds)
        cp.install_crds([crds])
        log = cp.dir / "okra-manager.log"
        with open(log, "wb") as out:
            manager = subprocess.Popen(
                local_command(
                    cp.kubeconfig(),
                    NS,
                    aws_endpoint_url=aws.endpoint_url,
                    aws_region=aws.region,
                    log_format="console",
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **EMULATOR_ENV},
            )
        say(f"okra-manager running (log: {log})")
        say(f"watch it yourself: okra --kubeconfig {cp.kubeconfig()} -n {NS} get cell web --watch")
        try:
            rc = asyncio.run(Demo(cp, aws).run())
        except KeyboardInterrupt:
            say("\ninterrupted; cleaning up")
            rc = 130
        except Exception as e:
            say(f"\ndemo failed: {e}")
            say(
                "last lines of okra-manager's log:\n"
                + "\n".join(log.read_text(errors="replace").splitlines()[-30:])
            )
        finally:
            manager.terminate()
            try:
                manager.wait(20)
            except subprocess.TimeoutExpired:
                manager.kill()
                manager.wait()
    sys.exit(rc)


if __name__ == "__main__":
    main()
