"""The Jobs of a Cell's job checks (prechecks and postchecks): the Job the Cell controller
creates for one check of one rollout."""

from __future__ import annotations

from typing import Any

from okra_controllers.cell.plan import JobRequest
from okra_runtime.gvk import GVK

JOB = GVK("batch", "v1", "Job")


def check_job(raw: dict[str, Any], req: JobRequest) -> dict[str, Any]:
    """The Job of one check of one rollout: the check's container, run once (no retries,
    no restarts: a check that fails has failed), owned by the Cell."""
    cell = raw["metadata"]["name"]
    labels = {
        "okra.mumo.co/cell": cell,
        "okra.mumo.co/check": req.check.name,
        "okra.mumo.co/check-stage": req.stage,
        "okra.mumo.co/forward-hash": req.forward_hash,
    }
    assert req.check.job is not None  # the plan asks for Jobs of job checks only
    container = req.check.job.template.spec.model_dump(
        by_alias=True, exclude_defaults=True, mode="json"
    )
    spec: dict[str, Any] = {
        "backoffLimit": 0,
        "template": {
            "metadata": {"labels": labels},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "check", **container}]},
        },
    }
    if req.check.job.active_deadline_seconds:
        spec["activeDeadlineSeconds"] = req.check.job.active_deadline_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": req.name,
            "namespace": raw["metadata"]["namespace"],
            "labels": labels,
            "ownerReferences": [owner_ref(raw)],
        },
        "spec": spec,
    }


def owner_ref(raw: dict[str, Any]) -> dict[str, Any]:
    """The controller reference to the Cell `raw`, on everything it owns (its Jobs, Pauses,
    load balancer config)."""
    return {
        "apiVersion": raw["apiVersion"],
        "kind": raw["kind"],
        "name": raw["metadata"]["name"],
        "uid": raw["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
