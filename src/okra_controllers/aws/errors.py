"""AWS refusing a request because of what it was asked, told apart from AWS failing.

A refusal (HTTP 4xx other than throttling: `ListenerNotFound`, `TargetGroupNotFound`,
`RuleNotFound`, `ValidationError`, `InvalidConfigurationRequest`, `AccessDenied`, ...)
comes from the user's input or okra's permissions, and retrying cannot fix it until
someone changes one of them. Every controller that talks to AWS reports the refusal
in the object's status and a Warning Event before it lets the error go, so to the
controller runtime it is a `ReportedError`: one warning without a traceback, retried
on a long backoff, never mistaken for a bug. `AwsConfig.client()` turns every refusal
raised out of its block into `AwsRefusalError`, which is still the `ClientError` botocore
raised (same response, same operation), so code that looks at error codes is
unchanged. Throttling and 5xx are not refusals: botocore retries them, and what is
left after that is an ordinary error.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from okra_runtime.reconcile import ReportedError

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
"""botocore's throttling error codes (`botocore.retries.standard`): AWS asking to slow
down, never a refusal of the request itself."""

TRANSIENT_CODES = frozenset({"RequestTimeout", "RequestTimeoutException", "IDPCommunicationError"})
"""4xx codes that say the request did not get through in time: worth a retry."""

HINTS = {
    "ListenerNotFound": "check the listener ARN (it must name an existing listener)",
    "TargetGroupNotFound": "check the target group ARNs (each must name an existing group)",
    "RuleNotFound": "the listener rule was deleted in AWS; okra recreates it on the next sync",
    "LoadBalancerNotFound": "check the load balancer ARN",
    "ValidationError": "a value in the spec is not valid for AWS",
    "InvalidConfigurationRequest": "AWS rejects this configuration; check the spec's values",
    "AccessDenied": "okra's AWS role lacks this permission (see the IAM policy in the docs)",
    "AccessDeniedException": "okra's AWS role lacks this permission (see the IAM policy in "
    "the docs)",
    "UnauthorizedOperation": "okra's AWS role lacks this permission",
    "TooManyTargetGroups": "too many target groups on the load balancer (an AWS quota)",
    "TooManyRules": "too many rules on the listener (an AWS quota)",
    "PriorityInUse": "another rule holds this priority on the listener; choose another",
}
"""What to fix, by error code, appended to the message a status and an Event carry."""


def error_code(e: ClientError) -> str:
    return str(e.response.get("Error", {}).get("Code", ""))


def _http_status(e: ClientError) -> int:
    status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else 0


def refused(e: BaseException) -> bool:
    """AWS refused the request for what it asked (4xx, not throttling): bad input or a
    missing permission, which a retry alone cannot fix."""
    if not isinstance(e, ClientError):
        return False
    code, status = error_code(e), _http_status(e)
    if code in THROTTLING_CODES or code in TRANSIENT_CODES or status == 429:
        return False
    return 400 <= status < 500


def hint(e: BaseException) -> str:
    """What the user can do about a refusal (empty when there is no advice)."""
    return HINTS.get(error_code(e), "") if isinstance(e, ClientError) else ""


class AwsRefusalError(ClientError, ReportedError):
    """A `ClientError` that `refused()` says is AWS refusing the request; its cause was
    reported by the controller that made the call (status condition, Warning Event)."""

    def __init__(self, error_response: Any, operation_name: str) -> None:
        super().__init__(error_response, operation_name)

    @classmethod
    def of(cls, e: ClientError) -> AwsRefusalError:
        out = cls(e.response, e.operation_name)
        out.__traceback__ = e.__traceback__
        return out
