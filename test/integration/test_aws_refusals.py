"""AWS refusing a request (bad input, a missing permission) is told apart from AWS
failing: through the real moto server, a refusal leaves `AwsConfig.client()` as
`AwsRefusalError` (still the botocore `ClientError`, so error codes read as before),
which the controller runtime treats as a reported, expected failure; throttling and
5xx do not. Then the runtime's side: a `ReportedError` logs one warning without a
traceback and debug on retries, is counted, and is retried on its own backoff, while a
bug still logs an error with its traceback."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from botocore.exceptions import ClientError

from okra_controllers.aws.errors import AwsRefusalError, hint, refused
from okra_controllers.lbconfig import aws_message
from okra_runtime import metrics as m
from okra_runtime.controller import Controller
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_testkit.emulator import MotoServer
from support import LogCapture, eventually

MISSING_LISTENER = (
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/none/0123456789abcdef/"
    "0123456789abcdef"
)


def client_error(code: str, status: int, operation: str = "DescribeRules") -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": f"{code} said"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)


@pytest.mark.parametrize(
    ("code", "status", "is_refusal"),
    [
        ("ListenerNotFound", 400, True),
        ("TargetGroupNotFound", 400, True),
        ("RuleNotFound", 400, True),
        ("ValidationError", 400, True),
        ("InvalidConfigurationRequest", 400, True),
        ("AccessDenied", 403, True),
        ("PriorityInUse", 400, True),
        ("Throttling", 400, False),
        ("ThrottlingException", 400, False),
        ("RequestLimitExceeded", 503, False),
        ("TooManyRequests", 429, False),
        ("RequestTimeout", 408, False),
        ("InternalFailure", 500, False),
        ("ServiceUnavailable", 503, False),
    ],
)
def test_refusals_are_4xx_other_than_throttling(code: str, status: int, is_refusal: bool) -> None:
    e = client_error(code, status)
    assert refused(e) is is_refusal
    print(f"{code} ({status}): {'refusal' if is_refusal else 'failure'}")


def test_a_refusal_is_still_the_client_error_and_says_what_to_fix() -> None:
    e = AwsRefusalError.of(client_error("ListenerNotFound", 400))
    assert isinstance(e, ClientError)
    assert isinstance(e, ReportedError)
    assert e.response["Error"]["Code"] == "ListenerNotFound"
    assert e.operation_name == "DescribeRules"
    assert "check the listener ARN" in hint(e)
    said = aws_message(e)
    print(said)
    assert said.startswith("DescribeRules: ListenerNotFound: ListenerNotFound said; check")


async def test_a_refusal_from_moto_leaves_the_client_as_a_reported_error(
    moto: MotoServer,
) -> None:
    with pytest.raises(AwsRefusalError) as refusal:
        async with moto.config.client("elbv2") as elb:
            await elb.describe_rules(ListenerArn=MISSING_LISTENER)
    assert refusal.value.response["Error"]["Code"] == "ListenerNotFound"
    # inside the block the error is botocore's own: code that handles a code still can
    async with moto.config.client("elbv2") as elb:
        try:
            await elb.describe_rules(ListenerArn=MISSING_LISTENER)
        except ClientError as e:
            inside: Any = e
    assert type(inside) is not AwsRefusalError
    assert refused(inside)
    print(f"moto: {aws_message(refusal.value)}")


async def test_a_reported_error_warns_once_without_traceback_and_is_retried(
    logs: LogCapture,
) -> None:
    calls: list[str] = []

    async def reconcile(req: Request) -> None:
        calls.append(req.name)
        if req.name == "bad":
            raise ReportedError("listener not found; said in status")
        if req.name == "bug" and calls.count("bug") == 1:
            raise KeyError("a bug")

    ctrl = Controller("refusals", reconcile, reported_base_delay=0.01, reported_max_delay=0.05)
    errors_before = m.RECONCILE_ERRORS.labels("refusals")._value.get()
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("bad", "ns"))
        ctrl.enqueue(Request("bug", "ns"))

        async def retried() -> bool:
            return calls.count("bad") >= 5 and calls.count("bug") >= 2

        assert await eventually(retried)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    reported = [r for r in logs.records() if r.get("name") == "bad"]
    levels = [r["level"] for r in reported if "reconcile failed" in str(r.get("event"))]
    print(f"reported error: {calls.count('bad')} reconciles, log levels {levels}")
    assert levels[0] == "warning"
    assert set(levels[1:]) == {"debug"}
    assert not any("exception" in r or "Traceback" in str(r) for r in reported)
    bug = [r for r in logs.records() if r.get("name") == "bug" and r.get("level") == "error"]
    assert len(bug) == 1, bug
    assert "KeyError" in bug[0].get("exception", ""), bug
    errors = m.RECONCILE_ERRORS.labels("refusals")._value.get() - errors_before
    assert errors >= calls.count("bad") + 1  # every failed reconcile counted (and the bug)


async def test_a_success_resets_the_reported_backoff(logs: LogCapture) -> None:
    """Fails twice, succeeds, fails again: the new failure is a first one again (a
    warning, retries=0), not the next step of the old backoff."""
    script = ["fail", "fail", "ok", "fail", "ok"]
    seen: list[str] = []

    async def reconcile(req: Request) -> None:
        seen.append(script[len(seen)])
        if seen[-1] == "fail":
            raise ReportedError("said in status")
        if len(seen) == 3:
            ctrl.enqueue(req)  # changed again, as by a watch event

    ctrl = Controller("reset", reconcile, reported_base_delay=0.01, reported_max_delay=0.05)
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("flaky", "ns"))

        async def all_ran() -> bool:
            return len(seen) == len(script)

        assert await eventually(all_ran, within=10)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    failures = [
        (r["level"], r["retries"])
        for r in logs.records()
        if str(r.get("event", "")).startswith("reconcile failed; reported")
    ]
    print(f"reported failures (level, retries): {failures}")
    assert failures == [("warning", 0), ("debug", 1), ("warning", 0)]


async def test_reported_retries_do_not_draw_on_the_shared_retry_bucket(logs: LogCapture) -> None:
    """A thousand failing objects put the queue's shared bucket (10 qps, burst 100) in
    debt for ~90 s: a healthy object's rate-limited retry must not wait for that."""
    done = asyncio.Event()
    healthy_seen: list[float] = []  # when the healthy object was reconciled (loop time)

    async def reconcile(req: Request) -> Any:
        if req.name.startswith("bad-"):
            raise ReportedError("bad input; said in status")
        healthy_seen.append(asyncio.get_running_loop().time())
        if len(healthy_seen) == 1:
            return Result(requeue=True)  # look again soon: a rate-limited requeue
        done.set()
        return None

    ctrl = Controller("fairness", reconcile, max_concurrent_reconciles=4)
    task = asyncio.create_task(ctrl.run())
    try:
        for i in range(1000):
            ctrl.enqueue(Request(f"bad-{i}", "ns"))
        await asyncio.sleep(0)
        ctrl.enqueue(Request("healthy", "ns"))
        await asyncio.wait_for(done.wait(), 120)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    first, second = healthy_seen
    took = second - first
    print(f"healthy object's requeue served {took:.2f}s after its first reconcile")
    # From its first reconcile to its requeued one (the time the queue took to work through
    # the failing objects ahead of it is not counted: on a busy machine it is seconds). The
    # per-item delay of a first requeue is milliseconds; a retry drawn on the shared bucket
    # would wait out its debt, (1,000 - 100) / 10 = 90 s. The bound sits far from both.
    assert took < 30
