"""Credentials of an assumed IAM role (`AwsConfig.role_arn`): a Cell's backend in another
account (the hosted zone or the shared load balancer often lives in a network account).

One aiobotocore session per (base config, role, event loop), made on first use and kept:
its credentials come from STS AssumeRole, called with the base config's own credentials,
and botocore refreshes them before they expire (from 15 minutes before, as it does for
any assumed role; a call never waits on an expired set). Every client of that role, pooled
or not, shares the session, so the role is assumed once per hour, not once per call.

A role that cannot be assumed (its trust policy does not name okra's principal, the base
identity lacks `sts:AssumeRole` on it) fails the call that needed it with STS's own
`AccessDenied`, from operation `AssumeRole`: the controller says so in status and writes
nothing. Nothing here logs: neither the role nor, of course, the credentials.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
from typing import Any

from botocore.exceptions import ClientError

from okra_controllers.aws.clients import ClientMaker

SESSION_NAME = "okra"
DURATION = 3600
"""Seconds an assumed role's credentials last (AWS's default maximum for a role)."""

_SESSIONS: dict[tuple[int, ClientMaker, str], Any] = {}


def _clock() -> datetime.datetime:
    """The time credentials are refreshed by (tests move it)."""
    return datetime.datetime.now(datetime.UTC)


def role_session(base: ClientMaker, role_arn: str) -> Any:
    """The session whose credentials are `role_arn`'s, assumed with `base`'s."""
    key = (id(asyncio.get_running_loop()), base, role_arn)
    session = _SESSIONS.get(key)
    if session is not None:
        return session
    from aiobotocore.credentials import AioDeferredRefreshableCredentials
    from aiobotocore.session import get_session

    async def assume() -> dict[str, Any]:
        try:
            async with base.client("sts") as sts:
                out = await sts.assume_role(
                    RoleArn=role_arn, RoleSessionName=SESSION_NAME, DurationSeconds=DURATION
                )
        except ClientError as e:
            # STS names the role in its refusal, and botocore logs a failed refresh with
            # its traceback: the same error, said without the role.
            response = copy.deepcopy(e.response)
            error = response.get("Error") or {}
            error["Message"] = str(error.get("Message", "")).replace(role_arn, "<roleARN>")
            raise type(e)(response, e.operation_name) from None
        c = out["Credentials"]
        return {
            "access_key": c["AccessKeyId"],
            "secret_key": c["SecretAccessKey"],
            "token": c["SessionToken"],
            "expiry_time": c["Expiration"].isoformat(),
        }

    session = get_session()
    session._credentials = AioDeferredRefreshableCredentials(  # type: ignore[attr-defined]
        refresh_using=assume, method="assume-role", time_fetcher=lambda: _clock()
    )
    _SESSIONS[key] = session
    return session


def forget_sessions() -> None:
    """Drop every role's session (tests; the next call assumes each role again)."""
    _SESSIONS.clear()
