"""How okra reaches AWS: region, optional endpoint URL, optional static keys.

All AWS calls go through aiobotocore (asyncio, no boto3 on the event loop). An
endpoint URL points every service at LocalStack or a moto server; without one
the standard AWS credential chain and endpoints apply.

Every call is counted in `okra_aws_api_calls_total{service,operation,outcome}`
(outcome `success`, `throttled` or `error`) and timed in
`okra_aws_api_call_duration_seconds{service,operation}`, retries included.

`on_call`, when set, is told `"<service>:<Operation>"` (e.g. `elbv2:ModifyRule`)
once per API call, retries not counted, from every client this config makes:
tests and benches count the AWS calls a controller makes without patching
botocore or reading the emulator's logs.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession, get_session
from prometheus_client import Counter, Histogram

from okra_runtime.metrics import REGISTRY


@dataclass(frozen=True)
class AwsConfig:
    region: str = "us-east-1"
    endpoint_url: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    max_attempts: int = 5
    on_call: Callable[[str], None] | None = field(default=None, repr=False, compare=False)

    def _client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "region_name": self.region,
            "config": AioConfig(retries={"max_attempts": self.max_attempts, "mode": "standard"}),
        }
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.access_key_id and self.secret_access_key:
            kwargs["aws_access_key_id"] = self.access_key_id
            kwargs["aws_secret_access_key"] = self.secret_access_key
        return kwargs

    @asynccontextmanager
    async def client(self, service: str, session: AioSession | None = None) -> AsyncIterator[Any]:
        """An aiobotocore client for `service` (`elbv2`, `ec2`, `eks`, ...), from one
        process-wide session unless `session` is given."""
        sess: Any = session or shared_session()  # typed per-service overloads need a Literal
        async with sess.create_client(service, **self._client_kwargs()) as c:
            c.meta.events.register("before-call", _Started(service))
            c.meta.events.register("after-call", _Finished(service))
            c.meta.events.register("after-call-error", _Failed(service))
            if self.on_call is not None:
                c.meta.events.register("before-call", _Counter(service, self.on_call))
            yield c


_SESSION: AioSession | None = None


def shared_session() -> AioSession:
    """One aiobotocore session per process. Making a session loads botocore's data files
    (tens of milliseconds of CPU, on the event loop); clients made from a shared one cost
    about a millisecond. Credentials are still resolved per client, so rotation works."""
    global _SESSION
    if _SESSION is None:
        _SESSION = get_session()
    return _SESSION


THROTTLING = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "SlowDown",
    }
)
API_CALLS = Counter(
    "okra_aws_api_calls_total",
    "AWS API calls by service, operation and outcome (success, throttled, error)",
    ["service", "operation", "outcome"],
    registry=REGISTRY,
)
API_DURATION = Histogram(
    "okra_aws_api_call_duration_seconds",
    "Time an AWS API call takes, retries included",
    ["service", "operation"],
    registry=REGISTRY,
)
_STARTED, _OPERATION = "okra_started", "okra_operation"


OUTCOMES = ("success", "throttled", "error")


@dataclass(frozen=True)
class _Started:
    """`before-call`: start the clock; the operation's counters exist from 0 on, so that
    its first throttled or failed call is an increase Prometheus sees, not a series that
    first appears at 1 (rate() and increase() need two samples)."""

    service: str

    def __call__(self, model: Any, context: dict[str, Any], **_: Any) -> None:
        context[_STARTED] = time.monotonic()
        context[_OPERATION] = model.name
        for outcome in OUTCOMES:
            API_CALLS.labels(self.service, model.name, outcome)


def _observe(service: str, operation: str, context: dict[str, Any], outcome: str) -> None:
    API_CALLS.labels(service, operation, outcome).inc()
    started = context.get(_STARTED)
    if started is not None:
        API_DURATION.labels(service, operation).observe(time.monotonic() - started)


@dataclass(frozen=True)
class _Finished:
    """`after-call`: the response (success or an AWS error) of one call."""

    service: str

    def __call__(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: Any, **_: Any
    ) -> None:
        code = ((parsed or {}).get("Error") or {}).get("Code")
        status = getattr(http_response, "status_code", 200)
        outcome = (
            "throttled"
            if code in THROTTLING or status == 429
            else "error"
            if code or status >= 400
            else "success"
        )
        _observe(self.service, model.name, context, outcome)


@dataclass(frozen=True)
class _Failed:
    """`after-call-error`: the call raised before a response (connection, timeout)."""

    service: str

    def __call__(self, context: Any, **_: Any) -> None:
        _observe(self.service, str(context.get(_OPERATION, "unknown")), context, "error")


@dataclass(frozen=True)
class _Counter:
    """A botocore `before-call` handler: emitted once per API call, before
    signing and retries, with the operation model."""

    service: str
    on_call: Callable[[str], None]

    def __call__(self, model: Any, **_: Any) -> None:
        self.on_call(f"{self.service}:{model.name}")
