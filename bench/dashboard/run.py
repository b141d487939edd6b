"""bench/dashboard/run.py: `okra dashboard` with many Cells, in headless Chromium.

    OKRA_ASSETS="$(hack/build-control-plane.sh)" .venv/bin/python bench/dashboard/run.py \\
        [--cells 1000] [--changes 10]

On a fresh local control plane (no okra-manager: the bench writes the objects and their
status itself), `--cells` Cells are created mid-rollout, each with an ALB config whose
`status.applied` has two target groups (v1 80, v2 20). Then `okra dashboard -n bench` runs as
a user would start it, and Debian's chromium (through Selenium and chromium-driver) measures:

- first render: navigation start -> the Cells table has every row (the page's own clock);
- the bytes of server-sent events a new page receives until it has every Cell;
- apply a change, `--changes` times (default 10) on Cells spread over the list: a status
  write to one Cell's config (the weights AWS shows) -> the page shows the new weights
  (the API server's answer to the write, on this process's clock, to the page's
  MutationObserver, on the browser's clock; one machine, one clock). p50 and max.

Anchor, in the same run: `okra get cells -n bench` printing the same Cells (the CLI's list).
The dashboard holds one watch per kind (ten), whatever the number of Cells. Nothing here is
asserted; DESIGN §6's target (a weight change reaches the open page in < 1 s) is printed
beside the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from okra_runtime import GVK, Client
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[2]
NS = "bench"
CELL = GVK("okra.mumo.co", "v1alpha1", "Cell")
CONFIG = GVK("okra.mumo.co", "v1alpha1", "AWSApplicationLoadBalancerConfig")
LISTENER = "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/bench/1/2"
STEPS = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]


def arn(name: str) -> str:
    return f"arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{name}/1"


def spec(name: str, canary: int) -> dict[str, Any]:
    fwd = [
        {"name": f"{name}-v1", "arn": arn(f"{name}-v1"), "weight": 100 - canary},
        {"name": f"{name}-v2", "arn": arn(f"{name}-v2"), "weight": canary},
    ]
    return {
        "listenerARN": LISTENER,
        "priority": 1,
        "conditions": [{"pathPatterns": [f"/{name}"]}],
        "forwardTargetGroups": fwd,
    }


def weights_status(name: str, canary: int) -> dict[str, Any]:
    """What okra writes once AWS shows `canary`% on v2: `applied` is the spec read back."""
    return {
        "observedGeneration": 1,
        "conditions": [
            {
                "type": "Synced",
                "status": "True",
                "reason": "Applied",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
        "applied": spec(name, canary),
    }


async def seed(c: Client, name: str) -> None:
    cell = await c.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "ingress": {
                    "type": "AWSApplicationLoadBalancer",
                    "awsApplicationLoadBalancer": {
                        "listenerARN": LISTENER,
                        "targetGroupSelector": {"matchLabels": {"cell": name}},
                    },
                },
                "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
            },
        }
    )
    cell["status"] = {
        "phase": "Migrating",
        "health": "Paused",
        "stableVersion": "v1",
        "canaryVersion": "v2",
        "canaryWeight": 20,
        "currentStepIndex": 1,
        "rolloutId": "r1",
        "message": "canary v2 at 20%: paused at step 2 until promoted",
        "targetGroups": [
            {"name": f"{name}-v1", "arn": arn(f"{name}-v1"), "weight": 80, "version": "v1"},
            {"name": f"{name}-v2", "arn": arn(f"{name}-v2"), "weight": 20, "version": "v2"},
        ],
    }
    await c.update_status(cell)
    config = await c.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "AWSApplicationLoadBalancerConfig",
            "metadata": {"name": name, "namespace": NS},
            "spec": spec(name, 20),
        }
    )
    config["status"] = weights_status(name, 20)
    await c.update_status(config)


async def seed_all(c: Client, n: int) -> None:
    sem = asyncio.Semaphore(16)

    async def one(i: int) -> None:
        async with sem:
            await seed(c, f"cell-{i:05d}")

    await asyncio.gather(*(one(i) for i in range(n)))


def stream_bytes(url: str, n: int) -> int:
    """Bytes of server-sent events a new page receives until it has all `n` Cells."""
    size, cells = 0, set()
    with urllib.request.urlopen(url + "api/events", timeout=60) as resp:
        while len(cells) < n:
            line = resp.readline()
            size += len(line)
            if line.startswith(b"data: "):
                cells.update((json.loads(line[6:]).get("cells") or {}).get("set") or {})
    return size


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        sys.exit("needs Debian's chromium and chromium-driver (apt-get install ...)")
    options = Options()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def wait(d: Any, script: str, within: float = 120) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(d, within, poll_frequency=0.01).until(lambda d: d.execute_script(script))


OBSERVE = """
window.okraSeen = {};
new MutationObserver(() => document.querySelectorAll('[data-weights]').forEach((el) => {
  const seen = window.okraSeen;
  if (!(el.dataset.weights in seen)) seen[el.dataset.weights] = Date.now() / 1000;
})).observe(document.body, {subtree: true, childList: true});
"""


async def run(cp: ControlPlane, n: int, changes: int) -> None:
    async with await Client.from_kubeconfig(cp.kubeconfig()) as c:
        await c.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        t = time.perf_counter()
        await seed_all(c, n)
        print(f"seeded {n} Cells and configs in {time.perf_counter() - t:.1f} s")

        kubeconfig = str(cp.kubeconfig())
        okra = str(Path(sys.executable).with_name("okra"))
        t = time.perf_counter()
        subprocess.run(  # noqa: ASYNC221 (a timing, nothing else runs)
            [okra, "get", "cells", "-n", NS, "--kubeconfig", kubeconfig],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        cli = time.perf_counter() - t

        proc = subprocess.Popen(  # noqa: ASYNC220 (read in a thread below)
            [okra, "dashboard", "-n", NS, "--port", "0", "--kubeconfig", kubeconfig],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = (await asyncio.to_thread(proc.stdout.readline)).split()[2]
            size = await asyncio.to_thread(stream_bytes, url, n)
            d = await asyncio.to_thread(browser)
            try:
                await asyncio.to_thread(d.get, url)
                await asyncio.to_thread(
                    wait, d, f"return document.querySelectorAll('#cells tbody tr').length >= {n}"
                )
                first = await asyncio.to_thread(d.execute_script, "return performance.now() / 1000")
                await asyncio.to_thread(d.execute_script, OBSERVE)
                delays = []
                for k in range(changes):
                    name = f"cell-{(k * 997) % n:05d}"
                    canary = 30 + k
                    text = f"v1 {100 - canary} · v2 {canary}"
                    config = await c.get(CONFIG, name, NS)
                    config["status"] = weights_status(name, canary)
                    await c.update_status(config)
                    written = time.time()
                    shown = await asyncio.to_thread(
                        wait, d, f"return window.okraSeen[{json.dumps(text)}]"
                    )
                    delays.append(shown - written)
            finally:
                await asyncio.to_thread(d.quit)
        finally:
            proc.terminate()
            proc.wait(10)

    print(f"Cells: {n}; the dashboard holds one watch per kind (10), not one per Cell")
    print(f"anchor: okra get cells -n {NS} ({n} Cells): {cli:.2f} s")
    print(f"first render (navigation -> {n} rows in the table): {first:.2f} s")
    print(f"server-sent events until a new page has every Cell: {size / 1024:.0f} KiB")
    print(
        f"apply a change (status written -> page shows it), {len(delays)} changes: "
        f"p50 {statistics.median(delays) * 1000:.0f} ms, max {max(delays) * 1000:.0f} ms "
        "(DESIGN §6 target: < 1 s)"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--cells", type=int, default=1000)
    p.add_argument("--changes", type=int, default=10)
    a = p.parse_args()
    with ControlPlane(name="dashboard-bench", controller_manager=False) as cp:
        cp.install_crds([REPO / "config" / "crd" / "bases"])
        asyncio.run(run(cp, a.cells, a.changes))


if __name__ == "__main__":
    main()
