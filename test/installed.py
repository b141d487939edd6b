"""Running okra-manager as an install runs it, and proving that it works.

An install (kustomize, Helm, the image) is proven the same way each time: the manager runs
with a token of the installed ServiceAccount (so only the installed RBAC applies) and the
flags the install renders; its /readyz answers, it takes the leader-election Lease, and a
Check gets its status and an Event. The control plane has no nodes, so no pod ever runs: the
manager is a process here, started from the virtualenv or from an image's filesystem.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.controlplane import kubeconfig_dict
from okra_testkit.envtest.process import Process, free_port, wait_until

REPO = Path(__file__).resolve().parents[1]


@cache
def helm_binary() -> str:
    """helm: `$OKRA_HELM`, else built (or found cached) by `hack/build-helm.sh`."""
    found = os.environ.get("OKRA_HELM")
    if found:
        return found
    out = subprocess.run(
        [str(REPO / "hack" / "build-helm.sh")], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def get(cp: ControlPlane, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(cp.kubectl("get", *args, "-o", "json").stdout)
    return out


def service_account_kubeconfig(
    cp: ControlPlane, service_account: str, namespace: str, path: Path
) -> Path:
    """A kubeconfig with a one-hour token of the ServiceAccount."""
    token = cp.kubectl(
        "create", "token", service_account, "-n", namespace, "--duration=1h"
    ).stdout.strip()
    path.write_text(json.dumps(kubeconfig_dict("mgmt", cp.server, cp.ca_pem, "okra", token)))
    return path


def local_flags(rendered: Sequence[str]) -> tuple[list[str], int]:
    """The rendered flags with the listen addresses moved to free loopback ports (tests run
    side by side); returns the flags and the probe port."""
    probes, metrics = free_port(), free_port()
    out = [
        a
        for a in rendered
        if not a.startswith(("--metrics-bind-address", "--health-probe-bind-address"))
    ]
    out += [
        f"--metrics-bind-address=127.0.0.1:{metrics}",
        f"--health-probe-bind-address=127.0.0.1:{probes}",
    ]
    return out, probes


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def running_manager(
    command: Sequence[str], flags: Sequence[str], probes: int, log: Path, env: dict[str, str]
) -> Iterator[Process]:
    """`command` + `flags` as a process, stopped on exit; yields once /readyz answers."""
    manager = Process("okra-manager", [*command, *flags], log, env=env)
    manager.start()
    try:
        wait_until(
            lambda: _http_ok(f"http://127.0.0.1:{probes}/readyz"), 90, "/readyz", alive=manager
        )
        yield manager
    finally:
        manager.stop(timeout=20)


def clean_env() -> dict[str, str]:
    """This process's environment without okra's and kubectl's settings, so the manager
    sees only its flags; the run marker kept, so leaked servers are still found."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OKRA_", "KUBECONFIG"))}
    env["OKRA_TEST_RUN"] = os.environ.get("OKRA_TEST_RUN", "")
    return env


def assert_manager_works(
    cp: ControlPlane, manager: Process, lease: str, lease_namespace: str
) -> None:
    """It leads through the Lease, and a Check's status and Event get written."""
    wait_until(
        lambda: bool(
            cp.kubectl(
                "get",
                "lease",
                lease,
                "-n",
                lease_namespace,
                "-o",
                "jsonpath={.spec.holderIdentity}",
                check=False,
            ).stdout.strip()
        ),
        60,
        "the leader-election Lease",
        alive=manager,
    )
    namespace = f"okra-works-{uuid.uuid4().hex[:8]}"
    cp.kubectl("create", "namespace", namespace)
    try:
        check = {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Check",
            "metadata": {"name": "unreachable", "namespace": namespace},
            "spec": {"interval": "1h", "provider": {"web": {"url": "http://127.0.0.1:1/"}}},
        }
        cp.kubectl("create", "-f", "-", input_text=json.dumps(check))
        wait_until(
            lambda: (
                "lastRunTime"
                in (get(cp, "check", "unreachable", "-n", namespace).get("status") or {})
            ),
            60,
            "the Check's status",
            alive=manager,
        )
        wait_until(
            lambda: any(
                e.get("reportingController") == "check-controller"
                for e in get(cp, "events.v1.events.k8s.io", "-n", namespace)["items"]
            ),
            60,
            "the Check's Event",
            alive=manager,
        )
    finally:
        cp.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
