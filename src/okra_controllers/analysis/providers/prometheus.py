"""The Prometheus provider: one instant query, read the way Argo Rollouts reads it.

Why it looks like this: templates written for Argo Rollouts compare `result` as Argo hands it
over (`metricproviders/prometheus/prometheus.go`): a vector becomes a list of floats (empty
when nothing matched, NaN kept as NaN), a scalar a float, any other result type is an error.
The stored value string is Go's formatting of those floats ("[0.97]", "NaN", "+Inf"), and the
resolved query is recorded as the metric's `ResolvedPrometheusQuery`.

Authentication follows Argo too: custom headers, `insecure`, an OAuth2 client-credentials
token, and SigV4 signing for Amazon Managed Prometheus (only for an `aps-workspaces` address,
as Argo decides).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

import aiohttp
import yarl
from botocore.exceptions import BotoCoreError, ClientError

from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
    go_format_float,
)
from okra_controllers.api.v1alpha1.providers import (
    OAuth2Config,
    PrometheusMetric,
    Sigv4Config,
)
from okra_controllers.aws.config import AwsConfig, shared_session

if TYPE_CHECKING:
    from botocore.credentials import Credentials

__all__ = ["ENV_ADDRESS", "PROVIDER", "RESOLVED_QUERY", "PrometheusProvider"]

ENV_ADDRESS = "ARGO_ROLLOUTS_PROMETHEUS_ADDRESS"
RESOLVED_QUERY = "ResolvedPrometheusQuery"
DEFAULT_TIMEOUT = 30
_AMP_MARKER = "aps-workspaces"
_API_ERROR_CODES = (400, 422, 503)  # Prometheus answers these with an error body


class PrometheusProvider:
    kind = "prometheus"

    async def measure(self, spec: PrometheusMetric, ctx: ProviderContext) -> ProviderResult:
        params = {"query": spec.query, "time": f"{time.time():.3f}"}
        address, data, warnings = await _api(spec, ctx, QUERY, params)
        value, display = _result(address, data)
        metadata = {"warnings": ", ".join(f'"{w}"' for w in warnings)} if warnings else {}
        metric_metadata = {RESOLVED_QUERY: spec.query} if spec.query else {}
        return ProviderResult(value, display, metadata, metric_metadata)

    async def samples(
        self, spec: PrometheusMetric, ctx: ProviderContext, start: float, end: float, step: float
    ) -> list[float]:
        """Every point of every series of `spec.query` as a range query from `start` to
        `end` (Unix seconds) at `step`: the sample the canary judge compares."""
        params = {
            "query": spec.query,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{max(step, 0.001):g}",
        }
        address, data, _ = await _api(spec, ctx, QUERY_RANGE, params)
        where = f"prometheus {address}"
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar":
            return [_sample(where, result)]
        if kind not in ("matrix", "vector") or not isinstance(result, list):
            raise ProviderError(f"{where}: range query answered {kind!r}, not a matrix")
        out: list[float] = []
        for series in result:
            if not isinstance(series, dict):
                continue
            if "values" in series:
                out.extend(_sample(where, pair) for pair in series.get("values") or ())
            elif "value" in series:
                out.append(_sample(where, series["value"]))
        return out


QUERY = "/api/v1/query"
QUERY_RANGE = "/api/v1/query_range"
"""The API paths okra asks (named in full: the IAM policy check maps each to its aps action)."""


async def _api(
    spec: PrometheusMetric, ctx: ProviderContext, path: str, params: dict[str, str]
) -> tuple[str, dict[str, Any], list[str]]:
    """(address, the answer's `data`, its warnings) of GET `path` (QUERY or QUERY_RANGE)."""
    address = spec.address or ctx.environ.get(ENV_ADDRESS, "")
    if not address:
        raise ProviderError(
            f"prometheus: no address: set provider.prometheus.address (or {ENV_ADDRESS})"
        )
    parts = urlsplit(address)
    if not (parts.scheme and parts.netloc):
        raise ProviderError(
            f"prometheus: address {address!r} is not a URL like http://prometheus:9090"
        )
    timeout = spec.timeout if spec.timeout is not None else DEFAULT_TIMEOUT
    ssl = not spec.insecure
    headers = {h.key: h.value for h in spec.headers or ()}
    auth = spec.authentication
    query = urlencode(params, quote_via=quote)
    url = f"{address.rstrip('/')}{path}?{query}"
    try:
        async with (
            asyncio.timeout(timeout),
            aiohttp.ClientSession() as session,
        ):
            if auth is not None and auth.oauth2 is not None and auth.oauth2.token_url:
                token = await _oauth2_token(session, auth.oauth2, ssl)
                headers["Authorization"] = f"Bearer {token}"
            if _AMP_MARKER in address:
                sigv4 = auth.sigv4 if auth is not None else None
                headers = await _sigv4_headers(url, headers, sigv4, ctx.aws)
            async with session.get(yarl.URL(url, encoded=True), headers=headers, ssl=ssl) as resp:
                status, body = resp.status, await resp.read()
    except TimeoutError:
        raise ProviderError(f"prometheus {address}: no answer within {timeout}s") from None
    except (aiohttp.ClientError, ValueError) as e:
        raise ProviderError(f"prometheus {address}: {e}") from None
    data, warnings = _decode(address, status, body)
    return address, data, warnings


def _decode(address: str, status: int, body: bytes) -> tuple[dict[str, Any], list[str]]:
    """The `data` of a Prometheus API answer, as the Go client judges the answer."""
    where = f"prometheus {address}"
    if status // 100 != 2 and status not in _API_ERROR_CODES:
        kind = "server_error" if status >= 500 else "client_error"
        detail = body.decode(errors="replace").strip()[:500]
        raise ProviderError(f"{where}: {kind}: HTTP {status}" + (f": {detail}" if detail else ""))
    try:
        answer = json.loads(body) if body else {}
    except ValueError as e:
        raise ProviderError(f"{where}: bad_response: {e}") from None
    if not isinstance(answer, dict):
        raise ProviderError(f"{where}: bad_response: expected a JSON object")
    if answer.get("status") == "error":
        raise ProviderError(f"{where}: {answer.get('errorType', '')}: {answer.get('error', '')}")
    if status // 100 != 2:
        raise ProviderError(f"{where}: bad_response: inconsistent body for HTTP {status}")
    data = answer.get("data")
    if not isinstance(data, dict):
        raise ProviderError(f"{where}: bad_response: no data in the answer")
    warnings = answer.get("warnings") or []
    return data, [str(w) for w in warnings]


def _sample(where: str, pair: Any) -> float:
    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
        raise ProviderError(f"{where}: bad_response: sample {pair!r} is not [time, value]")
    try:
        return float(pair[1])
    except ValueError:
        raise ProviderError(f"{where}: bad_response: sample value {pair[1]!r}") from None


def _result(address: str, data: dict[str, Any]) -> tuple[float | list[float], str]:
    where = f"prometheus {address}"
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        value = _sample(where, result)
        return value, go_format_float(value)
    if kind == "vector":
        if not isinstance(result, list):
            raise ProviderError(f"{where}: bad_response: vector result is not a list")
        values = [_sample(where, s.get("value")) for s in result if isinstance(s, dict)]
        return values, "[" + ",".join(go_format_float(v) for v in values) + "]"
    raise ProviderError(
        f"{where}: result type {kind!r} is not supported: write a query that returns "
        "an instant vector or a scalar"
    )


async def _oauth2_token(session: aiohttp.ClientSession, cfg: OAuth2Config, ssl: bool) -> str:
    """A client-credentials access token (golang.org/x/oauth2/clientcredentials: credentials
    in a Basic header first, in the form if the server refuses that)."""
    if not (cfg.client_id and cfg.client_secret):
        raise ProviderError("prometheus oauth2: clientId and clientSecret are required")
    assert cfg.token_url is not None
    form = {"grant_type": "client_credentials"}
    if cfg.scopes:
        form["scope"] = " ".join(cfg.scopes)
    pair = f"{quote(cfg.client_id, safe='')}:{quote(cfg.client_secret, safe='')}"
    basic = {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode()}
    attempts: list[tuple[dict[str, str], dict[str, str]]] = [
        (form, basic),
        ({**form, "client_id": cfg.client_id, "client_secret": cfg.client_secret}, {}),
    ]
    problem = ""
    for data, headers in attempts:
        async with session.post(cfg.token_url, data=data, headers=headers, ssl=ssl) as resp:
            text = await resp.text(errors="replace")
            if resp.status // 100 != 2:
                problem = f"HTTP {resp.status}: {text.strip()[:300]}"
                continue
        try:
            token = json.loads(text).get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not token:
            raise ProviderError(f"prometheus oauth2 {cfg.token_url}: no access_token in answer")
        return str(token)
    raise ProviderError(f"prometheus oauth2 {cfg.token_url}: token request refused: {problem}")


async def _sigv4_headers(
    url: str, headers: dict[str, str], cfg: Sigv4Config | None, aws: AwsConfig
) -> dict[str, str]:
    """`headers` plus the SigV4 signature for a GET of `url` (service `aps`)."""
    from botocore.auth import SigV4Auth  # botocore's signing, with the first signed query
    from botocore.awsrequest import AWSRequest

    cfg = cfg or Sigv4Config()
    region = cfg.region or aws.region
    try:
        credentials = await _aws_credentials(cfg, aws)
        request = AWSRequest(method="GET", url=url, headers=headers)
        SigV4Auth(credentials, "aps", region).add_auth(request)
    except (BotoCoreError, ClientError) as e:
        raise ProviderError(f"prometheus sigv4: {e}") from None
    return {k: str(v) for k, v in request.headers.items()}


async def _aws_credentials(cfg: Sigv4Config, aws: AwsConfig) -> Credentials:
    from aiobotocore.session import AioSession
    from botocore.credentials import Credentials

    session: AioSession = AioSession(profile=cfg.profile) if cfg.profile else shared_session()
    if cfg.role_arn:
        async with aws.client("sts", session=session) as sts:
            assumed = await sts.assume_role(RoleArn=cfg.role_arn, RoleSessionName="okra-analysis")
        c = assumed["Credentials"]
        return Credentials(c["AccessKeyId"], c["SecretAccessKey"], c["SessionToken"])
    if aws.access_key_id and aws.secret_access_key and not cfg.profile:
        return Credentials(aws.access_key_id, aws.secret_access_key)
    found = await session.get_credentials()
    if found is None:
        raise ProviderError("prometheus sigv4: no AWS credentials found")
    frozen = await found.get_frozen_credentials()
    if not (frozen.access_key and frozen.secret_key):
        raise ProviderError("prometheus sigv4: no AWS credentials found")
    return Credentials(frozen.access_key, frozen.secret_key, frozen.token)


PROVIDER = PrometheusProvider()
