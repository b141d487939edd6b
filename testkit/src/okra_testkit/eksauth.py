"""EKS authentication for local workload clusters: the server side of an EKS token.

An EKS bearer token is `k8s-aws-v1.` + base64url of a presigned STS `GetCallerIdentity` GET URL
whose SigV4 signature covers the `x-k8s-aws-id` header (the cluster's name). In EKS the API
server hands the token to aws-iam-authenticator through its token-webhook; the authenticator
checks the URL's shape, refuses it 15 minutes after `X-Amz-Date`, and GETs it from STS with
`x-k8s-aws-id: <its own cluster>`: STS answers with the caller's ARN only if the signature
matches, so a token signed for another cluster, with another secret or altered in any byte fails.

`EksTokenVerifier` makes the same checks and, in place of the GET to STS, recomputes the SigV4
query signature itself with the secret keys of the principals it knows (the emulator's static
keys, and credentials the emulator issued by AssumeRole, learned as they pass the proxy): the
same HMAC STS would compute, with the verifier's own cluster name as the header value.
`TokenReviewServer` serves it as a Kubernetes TokenReview webhook (what
`ControlPlane(token_webhook=...)` points kube-apiserver at), one URL path per cluster.

Test and demo machinery: the manager never imports this module.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import hmac
import json
import re
import ssl
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from okra_testkit.envtest.certs import make_pki

EKS_TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
TOKEN_LIFETIME = datetime.timedelta(minutes=15)
"""EKS accepts a token until 15 minutes after its `X-Amz-Date`, whatever `X-Amz-Expires` says."""
MAX_TOKEN_BYTES = 4096
ADMIN_GROUP = "okra:eks-cluster-admins"
"""The group verified principals are put in; `bind_admin_group` gives it cluster-admin, as an
EKS access entry with AmazonEKSClusterAdminPolicy does."""

_ALLOWED_PARAMS = frozenset(
    {
        "action",
        "version",
        "x-amz-algorithm",
        "x-amz-credential",
        "x-amz-date",
        "x-amz-expires",
        "x-amz-security-token",
        "x-amz-signature",
        "x-amz-signedheaders",
    }
)
_AWS_STS_HOST = re.compile(r"^sts(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class TokenRejectedError(ValueError):
    """The token is not a valid EKS token for this cluster; the message says which check failed."""


@dataclass(frozen=True)
class AwsPrincipal:
    """Credentials the verifier can check signatures for, and the identity STS would answer
    for them (`GetCallerIdentity`'s Arn)."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    arn: str
    session_token: str | None = field(default=None, repr=False)

    @property
    def account(self) -> str:
        parts = self.arn.split(":")
        return parts[4] if len(parts) > 4 else ""


@dataclass(frozen=True)
class EksIdentity:
    arn: str
    account: str
    access_key_id: str


class EksTokenVerifier:
    """Checks EKS tokens as aws-iam-authenticator and STS do together (see the module doc).

    `sts_endpoints` are extra STS endpoint URLs whose host a token may name (an emulator's, or a
    proxy's in front of it, possibly plain http on loopback); AWS's own `sts[.region].amazonaws.com`
    hosts are accepted over https."""

    def __init__(self, principals: Iterable[AwsPrincipal] = (), sts_endpoints: Iterable[str] = ()):
        self._principals: dict[str, AwsPrincipal] = {}
        self._lock = threading.Lock()
        self._endpoints: set[tuple[str, str]] = set()
        for p in principals:
            self.add_principal(p)
        for url in sts_endpoints:
            self.add_sts_endpoint(url)

    def add_principal(self, principal: AwsPrincipal) -> None:
        with self._lock:
            self._principals[principal.access_key_id] = principal

    def add_sts_endpoint(self, url: str) -> None:
        parts = urlsplit(url)
        with self._lock:
            self._endpoints.add((parts.scheme, parts.netloc))

    def verify(
        self, token: str, cluster_id: str, now: datetime.datetime | None = None
    ) -> EksIdentity:
        """The identity that signed `token` for `cluster_id`; raises TokenRejectedError."""
        now = now or datetime.datetime.now(datetime.UTC)
        if len(token) > MAX_TOKEN_BYTES:
            raise TokenRejectedError("token is too large")
        if not token.startswith(EKS_TOKEN_PREFIX):
            raise TokenRejectedError(f"token is missing the {EKS_TOKEN_PREFIX!r} prefix")
        body = token.removeprefix(EKS_TOKEN_PREFIX)
        if "=" in body:
            raise TokenRejectedError("token is not unpadded base64url")
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            url = raw.decode("ascii")
        except (binascii.Error, ValueError) as e:
            raise TokenRejectedError(f"token is not base64url of a URL: {e}") from None
        parts = urlsplit(url)
        self._check_host(parts.scheme, parts.netloc)
        if parts.path != "/":
            raise TokenRejectedError(f"unexpected path {parts.path!r} in the presigned URL")
        if parts.fragment:
            raise TokenRejectedError("unexpected fragment in the presigned URL")
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=True)
        query: dict[str, str] = {}
        for key, value in pairs:
            low = key.lower()
            if low not in _ALLOWED_PARAMS:
                raise TokenRejectedError(f"query parameter {key!r} is not allowed")
            if low in query:
                raise TokenRejectedError(f"query parameter {key!r} appears more than once")
            query[low] = value
        if query.get("action") != "GetCallerIdentity":
            raise TokenRejectedError("the presigned URL is not a GetCallerIdentity call")
        if query.get("x-amz-algorithm") != "AWS4-HMAC-SHA256":
            raise TokenRejectedError("the presigned URL is not signed with AWS4-HMAC-SHA256")
        signed = query.get("x-amz-signedheaders", "").split(";")
        if CLUSTER_ID_HEADER not in signed:
            raise TokenRejectedError(f"the {CLUSTER_ID_HEADER} header is not signed")
        if signed != sorted(signed) or not set(signed) <= {"host", CLUSTER_ID_HEADER}:
            raise TokenRejectedError(f"unexpected signed headers {';'.join(signed)!r}")
        try:
            expires = int(query.get("x-amz-expires", ""))
        except ValueError:
            raise TokenRejectedError("X-Amz-Expires is missing or not a number") from None
        if not 0 <= expires <= 900:
            raise TokenRejectedError(f"X-Amz-Expires {expires} is outside 0..900")
        amz_date = query.get("x-amz-date", "")
        try:
            signed_at = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.UTC
            )
        except ValueError:
            raise TokenRejectedError("X-Amz-Date is missing or malformed") from None
        if now > signed_at + TOKEN_LIFETIME:
            raise TokenRejectedError(f"token expired (signed at {amz_date}, valid 15 minutes)")
        if signed_at > now + TOKEN_LIFETIME:
            raise TokenRejectedError(f"token signed in the future ({amz_date})")
        scope = query.get("x-amz-credential", "").split("/")
        if len(scope) != 5 or scope[3:] != ["sts", "aws4_request"]:
            raise TokenRejectedError("X-Amz-Credential is not an STS credential scope")
        access_key, day, region = scope[0], scope[1], scope[2]
        if day != amz_date[:8]:
            raise TokenRejectedError("X-Amz-Credential's date is not X-Amz-Date's")
        with self._lock:
            principal = self._principals.get(access_key)
        if principal is None:
            raise TokenRejectedError(f"unknown access key {access_key!r}")
        if principal.session_token is not None:
            given = query.get("x-amz-security-token", "")
            if not hmac.compare_digest(given.encode(), principal.session_token.encode()):
                raise TokenRejectedError("X-Amz-Security-Token does not match the access key")
        host = _canonical_host(parts.scheme, parts.netloc)
        headers = {"host": host, CLUSTER_ID_HEADER: cluster_id}
        canonical_query = "&".join(
            f"{k}={v}"
            for k, v in sorted(
                (_uri_encode(k), _uri_encode(v)) for k, v in pairs if k.lower() != "x-amz-signature"
            )
        )
        canonical_headers = "".join(f"{h}:{' '.join(headers[h].split())}\n" for h in signed)
        signing_key = _signing_key(principal.secret_access_key, day, region, "sts")
        given_sig = query.get("x-amz-signature", "")
        # Presigners differ on the payload hash (botocore: UNSIGNED-PAYLOAD; Go SDKs: the hash
        # of the empty body); STS accepts either, so both are tried.
        for payload_hash in ("UNSIGNED-PAYLOAD", _EMPTY_SHA256):
            canonical = "\n".join(
                [
                    "GET",
                    _uri_encode(unquote(parts.path), keep_slash=True),
                    canonical_query,
                    canonical_headers,
                    ";".join(signed),
                    payload_hash,
                ]
            )
            string_to_sign = "\n".join(
                [
                    "AWS4-HMAC-SHA256",
                    amz_date,
                    f"{day}/{region}/sts/aws4_request",
                    hashlib.sha256(canonical.encode()).hexdigest(),
                ]
            )
            expected = hmac.new(signing_key, string_to_sign.encode(), hashlib.sha256).hexdigest()
            if hmac.compare_digest(expected, given_sig):
                return EksIdentity(principal.arn, principal.account, access_key)
        raise TokenRejectedError(
            "signature does not match (altered token, wrong secret, or a token for another cluster)"
        )

    def _check_host(self, scheme: str, netloc: str) -> None:
        with self._lock:
            known = (scheme, netloc) in self._endpoints
        if known:
            return
        if scheme == "https" and _AWS_STS_HOST.match(netloc.removesuffix(":443")):
            return
        raise TokenRejectedError(f"unexpected STS endpoint {scheme}://{netloc} in the token")


