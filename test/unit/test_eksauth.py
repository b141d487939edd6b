"""The EKS token verifier's rules, on tokens signed offline by botocore at chosen times."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest

from eks_tokens import altered, offline_token
from okra_testkit.eksauth import AwsPrincipal, EksTokenVerifier, TokenRejectedError
from okra_testkit.emulator import EMULATOR_ARN, emulator_principal

EMULATOR = "http://127.0.0.1:4566"
AWS_STS = "https://sts.us-east-1.amazonaws.com"
T0 = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
MIN = datetime.timedelta(minutes=1)


@pytest.fixture
def verifier() -> EksTokenVerifier:
    return EksTokenVerifier([emulator_principal()], [EMULATOR])


def test_valid_tokens_are_accepted_for_15_minutes(verifier: EksTokenVerifier) -> None:
    token = offline_token(EMULATOR, "c1", T0)
    for now in (T0, T0 + 15 * MIN, T0 - 14 * MIN):  # a little clock skew either way
        who = verifier.verify(token, "c1", now=now)
        assert (who.arn, who.account, who.access_key_id) == (
            EMULATOR_ARN,
            "123456789012",
            "testing",
        )


def test_go_sdk_style_and_aws_hosts_are_accepted(verifier: EksTokenVerifier) -> None:
    # A Go SDK's presigned URL hashes the empty body instead of UNSIGNED-PAYLOAD.
    assert verifier.verify(offline_token(EMULATOR, "c1", T0, empty_hash=True), "c1", now=T0)
    # AWS's own STS hosts need no registration (https only).
    assert verifier.verify(offline_token(AWS_STS, "c1", T0), "c1", now=T0)
    assert verifier.verify(offline_token("https://sts.amazonaws.com", "c1", T0), "c1", now=T0)


def test_credentials_issued_by_assume_role_need_their_session_token() -> None:
    v = EksTokenVerifier(
        [AwsPrincipal("ASIA1", "s3cret", "arn:aws:sts::1:assumed-role/r/s", session_token="tok")],
        [EMULATOR],
    )
    token = offline_token(EMULATOR, "c1", T0, key="ASIA1", secret="s3cret")
    with pytest.raises(TokenRejectedError, match="X-Amz-Security-Token"):
        v.verify(token, "c1", now=T0)


Case = Callable[[EksTokenVerifier, str], object]

REJECTED: dict[str, tuple[Case, str]] = {
    "another cluster": (lambda v, t: v.verify(t, "c2", now=T0), "signature does not match"),
    "15 min + 1 s": (
        lambda v, t: v.verify(t, "c1", now=T0 + 15 * MIN + datetime.timedelta(seconds=1)),
        "expired",
    ),
    "signed 16 min ahead": (lambda v, t: v.verify(t, "c1", now=T0 - 16 * MIN), "future"),
    "wrong secret": (
        lambda v, _: v.verify(offline_token(EMULATOR, "c1", T0, secret="x"), "c1", now=T0),
        "signature does not match",
    ),
    "unknown key": (
        lambda v, _: v.verify(offline_token(EMULATOR, "c1", T0, key="AKIAX"), "c1", now=T0),
        "unknown access key",
    ),
    "expires > 900": (
        lambda v, _: v.verify(offline_token(EMULATOR, "c1", T0, expires=901), "c1", now=T0),
        "outside 0..900",
    ),
    "date moved a second": (
        lambda v, t: v.verify(altered(t, **{"X-Amz-Date": "20260102T030406Z"}), "c1", now=T0),
        "signature does not match",
    ),
    "expires changed": (
        lambda v, t: v.verify(altered(t, **{"X-Amz-Expires": "900"}), "c1", now=T0),
        "signature does not match",
    ),
    "host changed to another known one": (
        lambda v, t: v.verify(
            altered(offline_token(AWS_STS, "c1", T0), host="sts.amazonaws.com"), "c1", now=T0
        ),
        "signature does not match",
    ),
    "unknown endpoint": (
        lambda v, _: v.verify(offline_token("http://127.0.0.1:1", "c1", T0), "c1", now=T0),
        "unexpected STS endpoint",
    ),
    "AWS host over http": (
        lambda v, _: v.verify(offline_token("http://sts.amazonaws.com", "c1", T0), "c1", now=T0),
        "unexpected STS endpoint",
    ),
    "padding": (lambda v, t: v.verify(t + "=", "c1", now=T0), "unpadded"),
    "no prefix": (lambda v, t: v.verify(t.removeprefix("k8s-aws-v1."), "c1", now=T0), "prefix"),
    "too large": (lambda v, t: v.verify(t + "A" * 5000, "c1", now=T0), "too large"),
    "extra parameter": (lambda v, t: v.verify(altered(t, Foo="1"), "c1", now=T0), "not allowed"),
    "other action": (
        lambda v, t: v.verify(altered(t, Action="GetSessionToken"), "c1", now=T0),
        "not a GetCallerIdentity",
    ),
    "cluster header not signed": (
        lambda v, t: v.verify(altered(t, **{"X-Amz-SignedHeaders": "host"}), "c1", now=T0),
        "x-k8s-aws-id header is not signed",
    ),
    "other signed header": (
        lambda v, t: v.verify(
            altered(t, **{"X-Amz-SignedHeaders": "host;x-amz-foo;x-k8s-aws-id"}), "c1", now=T0
        ),
        "unexpected signed headers",
    ),
    "credential scope of another service": (
        lambda v, t: v.verify(
            altered(t, **{"X-Amz-Credential": "testing/20260102/us-east-1/s3/aws4_request"}),
            "c1",
            now=T0,
        ),
        "not an STS credential scope",
    ),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_rejected(verifier: EksTokenVerifier, case: str) -> None:
    call, reason = REJECTED[case]
    token = offline_token(EMULATOR, "c1", T0)
    with pytest.raises(TokenRejectedError, match=reason):
        call(verifier, token)
