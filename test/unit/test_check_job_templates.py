"""A check's Job written as Kubernetes users write a Job (issue 41 §4): a Pod's spec
(`containers`, `initContainers`, `serviceAccountName`, `imagePullSecrets`, `volumes`,
`nodeSelector`, `tolerations`) and the Job's `backoffLimit`, `activeDeadlineSeconds`,
`ttlSecondsAfterFinished`, beside seed 002's one-container shorthand; on system Cells and
single Cells alike (a system Cell's checks are its application Cells')."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from okra_controllers.api.v1alpha1.cell import CellSpec
from okra_controllers.api.v1alpha1.strategy import RolloutCheck
from okra_controllers.cell.checkjobs import check_job, pod_failure
from okra_controllers.cell.plan import JobRequest
from okra_controllers.cli.lint import lint_texts
from unit.test_ignored_fields import ALB, SYSTEM

CELL = {
    "apiVersion": "okra.mumo.co/v1alpha1",
    "kind": "Cell",
    "metadata": {"name": "web", "namespace": "team", "uid": "u1"},
}
POD_SPEC: dict[str, Any] = {
    "serviceAccountName": "smoke-tests",
    "imagePullSecrets": [{"name": "registry"}],
    "initContainers": [{"name": "fetch", "image": "busybox", "command": ["true"]}],
    "containers": [
        {
            "name": "smoke",
            "image": "registry.example.com/smoke:1",
            "imagePullPolicy": "IfNotPresent",
            "envFrom": [{"secretRef": {"name": "smoke-credentials"}}],
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}},
            "volumeMounts": [{"name": "fixtures", "mountPath": "/fixtures"}],
        }
    ],
    "volumes": [{"name": "fixtures", "configMap": {"name": "smoke-fixtures"}}],
    "nodeSelector": {"pool": "tests"},
    "tolerations": [{"key": "tests", "operator": "Exists", "effect": "NoSchedule"}],
    "restartPolicy": "Never",
}
FULL = {
    "name": "smoke",
    "job": {
        "backoffLimit": 2,
        "activeDeadlineSeconds": 600,
        "ttlSecondsAfterFinished": 3600,
        "template": {"metadata": {"annotations": {"sidecar": "off"}}, "spec": POD_SPEC},
    },
}


def job_of(check: dict[str, Any]) -> dict[str, Any]:
    req = JobRequest("web-r1-prec-smoke", RolloutCheck.model_validate(check), "precheck", "h")
    return check_job(CELL, req)


def test_a_pod_spec_as_kubernetes_writes_it_is_the_jobs_pod() -> None:
    job = job_of(FULL)
    spec = job["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (2, 600)
    assert spec["ttlSecondsAfterFinished"] == 3600
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "smoke-tests"
    assert pod["imagePullSecrets"] == [{"name": "registry"}]
    assert pod["volumes"] == POD_SPEC["volumes"]
    assert pod["nodeSelector"] == {"pool": "tests"}
    assert pod["tolerations"] == POD_SPEC["tolerations"]
    assert pod["initContainers"] == POD_SPEC["initContainers"]
    (container,) = pod["containers"]
    assert container == {
        **POD_SPEC["containers"][0],
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    meta = spec["template"]["metadata"]
    assert meta["annotations"] == {"sidecar": "off"}
    assert meta["labels"]["okra.mumo.co/check"] == "smoke"


def test_the_seeds_shorthand_is_one_container_named_check() -> None:
    shorthand = {
        "image": "busybox",
        "command": ["sh", "-c"],
        "args": ["exit 0"],
        "envFrom": [{"secretRef": {"name": "creds"}}],
        "imagePullPolicy": "Never",
        "resources": {"requests": {"cpu": "10m"}},
        "serviceAccountName": "tests",
    }
    job = job_of({"name": "smoke", "job": {"template": {"spec": shorthand}}})
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["backoffLimit"] == 0
    assert "ttlSecondsAfterFinished" not in job["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["serviceAccountName"] == "tests"
    assert pod["containers"] == [
        {
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "name": "check",
            "image": "busybox",
            "command": ["sh", "-c"],
            "args": ["exit 0"],
            "envFrom": [{"secretRef": {"name": "creds"}}],
            "imagePullPolicy": "Never",
            "resources": {"requests": {"cpu": "10m"}},
        }
    ]


def test_a_container_that_sets_its_termination_message_policy_keeps_it() -> None:
    spec = {"containers": [{"name": "t", "image": "x", "terminationMessagePolicy": "File"}]}
    job = job_of({"name": "smoke", "job": {"template": {"spec": spec}}})
    assert job["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"] == "File"


def test_what_a_failed_pod_said_is_read_from_any_of_its_containers() -> None:
    statuses = [
        {"name": "fetch", "state": {"terminated": {"exitCode": 0, "message": "ok"}}},
        {"name": "smoke", "state": {"terminated": {"exitCode": 4, "message": "a\nbad gateway"}}},
    ]
    assert pod_failure([{"status": {"containerStatuses": statuses}}]) == "exit code 4: bad gateway"


def _lint(spec: dict[str, Any]) -> list[str]:
    doc = {"apiVersion": "okra.mumo.co/v1alpha1", "kind": "Cell", "metadata": {"name": "x"}}
    return [
        p.message for p in lint_texts([("x.yaml", yaml.safe_dump({**doc, "spec": spec}))]).errors
    ]


def test_a_full_job_template_is_accepted_on_single_and_system_cells() -> None:
    single = {"ingress": {"awsApplicationLoadBalancer": ALB}, "prechecks": [FULL]}
    assert _lint(single) == []
    CellSpec.model_validate(single)
    system = {**SYSTEM, "applications": [{**SYSTEM["applications"][0], "prechecks": [FULL]}]}
    assert _lint(system) == []


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"image": "x", "containers": [{"name": "a", "image": "x"}]}, "exactly one of them"),
        ({}, "exactly one of them"),
        (
            {"containers": [{"name": "a", "image": "x"}], "command": ["x"]},
            "write them in containers[]",
        ),
    ],
)
def test_a_template_that_says_its_container_twice_is_refused(
    spec: dict[str, Any], said: str
) -> None:
    check = {"name": "smoke", "job": {"template": {"spec": spec}}}
    errors = _lint({"ingress": {"awsApplicationLoadBalancer": ALB}, "prechecks": [check]})
    assert any(said in e for e in errors), errors
