"""How okra reaches AWS: region, optional endpoint URL, optional static keys.

All AWS calls go through aiobotocore (asyncio, no boto3 on the event loop). An
endpoint URL points every service at LocalStack or a moto server; without one
the standard AWS credential chain and endpoints apply.

A call is retried by botocore (`standard` mode) up to `total_max_attempts` attempts
in all: 6 by default, so 5 retries of a throttled, failed or unreachable call.

Every call is counted in `okra_aws_api_calls_total{service,operation,outcome}` and
timed in `okra_aws_api_call_duration_seconds{service,operation}`, retries included.
Outcome `throttled` counts every throttled attempt, retried or not (botocore's
`needs-retry` event, emitted after each attempt): the rate AWS throttles at, even
when the retries hide it. `success` and `error` count calls by their final answer; a
call still throttled after its last attempt is counted only by its throttled attempts.

`reuse_clients=True` (okra-manager sets it) keeps one client per service and event
loop for up to `CLIENT_MAX_AGE` seconds instead of one per `client()` call: making a
client costs its SSL context (the CA bundle parsed again), its connection pool and
its endpoint resolution, which at 1,000 Cells was most of the manager's CPU. A
client past that age is replaced (and closed one age later, when no call can still
be using it), so credentials from a rotated file are picked up; refreshable
credentials (IRSA, assumed roles) refresh inside a client anyway. `close_clients()`
closes the current loop's clients at shutdown.

`on_call`, when set, is told `"<service>:<Operation>"` (e.g. `elbv2:ModifyRule`)
once per API call, retries not counted, from every client this config makes:
tests and benches count the AWS calls a controller makes without patching
botocore or reading the emulator's logs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from prometheus_client import Counter, Histogram

from okra_controllers.aws.assume import role_session
from okra_controllers.aws.errors import THROTTLING_CODES, AwsRefusalError, refused
from okra_runtime.metrics import REGISTRY

if TYPE_CHECKING:
    from aiobotocore.session import AioSession


@dataclass(frozen=True)
class AwsConfig:
    region: str = "us-east-1"
    endpoint_url: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    total_max_attempts: int = 6
    """Attempts per API call, the first included (botocore's `total_max_attempts`; its
    older `max_attempts` counts retries only): throttling, 5xx answers and connection
    errors are retried up to 5 times, in botocore's `standard` mode (jittered
    exponential backoff, a client-side retry quota). 1: no retries."""
    on_call: Callable[[str], None] | None = field(default=None, repr=False, compare=False)
    reuse_clients: bool = field(default=False, compare=False)
    role_arn: str | None = field(default=None, repr=False)
    """An IAM role every client of this config acts as (`assume`): assumed with the
    config's own credentials, cached per role and refreshed before expiry."""

    def assuming(self, role_arn: str | None) -> AwsConfig:
        """This config acting as `role_arn` (None: as itself)."""
        if role_arn == self.role_arn:
            return self
        return replace(self, role_arn=role_arn)

    def _base(self) -> AwsConfig:
        return replace(self, role_arn=None)

    def _client_kwargs(self) -> dict[str, Any]:
        from aiobotocore.config import AioConfig  # with the first client (see shared_session)

        kwargs: dict[str, Any] = {
            "region_name": self.region,
            "config": AioConfig(
                retries={"total_max_attempts": self.total_max_attempts, "mode": "standard"}
            ),
        }
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        if self.access_key_id and self.secret_access_key and not self.role_arn:
            kwargs["aws_access_key_id"] = self.access_key_id
            kwargs["aws_secret_access_key"] = self.secret_access_key
        return kwargs

    @asynccontextmanager
    async def client(self, service: str, session: AioSession | None = None) -> AsyncIterator[Any]:
        """An aiobotocore client for `service` (`elbv2`, `ec2`, `eks`, ...), from one
        process-wide session unless `session` is given. A `ClientError` that leaves the
        block as AWS refusing the request (`errors.refused`) leaves it as `AwsRefusalError`."""
        try:
            if self.reuse_clients and session is None:
                yield await self._pooled(service)
                return
            sess: Any = session or self._session()  # typed per-service overloads need a Literal
            async with sess.create_client(service, **self._client_kwargs()) as c:
                self._instrument(c, service)
                yield c
        except ClientError as e:
            if refused(e) and not isinstance(e, AwsRefusalError):
                raise AwsRefusalError.of(e) from e
            raise

    def _session(self) -> Any:
        if self.role_arn is None:
            return shared_session()
        return role_session(self._base(), self.role_arn)

    def _instrument(self, c: Any, service: str) -> None:
        c.meta.events.register("before-call", _Started(service))
        c.meta.events.register("after-call", _Finished(service))
        c.meta.events.register("after-call-error", _Failed(service))
        c.meta.events.register("needs-retry", _Attempted(service))
        if self.on_call is not None:
            c.meta.events.register("before-call", _Counter(service, self.on_call))

    async def _pooled(self, service: str) -> Any:
        key = (id(asyncio.get_running_loop()), service, self, id(self.on_call))
        async with _POOL_LOCKS.setdefault(key, asyncio.Lock()):
            now = _clock()
            held = _POOL.get(key)
            if held is not None and now - held.created < CLIENT_MAX_AGE:
                return held.client
            sess: Any = self._session()
            context = sess.create_client(service, **self._client_kwargs())
            c = await context.__aenter__()
            self._instrument(c, service)
            _POOL[key] = _Pooled(c, context, now)
            for old in [r for r in _RETIRED if now - r.created >= 2 * CLIENT_MAX_AGE]:
                _RETIRED.remove(old)
                await old.context.__aexit__(None, None, None)
            if held is not None:
                _RETIRED.append(held)
            return c


