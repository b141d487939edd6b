"""`make demo-fleet`: okra's standard scenario, live, every link real.

Two v1 EKS clusters exist in AWS (moto, each cluster's API server a local control plane); okra
imports them into Argo CD, Argo CD's ApplicationSet deploys the web app onto them, okra
discovers their target groups and sends the ALB's traffic to them. Then two v2 clusters
appear: the same happens for them, and the Cell canaries the traffic over (20 %, 50 %, 100 %),
every weight read back from AWS. Then the v1 clusters are deleted in AWS and everything that
pointed at them goes. It narrates each link as it happens, ends with a summary and leaves
nothing running (Ctrl-C too). See okra_testkit.scenario for the pieces.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.scenario import StandardScenario

# The demo runs from a checkout (`make demo-fleet`): testkit/src/okra_testkit/ -> the top.
REPO = Path(__file__).resolve().parents[3]
TGB_CRD = REPO / "test" / "fixtures" / "targetgroupbinding-crd.yaml"
PHASE_TIMEOUT = 240.0
V1 = ("web-1-v1", "web-2-v1")
V2 = ("web-1-v2", "web-2-v2")


def say(text: str) -> None:
    print(text, flush=True)


@dataclass
class Narrator:
    """Prints each link of the chain as it happens, by comparing what it reads each tick."""

    s: StandardScenario
    start: float = field(default_factory=time.monotonic)
    secrets: set[str] = field(default_factory=set)
    apps: dict[str, str] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    rule: dict[str, int] = field(default_factory=dict)
    cell: tuple[Any, ...] = ()
    ticked: asyncio.Event = field(default_factory=asyncio.Event)
    """Set at the end of each tick: the story waits for one that began after what it
    waited for."""

    def line(self, text: str) -> None:
        say(f"[{time.monotonic() - self.start:6.1f}s] {text}")

    async def tick(self) -> None:
        secrets = await self.s.cluster_secrets()
        for name in sorted(set(secrets) - self.secrets):
            self.line(
                f"cluster {name} imported into Argo CD (Secret, version={secrets[name]['version']})"
            )
        for name in sorted(self.secrets - set(secrets)):
            self.line(f"cluster {name} gone from EKS: its Argo CD Secret removed")
        self.secrets = set(secrets)

        apps = {
            n: str((st.get("sync") or {}).get("status", "-"))
            for n, st in (await self.s.applications()).items()
        }
        for name in sorted(apps):
            if name not in self.apps:
                self.line(f"ApplicationSet created Application {name}")
            if apps[name] == "Synced" and self.apps.get(name) != "Synced":
                self.line(
                    f"app synced onto {name.removeprefix('web-')}: "
                    "ConfigMap, Service, TargetGroupBinding"
                )
        for name in sorted(set(self.apps) - set(apps)):
            self.line(f"ApplicationSet removed Application {name}")
        self.apps = apps

        groups = await self.s.target_groups()
        for name in sorted(set(groups) - set(self.groups)):
            self.line(f"target group of {name} discovered ({groups[name]})")
        for name in sorted(set(self.groups) - set(groups)):
            self.line(f"target group of {name} forgotten")
        self.groups = groups

        rule = await self.s.serving()
        if rule != self.rule:
            weights = " ".join(f"{n}={w}" for n, w in sorted(rule.items())) or "-"
            self.line(f"ALB rule in AWS: {weights}")
            self.rule = rule
        st = await self.s.cell()
        cell = (st.get("phase"), st.get("message"))
        if cell != self.cell and st.get("message"):
            self.line(f"Cell {st.get('phase', '-')}: {st.get('message')}")
        self.cell = cell
        self.ticked.set()

    async def watch(self) -> None:
        """Narrate until cancelled (a task beside the story, so each link shows when it
        happens, also while the story itself is busy starting a cluster)."""
        while True:
            await self.tick()
            await asyncio.sleep(0.25)

    async def until(self, done: Callable[[], Awaitable[bool]], what: str) -> None:
        deadline = time.monotonic() + PHASE_TIMEOUT
        while time.monotonic() < deadline:
            if await done():
                # The watcher tells what made it true before the story goes on: wait for a
                # tick that began after `done` read it (on a busy machine a tick is slow).
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
                    for _ in range(2):  # the tick under way, then a whole one after it
                        self.ticked.clear()
                        await self.ticked.wait()
                return
            await asyncio.sleep(0.25)
        raise TimeoutError(f"timed out after {PHASE_TIMEOUT:.0f}s waiting for {what}")


async def scenario(mgmt: ControlPlane, aws: MotoServer) -> int:
    s = StandardScenario(mgmt, aws, tgb_crd=TGB_CRD)
    say("installing Argo CD and okra into the management cluster ...")
    await s.start()
    try:
        return await _story(s)
    except Exception:
        say("last lines of okra-manager's log:\n" + s.manager_tail(30))
        raise
    finally:
        await s.stop()


async def _story(s: StandardScenario) -> int:
    n = Narrator(s)
    watcher = asyncio.create_task(n.watch())
    try:
        return await _chapters(s, n)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _chapters(s: StandardScenario, n: Narrator) -> int:
    say(f"okra-manager log: {s.manager_log}; Argo CD logs: {s.argocd.dir}")
    say(f"ALB listener {s.alb.listener_arn}; ClusterSet, AWSTargetGroupSet, Cell and ")
    say("ApplicationSet `web` created in namespace " + s.namespace)

    say("\n== v1: clusters web-1-v1 and web-2-v1 appear in EKS (tags role=web, version=v1)")
    for name in V1:
        n.line(f"provisioning cluster {name}: its target group, its binding in git, its API server")
        await s.add_cluster(name, "v1")
        n.line(f"cluster {name} appears in EKS")

    async def v1_serving() -> bool:
        return await s.serving() == {"web-1-v1": 50, "web-2-v1": 50}

    await n.until(v1_serving, "v1 serving")
    phases = {"v1 serving": time.monotonic() - n.start}

    say("\n== v2: clusters web-1-v2 and web-2-v2 appear; the Cell canaries 20% -> 50% -> 100%")
    for name in V2:
        n.line(f"provisioning cluster {name}: its target group, its binding in git, its API server")
        await s.add_cluster(name, "v2")
        n.line(f"cluster {name} appears in EKS")

    async def v2_serving() -> bool:
        return await s.serving() == {"web-1-v2": 50, "web-2-v2": 50}

    await n.until(v2_serving, "v2 serving")
    phases["v2 serving"] = time.monotonic() - n.start

    say("\n== v1 retired: web-1-v1 and web-2-v1 are deleted in EKS")
    for name in V1:
        n.line(f"deleting cluster {name} in EKS (and its API server)")
        await s.delete_cluster(name)

    async def v1_retired() -> bool:
        return (
            sorted(await s.cluster_secrets()) == sorted(V2)
            and sorted(await s.applications()) == [f"web-{c}" for c in sorted(V2)]
            and sorted(await s.target_groups()) == sorted(V2)
            and await s.rule() == {"web-1-v2": 50, "web-2-v2": 50}
        )

    await n.until(v1_retired, "v1 retired")
    phases["v1 retired"] = time.monotonic() - n.start
    rule = await s.rule()

    say("\n== Summary")
    say("clusters in Argo CD: " + ", ".join(sorted(await s.cluster_secrets())))
    say("Applications: " + ", ".join(sorted(await s.applications())))
    say("ALB rule in AWS: " + ", ".join(f"{c}={w}" for c, w in sorted(rule.items())))
    say(
        "timeline: "
        + ", ".join(f"{what} at {at:.0f}s" for what, at in phases.items())
        + f"; done in {time.monotonic() - n.start:.0f}s"
    )
    return 0


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _raise_interrupt)
    say("starting a management control plane and a moto server ...")
    rc = 1
    with ControlPlane(name="mgmt") as mgmt, MotoServer() as aws:
        try:
            rc = asyncio.run(scenario(mgmt, aws))
        except KeyboardInterrupt:
            say("\ninterrupted; cleaning up")
            rc = 130
        except Exception as e:
            say(f"\ndemo failed: {e}")
    sys.exit(rc)


if __name__ == "__main__":
    main()
