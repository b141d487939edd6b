"""The kube-apiserver unreachable from okra-manager for 15 s, twice, mid-rollout (a TCP
proxy between them refuses connections, as a stopped server does).

Measured and printed: after each outage, the time from the server being reachable again
to the rollout's next step (the timed pause expired during the outage), and after the
second, to a target group created during it reaching the listener rule: about a second
(informers and reconciles retry within ~1 s of a refused connection; before, 21 s). The
rollout completes.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.conftest import Env, OkraManager, cell_obj, cell_status
from okra_controllers.manager import EMULATOR_ENV, local_command
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from support import eventually
from tcpproxy import StallingProxy

OUTAGE = 15.0


class BehindProxy(OkraManager):
    """okra-manager reaching the API server through `kubeconfig` (the proxy), with
    `args` added to its command line."""

    kubeconfig: Path
    args: tuple[str, ...] = ()

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [
                    *local_command(
                        self.kubeconfig,
                        self.env.namespace,
                        aws_endpoint_url=self.env.proxy.endpoint_url,
                    ),
                    *self.args,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **EMULATOR_ENV},
            )


def what_okra_said(log: Path, last: int = 60) -> str:
    """The manager's last lines above debug level: why a resumption was slow."""
    lines = [
        line
        for line in log.read_text(errors="replace").splitlines()
        if '"level": "debug"' not in line
    ]
    return "okra-manager's last lines:\n" + "\n".join(lines[-last:])


def via(control_plane: ControlPlane, proxy: StallingProxy, path: Path) -> Path:
    """The admin kubeconfig with the server behind `proxy` (TLS passes through)."""
    config = yaml.safe_load(control_plane.kubeconfig().read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.timeout(600)
async def test_rollout_resumes_within_seconds_of_each_apiserver_outage(
    env: Env, rt_client: Client, namespace: str, control_plane: ControlPlane, tmp_path: Path
) -> None:
    ns = namespace
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    proxy = StallingProxy(host, int(port))
    await proxy.start()
    okra = BehindProxy(control_plane, env, tmp_path / "okra.log")
    okra.kubeconfig = via(control_plane, proxy, tmp_path / "via-proxy.kubeconfig")
    okra.start()

    async def status(pred: Any, within: float = 120) -> dict[str, Any]:
        async def ok() -> bool:
            return bool(pred(await cell_status(rt_client, ns)))

        assert await eventually(ok, within=within, interval=0.05), await cell_status(rt_client, ns)
        return await cell_status(rt_client, ns)

    try:
        await env.target_group("web-a-v1", "v1")
        steps: list[dict[str, Any]] = [
            {"setWeight": 20},
            {"pause": {"duration": "3s"}},
            {"setWeight": 50},
            {"pause": {"duration": "3s"}},
            {"setWeight": 70},
        ]
        await rt_client.create(cell_obj(ns, env.alb.listener_arn, steps))
        await status(lambda s: s.get("health") == "Healthy")
        await env.target_group("web-a-v2", "v2")
        first = await status(lambda s: s.get("currentStepIndex") == 1)
        resumed: list[float] = []
        for index in (1, 3):
            await status(lambda s, i=index: s.get("currentStepIndex") == i)
            await proxy.refuse()
            await asyncio.sleep(OUTAGE)  # the pause expires meanwhile
            if index == 3:
                await env.target_group("web-b-v2", "v2")  # created while okra is blind
            await proxy.accept()
            back = time.monotonic()
            await status(lambda s, i=index: (s.get("currentStepIndex") or 0) > i)
            resumed.append(time.monotonic() - back)

        async def in_rule() -> bool:
            return "web-b-v2" in await env.rule_weights()

        assert await eventually(in_rule, within=60, interval=0.05)
        reached = time.monotonic() - back
        final = await status(lambda s: s.get("stableVersion") == "v2" and s["health"] == "Healthy")
        print(
            f"\ntwo {OUTAGE:.0f} s outages of the API server mid-rollout: the rollout's next "
            f"step {resumed[0]:.2f}s and {resumed[1]:.2f}s after it answered again; a target "
            f"group created during the second outage reached the rule {reached:.2f}s after"
        )
        assert first["rolloutId"]
        assert final.get("canaryVersion") is None
        # Alone on a quiet machine: well under 2 s; bounds leave room for a loaded CI
        # machine and still fail the old backoff (21 s after the second outage).
        assert max(resumed) < 10, what_okra_said(okra.log)
        assert reached < 10
    finally:
        okra.stop()
        await proxy.close()