def _uri_encode(value: str, keep_slash: bool = False) -> str:
    return quote(value, safe="-_.~/" if keep_slash else "-_.~")


def _canonical_host(scheme: str, netloc: str) -> str:
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    return netloc.removesuffix(default) if default else netloc


def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = hmac.new(f"AWS4{secret}".encode(), day.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


@dataclass(frozen=True)
class Decision:
    """One TokenReview answered: for which cluster, whether it passed, who or why not."""

    cluster: str
    authenticated: bool
    detail: str


class TokenReviewServer:
    """A Kubernetes TokenReview webhook (`authentication.k8s.io/v1`) on loopback HTTPS (as EKS's
    authenticator serves it; `ca_pem` is its throwaway CA), in a thread of its own, so it serves
    control planes that outlive any one event loop.

    `url_for(cluster)` is the webhook URL for one cluster's kube-apiserver: tokens sent there are
    verified for that cluster name. A verified principal becomes user `<its ARN>` in
    `groups`. `decisions` records every answer (newest last) for tests to read."""

    def __init__(self, verifier: EksTokenVerifier, groups: tuple[str, ...] = (ADMIN_GROUP,)):
        self.verifier = verifier
        self.groups = groups
        self.decisions: list[Decision] = []
        self.ca_pem = b""
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> TokenReviewServer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "TokenReviewServer not started"
        return int(self._server.server_address[1])

    def url_for(self, cluster: str) -> str:
        return f"https://127.0.0.1:{self.port}/clusters/{quote(cluster, safe='')}"

    def start(self) -> None:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                status, out = owner.review(self.path, body)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # tokens never reach a log

        pki = make_pki()
        self.ca_pem = pki.ca_cert_pem
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory(prefix="okra-token-review-") as d:
            cert, key = Path(d) / "tls.crt", Path(d) / "tls.key"
            cert.write_bytes(pki.serving_cert_pem)
            key.write_bytes(pki.serving_key_pem)
            tls.load_cert_chain(cert, key)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="eks-token-review", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def review(self, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
        """The HTTP status and TokenReview answer for one request (the handler's logic)."""
        match = re.fullmatch(r"/clusters/([^/?]+)", urlsplit(path).path)
        if match is None:
            return 404, {"error": f"no such path {path}"}
        cluster = unquote(match.group(1))
        try:
            review = json.loads(body)
            token = str(review["spec"]["token"])
        except (ValueError, KeyError, TypeError):
            return 400, {"error": "not a TokenReview"}
        api_version = review.get("apiVersion") or "authentication.k8s.io/v1"
        out: dict[str, Any] = {"apiVersion": api_version, "kind": "TokenReview"}
        try:
            who = self.verifier.verify(token, cluster)
        except TokenRejectedError as e:
            self.decisions.append(Decision(cluster, False, str(e)))
            out["status"] = {"authenticated": False, "error": str(e)}
            return 200, out
        self.decisions.append(Decision(cluster, True, who.arn))
        out["status"] = {
            "authenticated": True,
            "user": {
                "username": who.arn,
                "uid": f"aws-iam-authenticator:{who.account}:{who.access_key_id}",
                "groups": list(self.groups),
                "extra": {"arn": [who.arn], "accessKeyId": [who.access_key_id]},
            },
        }
        return 200, out
