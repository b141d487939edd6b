"""The kubelet's part for Jobs, for tests: run each new Job of a namespace as a local
process and write the Job's status.

Why a stand-in: `make test`'s control planes have no node. A real node (containerd,
kubelet; `okra_testkit.node`) runs on this host only in the node suite (`make test-node`),
one at a time (kubelet's ports are fixed), so it cannot serve the parallel workers here;
there, check Jobs run for real (test/node/test_install.py). So in this suite the runner plays
the node: it watches Jobs, runs the first container's `command` + `args` as a local process
(the image is not used: a check's command must exist on the test machine), and writes status
as the Job controller would on a one-pod Job with `backoffLimit: 0`: `startTime` and
`active: 1` at once, then `succeeded: 1` with `SuccessCriteriaMet` and `Complete`, or
`failed: 1` with `FailureTarget` and `Failed` (reason `BackoffLimitExceeded`, the exit
code and the last line of output in the message).

With `pods=True` a failed Job is reported as a real node reports it: a Pod of the Job
(label `batch.kubernetes.io/job-name`) whose container status says `terminated` with the
exit code and the output's tail as its message (the kubelet's `FallbackToLogsOnError`), and
the Job controller's own words in the condition ("Job has reached the specified backoff
limit"); the Pod is never scheduled (there is no node), its status is written by hand.

okra does not know it exists: it creates Jobs and reads their conditions exactly as it
would in a cluster with nodes. Test-only: nothing under src/ imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from typing import Any

from okra_runtime import GVK, Client

JOB = GVK("batch", "v1", "Job")
POD = GVK("", "v1", "Pod")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _finished(job: dict[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


class JobRunner:
    def __init__(self, client: Client, namespace: str, *, pods: bool = False) -> None:
        self.client = client
        self.namespace = namespace
        self.pods = pods
        self.started: list[str] = []  # Job names, in the order they were run
        self._seen: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._procs: list[asyncio.subprocess.Process] = []
        self._loop_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> JobRunner:
        self._loop_task = asyncio.create_task(self._watch())
        return self

    async def __aexit__(self, *exc: object) -> None:
        tasks = [t for t in (self._loop_task, *self._tasks) if t is not None]
        for t in tasks:
            t.cancel()
        for p in self._procs:
            if p.returncode is None:
                p.kill()
                await p.wait()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t

    async def _watch(self) -> None:
        while True:
            listed = await self.client.list(JOB, self.namespace)
            for job in listed.items:
                self._consider(job)
            with contextlib.suppress(Exception):  # an expired watch: list again
                async for event in self.client.watch(
                    JOB, self.namespace, resource_version=listed.resource_version
                ):
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._consider(event["object"])

    def _consider(self, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        if name in self._seen or _finished(job):
            return
        self._seen.add(name)
        task = asyncio.create_task(self._run(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _pod(
        self,
        job: dict[str, Any],
        container: dict[str, Any],
        code: int,
        lines: list[str],
        started: str,
        done: str,
    ) -> None:
        """The failed Job's Pod, as the kubelet leaves it: terminated, the exit code and the
        output's tail in the container status's message."""
        name = job["metadata"]["name"]
        pod = await self.client.create(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-pod",
                    "namespace": self.namespace,
                    "labels": {"batch.kubernetes.io/job-name": name, "job-name": name},
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": container["name"], "image": container["image"]}],
                },
            }
        )
        pod["status"] = {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": container["name"],
                    "image": container["image"],
                    "imageID": "",
                    "ready": False,
                    "restartCount": 0,
                    "state": {
                        "terminated": {
                            "exitCode": code,
                            "reason": "Error",
                            "message": "\n".join(lines[-80:]) + "\n\n",
                            "startedAt": started,
                            "finishedAt": done,
                        }
                    },
                }
            ],
        }
        await self.client.update_status(pod)

    async def _status(self, name: str, status: dict[str, Any]) -> None:
        await self.client.patch(
            JOB, name, {"status": status}, namespace=self.namespace, subresource="status"
        )

    async def _run(self, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        container = job["spec"]["template"]["spec"]["containers"][0]
        argv = [*(container.get("command") or []), *(container.get("args") or [])]
        started = (job.get("status") or {}).get("startTime") or _now()
        await self._status(name, {"startTime": started, "active": 1})
        self.started.append(name)
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        self._procs.append(proc)
        out, _ = await proc.communicate()
        lines = out.decode(errors="replace").strip().splitlines()
        done = _now()
        if proc.returncode == 0:
            conditions = [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
            ]
            counts = {"succeeded": 1}
        else:
            why = f"exit code {proc.returncode}" + (f": {lines[-1]}" if lines else "")
            if self.pods:
                await self._pod(job, container, proc.returncode or 1, lines, started, done)
                why = "Job has reached the specified backoff limit"
            conditions = [
                {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": why,
                },
            ]
            counts = {"failed": 1}
        for c in conditions:
            c["lastProbeTime"] = c["lastTransitionTime"] = done
        await self._status(
            name,
            {
                "active": 0,
                "ready": 0,
                **counts,
                "completionTime": done if proc.returncode == 0 else None,
                "conditions": conditions,
            },
        )
