"""A failed check Job's Pod (cell/checkjobs.py): the Job's container leaves its log's tail in
its terminated status (`FallbackToLogsOnError`), `pod_failure` reads `exit code N: <last
line>` from it, `PodFailures` lists each failed Job's Pods once, and `job_outcome` says it
instead of the Job controller's "Job has reached the specified backoff limit"."""

from __future__ import annotations

from typing import Any

from okra_controllers.api.v1alpha1.strategy import RolloutCheck
from okra_controllers.cell.checkjobs import PodFailures, check_job, pod_failure
from okra_controllers.cell.observe import job_outcome
from okra_controllers.cell.plan import JobRequest
from okra_runtime.errors import ForbiddenError
from okra_runtime.gvk import GVK

CELL = {
    "apiVersion": "okra.mumo.co/v1alpha1",
    "kind": "Cell",
    "metadata": {"name": "web", "namespace": "team", "uid": "u1"},
}


def pod(code: int, message: str, finished: str = "2026-01-01T00:00:01Z") -> dict[str, Any]:
    terminated = {"exitCode": code, "message": message, "finishedAt": finished}
    return {
        "status": {"containerStatuses": [{"name": "check", "state": {"terminated": terminated}}]}
    }


def failed_job(
    name: str, uid: str, message: str = "Job has reached the specified backoff limit"
) -> dict[str, Any]:
    condition = {
        "type": "Failed",
        "status": "True",
        "reason": "BackoffLimitExceeded",
        "message": message,
    }
    return {
        "metadata": {"name": name, "namespace": "team", "uid": uid},
        "status": {"conditions": [condition]},
    }


def test_the_check_container_leaves_its_logs_tail_when_it_fails() -> None:
    check = RolloutCheck.model_validate(
        {"name": "smoke", "job": {"template": {"spec": {"image": "busybox", "command": ["x"]}}}}
    )
    job = check_job(CELL, JobRequest("web-pre-smoke", check, "precheck", "h"))
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert container["name"] == "check"


def test_pod_failure_is_the_exit_code_and_the_last_non_empty_line() -> None:
    assert pod_failure([pod(3, "collecting\n2 of 40 tests failed\n\n  \n")]) == (
        "exit code 3: 2 of 40 tests failed"
    )
    assert pod_failure([pod(137, "")]) == "exit code 137"
    assert pod_failure([]) == ""
    assert pod_failure([{"status": {"phase": "Pending"}}]) == ""
    # of several Pods, a failure over a success, then the one that ended last
    assert pod_failure([pod(0, "ok"), pod(2, "late", "2026-01-01T00:00:09Z"), pod(1, "early")]) == (
        "exit code 2: late"
    )


def test_job_outcome_says_what_the_pod_said() -> None:
    job = failed_job("j", "1")
    assert job_outcome(job) == (
        "Failed",
        "BackoffLimitExceeded: Job has reached the specified backoff limit",
    )
    assert job_outcome(job, "exit code 3: boom") == (
        "Failed",
        "BackoffLimitExceeded: exit code 3: boom",
    )
    deadline = {
        "status": {
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "DeadlineExceeded",
                    "message": "Job was active longer than specified deadline",
                }
            ]
        }
    }
    assert job_outcome(deadline, "exit code 143: waiting") == (
        "Failed",
        "DeadlineExceeded: Job was active longer than specified deadline; exit code 143: waiting",
    )


class Client:
    """Answers Pod lists from `pods` (by Job name), or refuses; counts the lists."""

    def __init__(self, pods: dict[str, list[dict[str, Any]]], refuse: bool = False) -> None:
        self.pods = pods
        self.refuse = refuse
        self.lists: list[tuple[str, str | None, str | None]] = []

    async def list(
        self, gvk: GVK, namespace: str | None = None, *, label_selector: str | None = None
    ) -> Any:
        self.lists.append((gvk.kind, namespace, label_selector))
        if self.refuse:
            raise ForbiddenError(403, "Forbidden", "pods is forbidden")
        job = (label_selector or "").removeprefix("batch.kubernetes.io/job-name=")

        class Listed:
            items = self.pods.get(job, [])

        return Listed()


async def test_each_failed_jobs_pod_is_read_once() -> None:
    client = Client({"a": [pod(3, "boom\n")]})
    failures = PodFailures(client)  # type: ignore[arg-type]
    running = {"metadata": {"name": "r", "namespace": "team", "uid": "9"}, "status": {}}
    jobs = [failed_job("a", "1"), failed_job("gone", "2"), running]
    for _ in range(3):
        assert await failures.read(jobs) == {"a": "exit code 3: boom"}
    assert client.lists == [
        ("Pod", "team", "batch.kubernetes.io/job-name=a"),
        ("Pod", "team", "batch.kubernetes.io/job-name=gone"),
    ]
    # a Job of the same name made again (another uid) is read again
    assert await failures.read([failed_job("a", "3")]) == {"a": "exit code 3: boom"}
    assert len(client.lists) == 3


async def test_an_unreadable_pod_leaves_the_jobs_words_and_is_not_asked_again() -> None:
    client = Client({}, refuse=True)
    failures = PodFailures(client)  # type: ignore[arg-type]
    assert await failures.read([failed_job("a", "1")]) == {}
    assert await failures.read([failed_job("a", "1")]) == {}
    assert len(client.lists) == 1


async def test_what_is_remembered_is_bounded() -> None:
    client = Client({})
    failures = PodFailures(client, kept=2)  # type: ignore[arg-type]
    for i in range(5):
        await failures.read([failed_job(f"j{i}", str(i))])
    assert len(failures._said) == 2