CLIENT_MAX_AGE = 600.0
"""Seconds a pooled client (`reuse_clients`) serves before it is replaced."""

_clock = time.monotonic  # the pool's clock (tests move it)


@dataclass
class _Pooled:
    client: Any
    context: Any  # the create_client context manager that closes it
    created: float


_POOL: dict[tuple[Any, ...], _Pooled] = {}
_POOL_LOCKS: dict[tuple[Any, ...], asyncio.Lock] = {}
_RETIRED: list[_Pooled] = []


async def close_clients() -> None:
    """Close the pooled clients (`reuse_clients`) made on the running event loop."""
    loop = id(asyncio.get_running_loop())
    for key in [k for k in _POOL if k[0] == loop]:
        held = _POOL.pop(key)
        _POOL_LOCKS.pop(key, None)
        await held.context.__aexit__(None, None, None)
    for old in list(_RETIRED):
        _RETIRED.remove(old)
        await old.context.__aexit__(None, None, None)


_SESSION: AioSession | None = None


def shared_session() -> AioSession:
    """One aiobotocore session per process. Making a session loads botocore's data files
    (tens of milliseconds of CPU, on the event loop); clients made from a shared one cost
    about a millisecond. Credentials are still resolved per client, so rotation works.

    aiobotocore (and botocore's client machinery) is imported here, with the first client,
    not when okra is imported: about 0.1-0.2 CPU s and 10 MiB that a process making no AWS
    call (the CLI, a manager whose controllers have nothing to do yet) never pays."""
    global _SESSION
    if _SESSION is None:
        from aiobotocore.session import get_session

        _SESSION = get_session()
    return _SESSION


API_CALLS = Counter(
    "okra_aws_api_calls_total",
    "AWS API calls by service, operation and final outcome (success, error), and "
    "throttled attempts (retries included)",
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
    if outcome != "throttled":  # throttled attempts are counted one by one (_Attempted)
        API_CALLS.labels(service, operation, outcome).inc()
    started = context.get(_STARTED)
    if started is not None:
        API_DURATION.labels(service, operation).observe(time.monotonic() - started)


def _outcome(http_response: Any, parsed: dict[str, Any] | None) -> str:
    code = ((parsed or {}).get("Error") or {}).get("Code")
    status = getattr(http_response, "status_code", 200)
    if code in THROTTLING_CODES or status == 429:
        return "throttled"
    return "error" if code or status >= 400 else "success"


@dataclass(frozen=True)
class _Finished:
    """`after-call`: the response (success or an AWS error) of one call."""

    service: str

    def __call__(
        self, http_response: Any, parsed: dict[str, Any], model: Any, context: Any, **_: Any
    ) -> None:
        _observe(self.service, model.name, context, _outcome(http_response, parsed))


@dataclass(frozen=True)
class _Attempted:
    """`needs-retry`: emitted after every attempt (the first and each retry), before the
    retry handler decides; counts the throttled ones. Returns None: it never asks for a
    retry itself."""

    service: str

    def __call__(self, response: Any, operation: Any, **_: Any) -> None:
        if response is None:  # no answer (a connection error): not throttling
            return
        http_response, parsed = response
        if _outcome(http_response, parsed) == "throttled":
            API_CALLS.labels(self.service, operation.name, "throttled").inc()


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
