"""Typed API errors. The server's Status message travels with every error, so
a caller can log or surface exactly what the API server said."""

from __future__ import annotations

import json
from typing import Any

import aiohttp


class ApiError(Exception):
    """An error response from the API server (`status` is the HTTP code)."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: dict[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        self.retry_after = retry_after

    @property
    def causes(self) -> list[dict[str, Any]]:
        """Field-level causes of an Invalid error (`field`, `message`, `reason`)."""
        return list((self.body.get("details") or {}).get("causes") or [])


class BadRequestError(ApiError):
    """400: the request was malformed (for example an unparsable patch)."""


class UnauthorizedError(ApiError):
    """401: the credentials were rejected."""


class ForbiddenError(ApiError):
    """403: RBAC denied the request."""


class NotFoundError(ApiError):
    """404: the object (or its kind) does not exist."""


class ConflictError(ApiError):
    """409: the resourceVersion or a precondition did not match; re-read and retry."""


class AlreadyExistsError(ConflictError):
    """409 AlreadyExists: an object with that name exists."""


class GoneError(ApiError):
    """410: the requested resourceVersion is too old (compacted); relist."""


class InvalidError(ApiError):
    """422: the object failed validation; `causes` names the fields."""


class TooManyRequestsError(ApiError):
    """429: the server asked the client to back off (see `retry_after`)."""


class ServerError(ApiError):
    """5xx: the server failed; retried with backoff by the client."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
}


def api_error(
    status: int, raw: bytes | str | dict[str, Any], retry_after: float | None = None
) -> ApiError:
    """Build the typed error for an HTTP status and a (Status) response body."""
    body: dict[str, Any]
    if isinstance(raw, dict):
        body = raw
    else:
        try:
            parsed = json.loads(raw or b"{}")
            body = parsed if isinstance(parsed, dict) else {}
        except ValueError:
            text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
            body = {"message": text.strip()[:1000]}
    reason = str(body.get("reason") or "")
    message = str(body.get("message") or reason or f"HTTP {status}")
    cls: type[ApiError]
    if status == 409 and reason == "AlreadyExists":
        cls = AlreadyExistsError
    elif status >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason or cls.__name__.removesuffix("Error"), message, body, retry_after)


class NoKindMatchError(LookupError):
    """The API server does not serve this group/version/kind (is the CRD installed?)."""


class WatchStalledError(Exception):
    """A watch delivered no bytes (not even a bookmark) for longer than allowed."""


def unreachable(e: BaseException) -> bool:
    """A failure of the path to a server or of the server itself (refused, reset,
    timed out, stalled, 5xx, 429), which ends by itself: worth a quick retry, not a
    long backoff or a traceback. The server refusing the request (4xx) is not."""
    return isinstance(
        e,
        ConnectionError
        | OSError
        | TimeoutError
        | aiohttp.ClientConnectionError
        | WatchStalledError
        | ServerError
        | TooManyRequestsError,
    )


PANICS: tuple[type[BaseException], ...] = (
    AssertionError,
    AttributeError,
    ArithmeticError,
    ImportError,
    LookupError,
    NameError,
    NotImplementedError,
    RecursionError,
    TypeError,
)
"""Exceptions that are programming errors: what would panic in Go (a nil dereferenced, an
index or key out of range, a failed type assertion, a division by zero, an assertion)."""


def panicked(e: BaseException) -> bool:
    """The reconciler failed on a bug, not on an error it means (the API server's answer,
    an unreachable server, `TerminalError`, `ReportedError`, anything else it raises): what
    controller-runtime counts as a recovered panic. A `NoKindMatchError` (a LookupError) is
    the API server not serving a kind, not a bug."""
    return isinstance(e, PANICS) and not isinstance(e, NoKindMatchError)
