"""The Jobs of a Cell's job checks (prechecks and postchecks): the Job the Cell controller
creates for one check of one rollout, and what the Pod of a failed one said.

A failed Job's conditions say only `BackoffLimitExceeded: Job has reached the specified
backoff limit`; the check's container says why it failed. Its Pod's
`state.terminated` has the exit code and, the container having
`terminationMessagePolicy: FallbackToLogsOnError`, the tail of its log: `PodFailures`
reads it once per failed Job, for the Cell's status message and RolloutFailed Event."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import structlog

from okra_controllers.api.kinds import JOB, POD
from okra_controllers.api.v1alpha1.strategy import SHORTHAND
from okra_controllers.cell.plan import JobRequest
from okra_runtime.client import Client

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTAINER = "check"
FAILURES_KEPT = 1024
"""Failed Jobs whose Pod's words are remembered (each is read once)."""
log = structlog.get_logger("okra.cell")


def check_job(raw: dict[str, Any], req: JobRequest) -> dict[str, Any]:
    """The Job of one check of one rollout, owned by the Cell: the check's Pod (the
    one-container shorthand, or the Pod spec written), run once unless the check gives a
    `backoffLimit`."""
    cell = raw["metadata"]["name"]
    labels = {
        "okra.mumo.co/cell": cell,
        "okra.mumo.co/check": req.check.name,
        "okra.mumo.co/check-stage": req.stage,
        "okra.mumo.co/forward-hash": req.forward_hash,
    }
    assert req.check.job is not None  # the plan asks for Jobs of job checks only
    job = req.check.job
    pod = job.template.spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    shorthand = {k: pod.pop(k) for k in SHORTHAND if k in pod}
    containers = pod.pop("containers", None) or [{"name": CONTAINER, **shorthand}]
    # the exit code and the log's tail in the Pod's status when the check fails
    pod["containers"] = [
        {"terminationMessagePolicy": "FallbackToLogsOnError", **c} for c in containers
    ]
    meta = job.template.metadata
    spec: dict[str, Any] = {
        "backoffLimit": job.backoff_limit,
        "template": {
            "metadata": {
                "labels": {**((meta.labels if meta else None) or {}), **labels},
                **({"annotations": meta.annotations} if meta and meta.annotations else {}),
            },
            "spec": pod,
        },
    }
    if job.active_deadline_seconds:
        spec["activeDeadlineSeconds"] = job.active_deadline_seconds
    if job.ttl_seconds_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = job.ttl_seconds_after_finished
    return {
        "apiVersion": "batch/v1",
        "kind": JOB.kind,
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
    load balancer config; a system Cell's application Cells, target groups and Checks)."""
    return {
        "apiVersion": raw["apiVersion"],
        "kind": raw["kind"],
        "name": raw["metadata"]["name"],
        "uid": raw["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_failed(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Failed" and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def pod_failure(pods: Iterable[dict[str, Any]]) -> str:
    """`exit code N: <the last non-empty line of its termination message>` of a container of
    a failed Job's Pods (one that failed before one that succeeded, then the last to end);
    "" when none has ended."""
    ended = []
    for pod in pods:
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            terminated = (cs.get("state") or {}).get("terminated")
            if isinstance(terminated, dict):
                ended.append(terminated)
    if not ended:
        return ""
    last = max(
        ended,
        key=lambda t: (t.get("exitCode") not in (0, None), str(t.get("finishedAt") or "")),
    )
    lines = [ln.strip() for ln in str(last.get("message") or "").splitlines() if ln.strip()]
    code = last.get("exitCode")
    why = f"exit code {code}" if code is not None else str(last.get("reason") or "terminated")
    return why + (f": {lines[-1]}" if lines else "")


class PodFailures:
    """What the Pod of each failed check Job said (`pod_failure`), read once per Job (by its
    uid) and remembered; "" for a Pod already gone or unreadable (the Job's conditions then
    say why it failed, as they would without it)."""

    def __init__(self, client: Client, kept: int = FAILURES_KEPT) -> None:
        self.client = client
        self.kept = kept
        self._said: dict[str, str] = {}

    async def read(self, jobs: Iterable[dict[str, Any]]) -> dict[str, str]:
        """Job name -> what its Pod said, for the failed ones of `jobs` (one namespace's)."""
        out: dict[str, str] = {}
        for job in jobs:
            if not job_failed(job):
                continue
            meta = job["metadata"]
            uid = meta.get("uid") or f"{meta.get('namespace')}/{meta['name']}"
            if uid not in self._said:
                self._said[uid] = await self._read(meta.get("namespace") or "", meta["name"])
                while len(self._said) > self.kept:
                    del self._said[next(iter(self._said))]
            if self._said[uid]:
                out[meta["name"]] = self._said[uid]
        return out

    async def _read(self, namespace: str, job: str) -> str:
        try:
            pods = await self.client.list(POD, namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
        except Exception as e:  # the Job's conditions are enough to go on
            log.warning("check pod unreadable", namespace=namespace, job=job, error=str(e))
            return ""
        return pod_failure(pods.items)
