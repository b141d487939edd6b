"""The node itself: Pods scheduled and run, a Deployment reached through its Service by a Job
(kube-proxy, the Job controller, the kubelet), Pod logs through the API server, and, last,
the host as it was once the node is gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from okra_testkit.envtest import ControlPlane
from okra_testkit.hoststate import HostState
from okra_testkit.images import BUSYBOX_IMAGE
from okra_testkit.node import Node, node_control_plane

from .conftest import NodeWorld


def apply_list(cp: ControlPlane, namespace: str, *objects: dict[str, object]) -> None:
    cp.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def _wait(cp: ControlPlane, namespace: str, what: str, condition: str, timeout: int = 110) -> None:
    cp.kubectl("wait", "-n", namespace, what, f"--for={condition}", f"--timeout={timeout}s")


def test_a_job_reaches_a_deployment_through_its_service(
    control_plane: ControlPlane, namespace: str
) -> None:
    cp = control_plane
    labels = {"app": "web"}
    serve = (
        "mkdir -p /tmp/www && echo served-by-$(hostname) > /tmp/www/index.html"
        " && exec httpd -f -p 8080 -h /tmp/www"
    )
    apply_list(
        cp,
        namespace,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [
                            {
                                "name": "web",
                                "image": BUSYBOX_IMAGE,
                                "imagePullPolicy": "Never",
                                "command": ["sh", "-c", serve],
                                "ports": [{"containerPort": 8080}],
                                "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
                            }
                        ]
                    },
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    _wait(cp, namespace, "deployment/web", "condition=Available")
    ip = cp.kubectl(
        "get", "-n", namespace, "service/web", "-o", "jsonpath={.spec.clusterIP}"
    ).stdout
    # kube-proxy programs the Service's rules some time after its endpoints are ready: on a
    # loaded host a first request to the cluster IP got a 404 from elsewhere (no rule yet, or
    # the rules of an earlier Service that had the IP). The client asks until the answer is
    # this Deployment's, for up to 60 s, as any client of a new Service must.
    fetch = (
        f"for i in $(seq 60); do wget -q -O- http://{ip}/index.html | grep served-by-web-"
        " && exit 0; sleep 1; done; exit 1"
    )
    apply_list(
        cp,
        namespace,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "fetch"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "fetch",
                                "image": BUSYBOX_IMAGE,
                                "imagePullPolicy": "Never",
                                "command": [
                                    "sh",
                                    "-c",
                                    fetch,
                                ],
                            }
                        ],
                    }
                },
            },
        },
    )
    outcome = _job_outcome(cp, namespace, "fetch", within=180)
    logs = cp.kubectl("logs", "-n", namespace, "job/fetch").stdout
    assert outcome == "Complete", logs
    assert "served-by-web-" in logs


def _job_outcome(cp: ControlPlane, namespace: str, name: str, within: float = 120) -> str:
    """The Job's final condition (Complete or Failed), once it has one."""
    deadline = time.monotonic() + within
    path = "jsonpath={.status.conditions[?(@.status=='True')].type}"
    while time.monotonic() < deadline:
        types = cp.kubectl("get", "-n", namespace, f"job/{name}", "-o", path).stdout.split()
        done = [t for t in types if t in ("Complete", "Failed")]
        if done:
            return done[0]
        time.sleep(0.5)
    raise AssertionError(f"job {name} neither completed nor failed in {within}s")


def test_the_host_is_as_it_was(node_world: NodeWorld) -> None:
    """Runs last (conftest): the node stopped, every sysctl, iptables rule, link, network
    namespace and cgroup it touched is as before it started."""
    assert node_world.node.before is not None, "the node is running"
    node_world.stop()
    assert node_world.node.leftover == []
    deadline = time.monotonic() + 10
    while (diff := node_world.before.differences(HostState.read())) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert diff == []


_KILLED = f"""
import time
from okra_testkit.images import busybox_archive
from okra_testkit.node import Node, node_control_plane
cp = node_control_plane()
cp.start()
print(cp.dir, flush=True)
node = Node(cp)
node.start()
node.import_image(busybox_archive(node.dir / "busybox.tar"))
cp.kubectl("run", "sleeper", "--image={BUSYBOX_IMAGE}", "--image-pull-policy=Never",
           "--", "sleep", "3600")
cp.kubectl("wait", "pod/sleeper", "--for=condition=Ready", "--timeout=110s")
print("running", flush=True)
time.sleep(3600)
"""


def _shims() -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if b"containerd-shim" in argv and b"okra-node-" in argv:
                pids.append(int(proc.name))
    return pids


def test_a_node_whose_harness_was_killed_is_undone_by_the_next(node_world: NodeWorld) -> None:
    """Runs after the host check. A harness SIGKILLed while its node runs a Pod: its
    processes die with it, the Pod's container and shim and the host's changes do not; the
    next node to start undoes them first, and once it stops the host is as it was."""
    node_world.stop()  # (the host check did, when it ran): one node at a time
    before = node_world.before
    harness = subprocess.Popen(
        [sys.executable, "-c", _KILLED], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert harness.stdout is not None
    plane_dir = harness.stdout.readline().strip()
    try:
        assert harness.stdout.readline().strip() == "running"
        assert before.differences(HostState.read()), "the node changed nothing on the host"
    finally:
        harness.kill()
        harness.wait()
        shutil.rmtree(plane_dir, ignore_errors=True)
    assert _shims(), "the Pod's shim died with the harness"

    cp = node_control_plane()
    node = Node(cp)
    with cp, node:
        assert node.recovered
        assert node.recovered[0].startswith("a node in ")
        assert not _shims() or all(str(node.dir) in _cmdline(p) for p in _shims())
    assert node.leftover == []
    assert before.differences(HostState.read()) == []
    assert not _shims()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
