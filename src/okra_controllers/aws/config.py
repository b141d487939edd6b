"""How okra reaches AWS: region, optional endpoint URL, optional static keys.

All AWS calls go through aiobotocore (asyncio, no boto3 on the event loop). An
endpoint URL points every service at LocalStack or a moto server; without one
the standard AWS credential chain and endpoints apply.

`on_call`, when set, is told `"<service>:<Operation>"` (e.g. `elbv2:ModifyRule`)
once per API call, retries not counted, from every client this config makes:
tests and benches count the AWS calls a controller makes without patching
botocore or reading the emulator's logs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession, get_session


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


@dataclass(frozen=True)
class _Counter:
    """A botocore `before-call` handler: emitted once per API call, before
    signing and retries, with the operation model."""

    service: str
    on_call: Callable[[str], None]

    def __call__(self, model: Any, **_: Any) -> None:
        self.on_call(f"{self.service}:{model.name}")
