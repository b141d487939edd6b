"""`okra get cell web --watch` and `okra get cells -A -w` on a real terminal (tmux)
during a rollout driven by the real manager: the screens follow each weight change.

Each watch runs in its own tmux server (`-L`, a socket of its own) with a fixed
size; the test reads the screen with `capture-pane`, as a person would see it.
How long a screen takes to show a weight the controller wrote is printed
(`-s` shows it); the bound asserted is generous, the figure is what matters."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from okra_runtime import GVK, Client
from okra_testkit.envtest import ControlPlane
from support import eventually

from .conftest import Env, OkraManager, cell_obj, cell_status

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="needs tmux (Debian's tmux; .ci/run installs it)"
)
ALB_CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSApplicationLoadBalancerConfig")
STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "2s"}},
    {"setWeight": 60},
    {"pause": {}},
]


class Screen:
    def __init__(self, socket: str, command: list[str]) -> None:
        self.socket = socket
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in {"TERM": "xterm-256color"}.items())
        subprocess.run(
            [
                "tmux",
                "-L",
                socket,
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "60",
                "-s",
                "w",
                f"env {env} {shlex.join(command)}",
            ],
            check=True,
            env={**os.environ, "TMUX": ""},
        )

    def text(self) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, "capture-pane", "-p", "-t", "w"],
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def screens(namespace: str) -> Iterator[list[Screen]]:
    opened: list[Screen] = []
    yield opened
    for s in opened:
        s.close()


def cli(cp: ControlPlane, ns: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(cp.kubeconfig()),
        "-n",
        ns,
        *args,
    ]


async def shows(screen: Screen, text: str, within: float = 30) -> float:
    """The monotonic time at which the screen shows `text` (polled every 20 ms)."""
    start = time.monotonic()
    while time.monotonic() - start < within:
        if text in screen.text():
            return time.monotonic()
        await asyncio.sleep(0.02)
    raise AssertionError(f"the screen never showed {text!r}:\n{screen.text()}")


async def test_watch_screens_follow_a_rollout(
    env: Env,
    okra: OkraManager,
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    screens: list[Screen],
) -> None:
    ns = namespace
    await env.target_group("web-a-v1", "v1")
    await rt_client.create(cell_obj(ns, env.alb.listener_arn, STEPS))

    async def healthy() -> bool:
        return (await cell_status(rt_client, ns)).get("health") == "Healthy"

    assert await eventually(healthy, within=60)
    cell_screen = Screen(f"okra-cell-{ns}", cli(control_plane, ns, "get", "cell", "web", "--watch"))
    screens.append(cell_screen)
    cells_screen = Screen(f"okra-cells-{ns}", cli(control_plane, ns, "get", "cells", "-A", "-w"))
    screens.append(cells_screen)
    await shows(cell_screen, "Phase:    Completed (Healthy)")
    await shows(cells_screen, f"{ns}  web")

    await env.target_group("web-a-v2", "v2")
    for weight, row in ((20, "v1      v2      20"), (60, "v1      v2      60")):
        # When the controller writes the config with this weight, both screens follow.
        async def written(weight: int = weight) -> bool:
            cfg = await rt_client.get(ALB_CONFIG, "web", ns)
            return any(
                f["weight"] == weight and f["name"] == "web-a-v2"
                for f in cfg["spec"]["forwardTargetGroups"]
            )

        t0 = time.monotonic()
        while not await written():
            assert time.monotonic() - t0 < 60, "the controller never wrote the weight"
            await asyncio.sleep(0.02)
        seen = time.monotonic()
        lag_cell = await shows(cell_screen, f"Canary:   v2  {weight}%", within=10) - seen
        lag_cells = await shows(cells_screen, row, within=10) - seen
        print(
            f"weight {weight}: get cell --watch after {lag_cell:.2f}s, "
            f"get cells -A -w after {lag_cells:.2f}s"
        )
    await shows(cell_screen, "▶  4.  pause (until promoted)")
    assert "(updated " in cell_screen.text()  # the footer of a terminal frame
    await shows(cells_screen, "Paused")
    row = next(line for line in cells_screen.text().splitlines() if line.startswith(ns))
    assert row.split()[1:8] == ["web", "Migrating", "Paused", "v1", "v2", "60", "4/4"]
