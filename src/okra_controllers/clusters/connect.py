"""Connections to workload clusters, made from Argo CD cluster Secrets and cached.

Why a cache: a set that looks into twenty clusters every 30 s must not open twenty TLS
connections (and, for EKS, sign twenty STS requests) each time. `ClusterConnections` keeps one
`Client` per Secret (keyed by its uid) and rebuilds it, closing the old one, when the Secret's
resourceVersion changes — a rotated token or a moved endpoint takes effect on the next reconcile.

An Argo CD cluster Secret (`argocd.argoproj.io/secret-type: cluster`) carries `name`, `server`
and `config`, a JSON document with `bearerToken`, `tlsClientConfig.{caData,insecure,serverName}`
and `awsAuthConfig.{clusterName,roleARN}`. With `awsAuthConfig` okra authenticates as
`aws eks get-token` does: a presigned STS `GetCallerIdentity` URL, signed with the
`x-k8s-aws-id` header, becomes the bearer token `k8s-aws-v1.<base64url>` (refreshed before its
15 minutes are up). No subprocess, no kubeconfig on disk.

Tokens, CA bundles and the Secret's values are never logged, and never appear in `repr()`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import ssl
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import structlog

from okra_controllers.aws.config import AwsConfig, shared_session
from okra_controllers.aws.eks import EksCluster
from okra_runtime.client import Client, RetryPolicy
from okra_runtime.kubeconfig import ApiClient, Configuration

log = structlog.get_logger("okra.clusters")

SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"
EKS_TOKEN_PREFIX = "k8s-aws-v1."
EKS_KEY_PREFIX = "eks:"
"""Connections to EKS clusters reached without a Secret are cached under `eks:<name>`."""
EKS_TOKEN_EXPIRES = 60
"""Seconds the presigned URL is valid for (as `aws eks get-token`); EKS accepts the token for
15 minutes from signing regardless."""
EKS_TOKEN_REFRESH = 10 * 60
"""Seconds after which a cached EKS token is signed again."""
WORKLOAD_RETRY = RetryPolicy(attempts=2, base_delay=0.2, max_delay=1.0)
"""Fail fast: an unreachable cluster is reported on the next reconcile, not retried for long."""
WORKLOAD_CONNECT_TIMEOUT = 2.0
"""Seconds to get a connection to a workload cluster (TCP and TLS): an apiserver that is up
accepts in milliseconds, so one that has not after this is unreachable (a firewall dropping
packets, a deleted cluster's address). It is reported after about two of these (one retry),
instead of holding the reconcile worker for the caller's whole budget (10 s); a reachable but
slow cluster keeps the whole budget to answer a large list."""
WORKLOAD_TIMEOUT = aiohttp.ClientTimeout(total=60, connect=WORKLOAD_CONNECT_TIMEOUT)


class ClusterSecretError(ValueError):
    """The Secret is not a usable Argo CD cluster Secret; the message says what to fix."""


@dataclass(frozen=True)
class AwsAuth:
    cluster_name: str
    role_arn: str | None = None


@dataclass(frozen=True)
class ArgoCluster:
    """One cluster as Argo CD knows it. `repr()` hides the credentials."""

    name: str
    server: str
    bearer_token: str | None = field(default=None, repr=False)
    ca_data: bytes | None = field(default=None, repr=False)
    insecure: bool = False
    server_name: str | None = None
    aws_auth: AwsAuth | None = None
    labels: dict[str, str] = field(default_factory=dict, compare=False)


def _decode(data: dict[str, str], key: str, secret: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as e:
        raise ClusterSecretError(f"Secret {secret}: data.{key} is not base64 text") from e


def parse_cluster_secret(secret: dict[str, Any]) -> ArgoCluster:
    """An `ArgoCluster` from a Secret as the API server returns it (base64 `data`;
    `stringData` is honoured too, for objects not yet written)."""
    meta = secret.get("metadata") or {}
    ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    data: dict[str, str] = dict(secret.get("data") or {})
    for k, v in (secret.get("stringData") or {}).items():
        data[k] = base64.b64encode(str(v).encode()).decode()
    server = _decode(data, "server", ref)
    if not server:
        raise ClusterSecretError(f"Secret {ref}: data.server is missing")
    name = _decode(data, "name", ref) or meta.get("name") or server
    raw_config = _decode(data, "config", ref) or "{}"
    try:
        config = json.loads(raw_config)
    except json.JSONDecodeError as e:
        raise ClusterSecretError(f"Secret {ref}: data.config is not JSON ({e.msg})") from None
    if not isinstance(config, dict):
        raise ClusterSecretError(f"Secret {ref}: data.config must be a JSON object")
    tls = config.get("tlsClientConfig") or {}
    ca: bytes | None = None
    if tls.get("caData"):
        try:
            ca = base64.b64decode(tls["caData"], validate=True)
        except (binascii.Error, TypeError) as e:
            raise ClusterSecretError(
                f"Secret {ref}: config.tlsClientConfig.caData is not base64"
            ) from e
    aws = config.get("awsAuthConfig") or {}
    aws_auth = None
    if aws.get("clusterName"):
        aws_auth = AwsAuth(str(aws["clusterName"]), aws.get("roleARN") or None)
    token = config.get("bearerToken") or None
    if token is None and aws_auth is None:
        raise ClusterSecretError(
            f"Secret {ref}: config has neither bearerToken nor awsAuthConfig.clusterName"
        )
    return ArgoCluster(
        name=name,
        server=server.rstrip("/"),
        bearer_token=token,
        ca_data=ca,
        insecure=bool(tls.get("insecure", False)),
        server_name=tls.get("serverName") or None,
        aws_auth=aws_auth,
        labels=dict(meta.get("labels") or {}),
    )


async def eks_token(aws: AwsConfig, cluster_name: str, role_arn: str | None = None) -> str:
    """A bearer token for EKS, made as `aws eks get-token` makes it: a presigned STS
    `GetCallerIdentity` GET URL with the `x-k8s-aws-id` header signed, valid 60 s."""
    creds: dict[str, str] = {}
    if role_arn:
        async with aws.client("sts") as sts:
            out = await sts.assume_role(RoleArn=role_arn, RoleSessionName="okra")
        c = out["Credentials"]
        creds = {
            "aws_access_key_id": c["AccessKeyId"],
            "aws_secret_access_key": c["SecretAccessKey"],
            "aws_session_token": c["SessionToken"],
        }
    session: Any = shared_session()
    kwargs = aws._client_kwargs()
    kwargs.update(creds)
    async with session.create_client("sts", **kwargs) as sts:

        def add_header(request: Any, **_: Any) -> None:
            request.headers["x-k8s-aws-id"] = cluster_name

        sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_header)
        url: str = await sts.generate_presigned_url(
            "get_caller_identity", Params={}, ExpiresIn=EKS_TOKEN_EXPIRES, HttpMethod="GET"
        )
    return EKS_TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


@dataclass
class _Entry:
    resource_version: str
    client: Client
    ca_file: Path | None


class ClusterConnections:
    """One `Client` per Argo CD cluster Secret, rebuilt when the Secret changes.

    `client_for(secret)` is cheap when the Secret is unchanged; `close()` closes every client
    and removes the CA files it wrote (mode 0600, in a private temporary directory, because
    kubernetes_asyncio reads CAs from files only)."""

    def __init__(self, aws: AwsConfig | None = None) -> None:
        self.aws = aws or AwsConfig()
        self._entries: dict[str, _Entry] = {}
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    async def client_for(self, secret: dict[str, Any]) -> Client:
        """The client for an Argo CD cluster Secret (raises ClusterSecretError if unusable)."""
        meta = secret.get("metadata") or {}
        key = str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")
        rv = str(meta.get("resourceVersion") or "")
        entry = self._entries.get(key)
        if entry is not None and entry.resource_version == rv:
            return entry.client
        return await self.client_for_cluster(key, rv, parse_cluster_secret(secret))

    async def client_for_cluster(self, key: str, version: str, cluster: ArgoCluster) -> Client:
        """The client cached under `key`, rebuilt (the old one closed) when `version` changes;
        for clusters known without a Secret (an EKS cluster described by the EKS API)."""
        entry = self._entries.get(key)
        if entry is not None and entry.resource_version == version:
            return entry.client
        if entry is not None:
            await self._drop(key)
        client, ca_file = self._build(cluster)
        self._entries[key] = _Entry(version, client, ca_file)
        log.info(
            "connection to cluster built",
            cluster=cluster.name,
            server=cluster.server,
            auth="eks" if cluster.bearer_token is None else "bearer",
        )
        return client

    async def client_for_eks(self, cluster: EksCluster) -> Client:
        """A client for an EKS cluster no Secret names, at the endpoint and CA its
        DescribeCluster gave, authenticated with EKS tokens of okra's own AWS identity; cached
        under `eks:<name>` (`EKS_KEY_PREFIX`), rebuilt when the endpoint or CA changes."""
        try:
            ca = base64.b64decode(cluster.ca_data, validate=True) if cluster.ca_data else None
        except binascii.Error:
            raise ClusterSecretError("EKS CA data is not base64") from None
        direct = ArgoCluster(
            name=cluster.name, server=cluster.endpoint, ca_data=ca, aws_auth=AwsAuth(cluster.name)
        )
        version = hashlib.sha256(f"{cluster.endpoint}\n{cluster.ca_data}".encode()).hexdigest()
        return await self.client_for_cluster(f"{EKS_KEY_PREFIX}{cluster.name}", version, direct)

    async def forget(self, uid: str) -> None:
        """Close the connection made from a Secret that is gone."""
        if uid in self._entries:
            await self._drop(uid)

    def known(self) -> set[str]:
        return set(self._entries)

    async def retain(self, keep: Callable[[str], bool]) -> None:
        """Close the connections whose key `keep` rejects (their Secret or cluster is gone)."""
        for key in [k for k in self._entries if not keep(k)]:
            await self._drop(key)

    async def close(self) -> None:
        for key in list(self._entries):
            await self._drop(key)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    async def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        try:
            await entry.client.close()
        finally:
            if entry.ca_file is not None:
                entry.ca_file.unlink(missing_ok=True)

    def _build(self, cluster: ArgoCluster) -> tuple[Client, Path | None]:
        cfg = Configuration()
        cfg.host = cluster.server
        cfg.connection_pool_maxsize = 8
        ca_file: Path | None = None
        if cluster.ca_data:
            if self._dir is None:
                self._dir = tempfile.TemporaryDirectory(prefix="okra-clusters-")
            fd, name = tempfile.mkstemp(dir=self._dir.name, suffix=".crt")
            with os.fdopen(fd, "wb") as f:
                f.write(cluster.ca_data)
            ca_file = Path(name)
            cfg.ssl_ca_cert = name
        if cluster.insecure:
            cfg.verify_ssl = False
        if cluster.server_name:
            cfg.tls_server_name = cluster.server_name
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        if cluster.bearer_token is not None:
            cfg.api_key = {"BearerToken": cluster.bearer_token}
        elif cluster.aws_auth is not None:
            # kubernetes_asyncio calls the hook only for a key that exists: an empty one, which
            # the hook replaces with a signed token before the first request.
            cfg.api_key = {"BearerToken": ""}
            cfg.refresh_api_key_hook = _EksTokenRefresher(self.aws, cluster.aws_auth)
        try:
            api = ApiClient(configuration=cfg)
        except ssl.SSLError:
            if ca_file is not None:
                ca_file.unlink(missing_ok=True)
            raise ClusterSecretError(
                f"cluster {cluster.name}: tlsClientConfig.caData is not a PEM CA certificate"
            ) from None
        return Client(api, retry=WORKLOAD_RETRY, timeout=WORKLOAD_TIMEOUT), ca_file


class _EksTokenRefresher:
    """kubernetes_asyncio's `refresh_api_key_hook`: signs a new EKS token when the cached one
    is older than `EKS_TOKEN_REFRESH`."""

    def __init__(self, aws: AwsConfig, auth: AwsAuth) -> None:
        self.aws = aws
        self.auth = auth
        self.signed_at = -1e9

    def __repr__(self) -> str:
        return f"_EksTokenRefresher(cluster={self.auth.cluster_name!r})"

    async def __call__(self, cfg: Configuration) -> None:
        now = time.monotonic()
        if now - self.signed_at < EKS_TOKEN_REFRESH and cfg.api_key.get("BearerToken"):
            return
        cfg.api_key = {
            "BearerToken": await eks_token(self.aws, self.auth.cluster_name, self.auth.role_arn)
        }
        self.signed_at = now
