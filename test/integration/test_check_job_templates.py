"""A check's Job from a full Pod template (issue 41 §4) is a Job the API server admits as
okra builds it, with the Pod's service account, Secret environment and volume; and a Cell
whose precheck is written that way is admitted (dry run, strict field validation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from okra_testkit.envtest import ControlPlane
from unit.test_check_job_templates import FULL, job_of
from unit.test_ignored_fields import ALB

REPO = Path(__file__).resolve().parents[2]


async def test_the_job_of_a_full_template_is_admitted_with_its_pod_fields(
    control_plane: ControlPlane, kube: client.ApiClient, namespace: str
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    cell = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {"ingress": {"awsApplicationLoadBalancer": ALB}, "prechecks": [FULL]},
    }
    objects = client.CustomObjectsApi(kube)
    made = await objects.create_namespaced_custom_object(
        "okra.mumo.co", "v1alpha1", namespace, "cells", cell, field_validation="Strict"
    )
    job = job_of(made["spec"]["prechecks"][0])
    job["metadata"]["namespace"] = namespace
    job["metadata"]["ownerReferences"][0]["uid"] = made["metadata"]["uid"]
    body: Any = job  # the client sends a dict as it is
    out = await client.BatchV1Api(kube).create_namespaced_job(
        namespace, body, dry_run="All", field_validation="Strict"
    )
    pod = out.spec.template.spec
    assert pod.service_account_name == "smoke-tests"
    assert pod.containers[0].env_from[0].secret_ref.name == "smoke-credentials"
    assert pod.volumes[0].config_map.name == "smoke-fixtures"
    assert pod.containers[0].volume_mounts[0].mount_path == "/fixtures"
    assert (out.spec.backoff_limit, out.spec.ttl_seconds_after_finished) == (2, 3600)
