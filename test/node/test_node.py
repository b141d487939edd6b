"""The node itself: Pods scheduled and run, a Deployment reached through its Service by a Job
(kube-proxy, the Job controller, the kubelet), Pod logs through the API server, and, last,
the host as it was once the node is gone."""

from __future__ import annotations

import json
import time

from okra_testkit.envtest import ControlPlane
from okra_testkit.node import BUSYBOX_IMAGE, HostState

from .conftest import NodeWorld


def _apply(cp: ControlPlane, namespace: str, *objects: dict[str, object]) -> None:
    cp.kubectl(
        "apply",
        "-n",
        namespace,
        "-f",
        "-",
        input_text=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}),
    )


def _wait(cp: ControlPlane, namespace: str, what: str, condition: str, timeout: int = 120) -> None:
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
    _apply(
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
    fetch = f"wget -q -O- http://{ip}/index.html"
    _apply(
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
    outcome = _job_outcome(cp, namespace, "fetch")
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
