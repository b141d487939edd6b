"""A system Cell's precheck written as Kubernetes users write a Job (issue 41 §4): a full Pod
template with its own service account, its environment from a Secret and a ConfigMap volume,
and the Job's `backoffLimit`, run by the Job controller and the kubelet on the node
(busybox). The script exits 0 only when the Pod has all three, so the rollout proceeding is
the node's word that they reached the container; the Job's Pod is read back to show them.
(integration/test_system_cell.py's world: EKS and the ALB in moto through the local-EKS
proxy, the clusters' Argo CD cluster Secrets pointing at a shared workload control plane.)"""

from __future__ import annotations

from typing import Any

import pytest

from integration.test_system_cell import (  # noqa: F401 -- world: a fixture
    CELL,
    System,
    application,
    running,
    world,
)
from okra_runtime import GVK, Client
from okra_testkit.images import BUSYBOX_IMAGE
from okra_testkit.seed import LoadBalancer
from support import eventually

JOB = GVK("batch", "v1", "Job")
POD = GVK("", "v1", "Pod")
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("okra_crds")]

# Exits 0 only when the Secret's variable and the ConfigMap's file are there and the Pod
# runs as its service account (the kubelet mounts that account's token: its namespace file).
SCRIPT = (
    'test "$SMOKE_TOKEN" = s3cret || { echo "SMOKE_TOKEN not from the Secret"; exit 4; }; '
    'test "$(cat /fixtures/answer)" = 42 || { echo "no /fixtures/answer"; exit 5; }; '
    "echo smoke: token and fixtures seen"
)


def full_precheck() -> dict[str, Any]:
    return {
        "name": "smoke",
        "job": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": 120,
            "template": {
                "metadata": {"labels": {"suite": "smoke"}},
                "spec": {
                    "serviceAccountName": "smoke-tests",
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "smoke",
                            "image": BUSYBOX_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["sh", "-c", SCRIPT],
                            "envFrom": [{"secretRef": {"name": "smoke-credentials"}}],
                            "volumeMounts": [{"name": "fixtures", "mountPath": "/fixtures"}],
                        }
                    ],
                    "volumes": [{"name": "fixtures", "configMap": {"name": "smoke-fixtures"}}],
                },
            },
        },
    }


async def test_a_precheck_job_with_its_service_account_secret_env_and_volume_runs_on_the_node(
    world: tuple[System, LoadBalancer],  # noqa: F811 -- the fixture imported above
    rt_client: Client,
    namespace: str,
) -> None:
    s, alb = world
    ns = namespace
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "smoke-tests"}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "smoke-credentials"},
            "stringData": {"SMOKE_TOKEN": "s3cret"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "smoke-fixtures"},
            "data": {"answer": "42"},
        },
    ]
    for obj in objects:
        obj["metadata"]["namespace"] = ns
        await rt_client.create(obj)
    web = application("web", "web", alb.listener_arn, 10, 100)
    web["prechecks"] = [full_precheck()]
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": ns},
            "spec": {"clusters": [await s.cluster("k-1", "web")], "applications": [web]},
        }
    )
    async with running(rt_client, ns, s.eks.config):

        async def completed() -> bool:
            return (await s.status()).get("phase") == "Completed"

        assert await eventually(completed, within=180), await s.debug()
    await s.weights_become(alb.listener_arn, 10, {"k-1": 100})
    (job,) = (await rt_client.list(JOB, ns)).items
    assert (job.get("status") or {}).get("succeeded") == 1, job.get("status")
    assert job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 120
    pods = (await rt_client.list(POD, ns, label_selector="suite=smoke")).items
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    pod = pods[0]
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "smoke-tests"
    (c,) = spec["containers"]
    assert c["envFrom"] == [{"secretRef": {"name": "smoke-credentials"}}]
    assert {"name": "fixtures", "mountPath": "/fixtures"} in [
        {k: m[k] for k in ("name", "mountPath")} for m in c["volumeMounts"]
    ]
    assert {"name": "fixtures", "configMap": "smoke-fixtures"} in [
        {"name": v["name"], "configMap": (v.get("configMap") or {}).get("name")}
        for v in spec["volumes"]
    ]
    (terminated,) = [st["state"]["terminated"] for st in pod["status"]["containerStatuses"]]
    assert terminated["exitCode"] == 0, terminated
