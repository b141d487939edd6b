"""EKS tokens made offline with botocore's SigV4 query signer, for tests that need a token
signed at a given time, or the way a Go SDK signs it (the empty body's hash as payload hash
instead of UNSIGNED-PAYLOAD), or with one query parameter changed after signing; and `whoami`,
what a workload API server makes of a token."""

from __future__ import annotations

import base64
import datetime
import hashlib
import ssl
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import aiohttp
from botocore.auth import SIGV4_TIMESTAMP, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from okra_controllers.clusters.connect import EKS_TOKEN_PREFIX
from okra_testkit.envtest import ControlPlane


class _SignedAt(SigV4QueryAuth):
    """botocore's presigner with the signing time given instead of read from the clock."""

    def __init__(
        self, creds: Credentials, when: datetime.datetime, expires: int, empty_hash: bool
    ) -> None:
        super().__init__(creds, "sts", "us-east-1", expires=expires)
        self.when = when
        self.empty_hash = empty_hash

    def payload(self, request: Any) -> str:
        return hashlib.sha256(b"").hexdigest() if self.empty_hash else str(super().payload(request))

    def add_auth(self, request: Any) -> None:
        request.context["timestamp"] = self.when.strftime(SIGV4_TIMESTAMP)
        signer: Any = self  # botocore's private steps of add_auth, after the clock read
        signer._modify_request_before_signing(request)
        canonical = self.canonical_request(request)
        signature = self.signature(self.string_to_sign(request, canonical), request)
        signer._inject_signature_to_request(request, signature)


def offline_token(
    endpoint: str,
    cluster: str,
    when: datetime.datetime,
    *,
    key: str = "testing",
    secret: str = "testing",
    expires: int = 60,
    empty_hash: bool = False,
) -> str:
    """`k8s-aws-v1.` + base64url of a GetCallerIdentity URL at `endpoint` presigned at `when`."""
    query = urlencode({"Action": "GetCallerIdentity", "Version": "2011-06-15"})
    req = AWSRequest(method="GET", url=f"{endpoint}/?{query}", headers={"x-k8s-aws-id": cluster})
    _SignedAt(Credentials(key, secret), when, expires, empty_hash).add_auth(req)
    assert req.url is not None
    return encode(req.url)


def encode(url: str) -> str:
    return EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def decode(token: str) -> str:
    body = token.removeprefix(EKS_TOKEN_PREFIX)
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


def query_of(token: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(decode(token)).query))


def altered(token: str, host: str | None = None, **params: str) -> str:
    """The token with its URL's host or query parameters replaced, signature left as it was."""
    url = urlsplit(decode(token))
    query = {**dict(parse_qsl(url.query)), **params}
    url = url._replace(query=urlencode(query), netloc=host or url.netloc)
    return encode(url.geturl())


async def whoami(plane: ControlPlane, token: str) -> tuple[int, dict[str, Any]]:
    """POST a SelfSubjectReview with `token`: the status and what the apiserver says we are."""
    ctx = ssl.create_default_context(cadata=plane.ca_pem.decode())
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{plane.server}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            json=review,
            headers={"Authorization": f"Bearer {token}"},
            ssl=ctx,
        ) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


__all__ = ["SIGV4_TIMESTAMP", "altered", "decode", "encode", "offline_token", "query_of", "whoami"]
