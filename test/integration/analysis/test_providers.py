"""The metric providers against real servers: Debian's Prometheus scraping an exporter the test
controls, moto's CloudWatch, a local Datadog stand-in (Datadog has no emulator) with its keys
in a real Secret, and a local JSON web server. Each test says what Argo Rollouts would hand
the conditions as `result` and store as the measurement's value, and that failures to measure
are ProviderErrors saying what failed. Last, okra's CRD rules for providers on a real
kube-apiserver."""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, ClassVar

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from integration.analysis.promharness import PrometheusServer, first_value
from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
    secret_reader,
)
from okra_controllers.analysis.providers.prometheus import ENV_ADDRESS
from okra_controllers.analysis.providers.registry import provider_for
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_controllers.aws.config import AwsConfig
from okra_runtime.client import Client
from okra_runtime.crdgen import CRDInfo, write_crds
from okra_runtime.errors import InvalidError
from okra_runtime.gvk import GVK
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane

API_KEY, APP_KEY = "dd-api-key-1", "dd-app-key-1"


async def _no_secrets(namespace: str, name: str) -> dict[str, str]:
    raise ProviderError(f"secret {namespace}/{name} not found")


def context(
    aws: AwsConfig | None = None,
    environ: dict[str, str] | None = None,
    *,
    namespace: str = "apps",
    default_namespace: str = "okra-system",
    read_secret: Any = _no_secrets,
) -> ProviderContext:
    return ProviderContext(
        namespace=namespace,
        read_secret=read_secret,
        aws=aws or AwsConfig(),
        default_namespace=default_namespace,
        environ=environ or {},
    )


async def measure(provider: dict[str, Any], ctx: ProviderContext | None = None) -> ProviderResult:
    """Measure as the analysis engine does: parse the YAML-shaped spec, pick the provider."""
    chosen, spec = provider_for(MetricProvider.model_validate(provider))
    return await chosen.measure(spec, ctx or context())


async def serve(app: web.Application) -> TestServer:
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    return server


# -- Prometheus -----------------------------------------------------------------------------


def prom(address: str, query: str, **extra: Any) -> dict[str, Any]:
    return {"prometheus": {"address": address, "query": query, **extra}}


async def test_prometheus_vector_is_a_list_of_floats(prometheus: PrometheusServer) -> None:
    prometheus.set("okra_prov_vec", 0.25, {"pod": "a"})
    prometheus.set("okra_prov_vec", 0.5, {"pod": "b"})
    query = "sort(okra_prov_vec)"
    await prometheus.wait_for("count(okra_prov_vec)", lambda v: v == 2)

    result = await measure(prom(prometheus.address, query))

    assert result.value == [0.25, 0.5]
    assert result.display == "[0.25,0.5]"
    assert result.metric_metadata == {"ResolvedPrometheusQuery": query}
    assert result.metadata == {}
    assert provider_for(MetricProvider.model_validate(prom("x", "q")))[0].kind == "prometheus"


async def test_prometheus_scalar_is_a_float(prometheus: PrometheusServer) -> None:
    prometheus.set("okra_prov_scalar", 0.75)
    await prometheus.wait_for("okra_prov_scalar", lambda v: v == 0.75)

    result = await measure(prom(prometheus.address, "scalar(okra_prov_scalar) * 2"))

    assert result.value == 1.5
    assert result.display == "1.5"


async def test_prometheus_empty_vector_is_an_empty_list(prometheus: PrometheusServer) -> None:
    result = await measure(prom(prometheus.address, "okra_prov_never_exported"))

    assert result.value == []
    assert result.display == "[]"


async def test_prometheus_nan_and_infinity_are_kept(prometheus: PrometheusServer) -> None:
    prometheus.set("okra_prov_nan", math.nan)
    await prometheus.wait_for("okra_prov_nan", lambda v: v is not None and math.isnan(v))

    vector = await measure(prom(prometheus.address, "okra_prov_nan"))
    infinite = await measure(prom(prometheus.address, "scalar(vector(1)) / 0"))

    assert len(vector.value) == 1
    assert math.isnan(vector.value[0])
    assert vector.display == "[NaN]"
    assert infinite.value == math.inf
    assert infinite.display == "+Inf"


async def test_prometheus_address_falls_back_to_argo_environment_variable(
    prometheus: PrometheusServer,
) -> None:
    spec = {"prometheus": {"query": "scalar(vector(3))"}}

    result = await measure(spec, context(environ={ENV_ADDRESS: prometheus.address}))

    assert result.value == 3.0
    with pytest.raises(ProviderError, match=ENV_ADDRESS):
        await measure(spec)


async def test_prometheus_query_error_carries_prometheus_message(
    prometheus: PrometheusServer,
) -> None:
    with pytest.raises(ProviderError) as err:
        await measure(prom(prometheus.address, "sum(okra_prov_vec"))

    message = str(err.value)
    assert prometheus.address in message
    assert "bad_data" in message
    assert "parse error" in message


async def test_prometheus_range_vector_is_not_supported(prometheus: PrometheusServer) -> None:
    with pytest.raises(ProviderError, match="result type 'matrix' is not supported"):
        await measure(prom(prometheus.address, "okra_prov_vec[1m]"))


async def _gate(
    handler: Any, prometheus: PrometheusServer, path: str = "/api/v1/query"
) -> TestServer:
    app = web.Application()
    app.router.add_get(path, handler)
    return await serve(app)


async def _forward(prometheus: PrometheusServer, request: web.Request) -> web.Response:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{prometheus.address}/api/v1/query", params=request.query) as resp,
    ):
        return web.Response(
            status=resp.status, body=await resp.read(), content_type="application/json"
        )


async def test_prometheus_oauth2_token_and_headers_reach_the_server(
    prometheus: PrometheusServer,
) -> None:
    """A gate in front of the real Prometheus lets a query through only with the tenant header
    and a Bearer token it issued for the client credentials."""
    issued: list[dict[str, str]] = []

    async def token(request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        issued.append(form)
        if request.headers.get("Authorization") != "Basic b2tyYTpzM2NyZXQ=":  # okra:s3cret
            return web.json_response({"error": "invalid_client"}, status=401)
        return web.json_response({"access_token": "tok-1", "token_type": "bearer"})

    async def query(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bearer tok-1":
            return web.Response(status=401, text="no token")
        if request.headers.get("X-Scope-OrgID") != "tenant-a":
            return web.Response(status=403, text="no tenant")
        return await _forward(prometheus, request)

    app = web.Application()
    app.router.add_post("/token", token)
    app.router.add_get("/api/v1/query", query)
    server = await serve(app)
    try:
        base = str(server.make_url("")).rstrip("/")
        spec = prom(
            base,
            "scalar(vector(7))",
            headers=[{"key": "X-Scope-OrgID", "value": "tenant-a"}],
            authentication={
                "oauth2": {
                    "tokenUrl": f"{base}/token",
                    "clientId": "okra",
                    "clientSecret": "s3cret",
                    "scopes": ["metrics.read", "metrics.list"],
                }
            },
        )
        result = await measure(spec)
        assert result.value == 7.0
        assert issued == [
            {"grant_type": "client_credentials", "scope": "metrics.read metrics.list"}
        ]

        spec["prometheus"]["authentication"]["oauth2"]["clientSecret"] = "wrong"
        with pytest.raises(ProviderError, match="token request refused"):
            await measure(spec)
    finally:
        await server.close()


def _signature_is_valid(request: web.Request, secret_key: str) -> bool:
    """Recompute the request's SigV4 signature with botocore, as AWS would."""
    auth_header = request.headers["Authorization"]
    fields = dict(part.strip().split("=", 1) for part in auth_header.split(" ", 1)[1].split(","))
    access_key, _date, region, service, _ = fields["Credential"].split("/")
    signed = fields["SignedHeaders"].split(";")
    replay = AWSRequest(
        method=request.method,
        url=str(request.url),
        headers={h: request.headers[h] for h in signed if h != "host"},
    )
    replay.context["timestamp"] = request.headers["X-Amz-Date"]
    signer = SigV4Auth(
        Credentials(access_key, secret_key, request.headers.get("X-Amz-Security-Token")),
        service,
        region,
    )
    signer._modify_request_before_signing(replay)  # type: ignore[attr-defined]
    canonical = signer.canonical_request(replay)
    expected = signer.signature(signer.string_to_sign(replay, canonical), replay)
    return service == "aps" and expected == fields["Signature"]


async def test_prometheus_sigv4_signs_amazon_managed_prometheus_requests(
    prometheus: PrometheusServer, moto: MotoServer
) -> None:
    """An address naming aps-workspaces is signed for service aps: with okra's own keys, or
    with keys from sts:AssumeRole when roleArn is set (moto's STS)."""
    seen: list[tuple[str, bool]] = []

    async def query(request: web.Request) -> web.Response:
        credential = request.headers.get("Authorization", "").split("Credential=")[-1]
        access_key = credential.split("/")[0]
        if access_key == "testing" and not _signature_is_valid(request, "testing"):
            return web.Response(status=403, text="bad signature")
        seen.append((access_key, "X-Amz-Security-Token" in request.headers))
        return await _forward(prometheus, request)

    server = await _gate(query, prometheus, "/workspaces/aps-workspaces/ws-1/api/v1/query")
    try:
        address = str(server.make_url("/workspaces/aps-workspaces/ws-1"))
        ctx = context(moto.config)
        own = await measure(
            prom(address, "scalar(vector(2))", authentication={"sigv4": {"region": "eu-west-1"}}),
            ctx,
        )
        assumed = await measure(
            prom(
                address,
                "scalar(vector(4))",
                authentication={"sigv4": {"roleArn": "arn:aws:iam::123456789012:role/amp-query"}},
            ),
            ctx,
        )
        assert (own.value, assumed.value) == (2.0, 4.0)
        assert seen[0] == ("testing", False)
        assert seen[1][0] != "testing"
        assert seen[1][1]
    finally:
        await server.close()


async def test_prometheus_timeout_is_a_provider_error(prometheus: PrometheusServer) -> None:
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return await _forward(prometheus, request)

    server = await _gate(slow, prometheus)
    try:
        started = time.monotonic()
        with pytest.raises(ProviderError, match="no answer within 1s"):
            await measure(prom(str(server.make_url("")), "up", timeout=1))
        assert time.monotonic() - started < 2.5
    finally:
        await server.close()


async def test_prometheus_outage_is_a_provider_error_until_it_is_back(
    prometheus: PrometheusServer,
) -> None:
    prometheus.set("okra_prov_outage", 1.0)
    await prometheus.wait_for("okra_prov_outage", lambda v: v == 1.0)
    prometheus.stop()
    try:
        with pytest.raises(ProviderError) as err:
            await measure(prom(prometheus.address, "okra_prov_outage"))
        assert str(err.value).startswith(f"prometheus {prometheus.address}: ")
    finally:
        prometheus.start()
    data = await prometheus.wait_for("okra_prov_outage", lambda v: v == 1.0)
    assert first_value(data) == 1.0
    assert (await measure(prom(prometheus.address, "okra_prov_outage"))).value == [1.0]


# -- Datadog --------------------------------------------------------------------------------


class FakeDatadog:
    """The two Datadog query endpoints okra calls, answering what the test sets and keeping
    every request; 403 unless the API and application keys match."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.v1_answer: dict[str, Any] = {"series": []}
        self.v2_answer: dict[str, Any] = {"data": {"attributes": {"columns": []}}}
        self.app = web.Application()
        self.app.router.add_get("/api/v1/query", self.v1)
        self.app.router.add_post("/api/v2/query/scalar", self.v2)

    def _authorized(self, request: web.Request) -> bool:
        return (
            request.headers.get("DD-API-KEY") == API_KEY
            and request.headers.get("DD-APPLICATION-KEY") == APP_KEY
        )

    async def v1(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"errors": ["Forbidden"]}, status=403)
        self.requests.append({"path": request.path, **request.query})
        return web.json_response(self.v1_answer)

    async def v2(self, request: web.Request) -> web.Response:
        if not self._authorized(request):
            return web.json_response({"errors": ["Forbidden"]}, status=403)
        self.requests.append({"path": request.path, "body": await request.json()})
        return web.json_response(self.v2_answer)


@pytest.fixture
async def datadog() -> AsyncIterator[tuple[FakeDatadog, str]]:
    fake = FakeDatadog()
    server = await serve(fake.app)
    yield fake, str(server.make_url("")).rstrip("/")
    await server.close()


async def _secret(client: Client, namespace: str, name: str, data: dict[str, str]) -> None:
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "stringData": data,
        }
    )


async def test_datadog_v1_reads_the_last_point_with_keys_from_the_default_secret(
    datadog: tuple[FakeDatadog, str], rt_client: Client, namespace: str
) -> None:
    fake, address = datadog
    await _secret(
        rt_client,
        namespace,
        "datadog",
        {"api-key": API_KEY, "app-key": APP_KEY, "address": address},
    )
    fake.v1_answer = {"series": [{"pointlist": [[1700000000000, 0.5], [1700000060000, 0.007]]}]}
    ctx = context(default_namespace=namespace, read_secret=secret_reader(rt_client))
    before = int(time.time())

    result = await measure({"datadog": {"interval": "10m", "query": "sum:errors{*}"}}, ctx)

    assert (result.value, result.display) == (0.007, "0.007")
    assert result.metadata["httpStatusCode"] == "200"
    [request] = fake.requests
    assert request["path"] == "/api/v1/query"
    assert request["query"] == "sum:errors{*}"
    assert int(request["to"]) - int(request["from"]) == 600
    assert before <= int(request["to"]) <= time.time()


async def test_datadog_v1_without_data_is_none_with_keys_from_the_environment(
    datadog: tuple[FakeDatadog, str],
) -> None:
    """Argo's DD_API_KEY / DD_APP_KEY / DD_ADDRESS (all three set) replace the Secret."""
    fake, address = datadog
    env = context(environ={"DD_API_KEY": API_KEY, "DD_APP_KEY": APP_KEY, "DD_ADDRESS": address})
    spec = {"datadog": {"query": "sum:errors{*}"}}

    fake.v1_answer = {"series": []}
    empty = await measure(spec, env)
    fake.v1_answer = {"series": [{"pointlist": []}]}
    no_points = await measure(spec, env)
    fake.v1_answer = {}
    no_series = await measure(spec, env)

    assert (empty.value, empty.display) == (None, "[]")
    assert (no_points.value, no_points.display) == (None, '[{"pointlist":[]}]')
    assert (no_series.value, no_series.display) == (None, "null")
    assert len(fake.requests) == 3


async def test_datadog_v2_formula_with_a_namespaced_secret(
    datadog: tuple[FakeDatadog, str], rt_client: Client, namespace: str
) -> None:
    fake, address = datadog
    await _secret(
        rt_client,
        namespace,
        "team-datadog",
        {"api-key": API_KEY, "app-key": APP_KEY, "address": address},
    )
    fake.v2_answer = {
        "data": {
            "type": "scalar_response",
            "attributes": {
                "columns": [{"name": "a / b", "type": "number", "values": [None, 0.012]}]
            },
        }
    }
    ctx = context(
        namespace=namespace,
        default_namespace="okra-system-without-secrets",
        read_secret=secret_reader(rt_client),
    )
    spec = {
        "datadog": {
            "apiVersion": "v2",
            "interval": "5m",
            "queries": {"a": "sum:errors{*}.as_count()", "b": "sum:hits{*}.as_count()"},
            "formula": "a / b",
            "secretRef": {"name": "team-datadog", "namespaced": True},
        }
    }

    result = await measure(spec, ctx)

    assert (result.value, result.display) == (0.012, "0.012")
    [request] = fake.requests
    attributes = request["body"]["data"]["attributes"]
    assert request["body"]["data"]["type"] == "scalar_request"
    assert attributes["to"] - attributes["from"] == 300_000  # milliseconds
    assert attributes["formulas"] == [{"formula": "a / b"}]
    assert sorted(attributes["queries"], key=lambda q: q["name"]) == [
        {
            "aggregator": "last",
            "data_source": "metrics",
            "name": "a",
            "query": "sum:errors{*}.as_count()",
        },
        {
            "aggregator": "last",
            "data_source": "metrics",
            "name": "b",
            "query": "sum:hits{*}.as_count()",
        },
    ]

    # The same secretRef without `namespaced` is looked up in okra's namespace, where it is not.
    spec["datadog"]["secretRef"] = {"name": "team-datadog"}
    with pytest.raises(ProviderError, match="okra-system-without-secrets/team-datadog not found"):
        await measure(spec, ctx)


async def test_datadog_v2_grouped_query_is_a_list_with_group_metadata(
    datadog: tuple[FakeDatadog, str],
) -> None:
    fake, address = datadog
    fake.v2_answer = {
        "data": {
            "attributes": {
                "columns": [
                    {"name": "region", "type": "group", "values": [["eu"], ["us"], ["ap"]]},
                    {"name": "query", "type": "number", "values": [0.5, None, 2]},
                ]
            }
        }
    }
    env = {"DD_API_KEY": API_KEY, "DD_APP_KEY": APP_KEY, "DD_ADDRESS": address}
    spec = {
        "datadog": {"apiVersion": "v2", "query": "avg:latency{*} by {region}", "aggregator": "max"}
    }

    result = await measure(spec, context(environ=env))

    assert (result.value, result.display) == ([0.5, 2.0], "[0.5,2]")
    assert json.loads(result.metadata["groups"]) == [
        {"name": "eu", "value": 0.5},
        {"name": "ap", "value": 2},
    ]
    assert fake.requests[0]["body"]["data"]["attributes"]["queries"][0]["aggregator"] == "max"

    fake.v2_answer = {"data": {"attributes": {"columns": []}}}
    empty = await measure(spec, context(environ=env))
    assert (empty.value, empty.display) == (None, "[]")


async def test_datadog_wrong_keys_missing_secret_and_bad_template_are_errors(
    datadog: tuple[FakeDatadog, str], rt_client: Client, namespace: str
) -> None:
    _, address = datadog
    ctx = context(default_namespace=namespace, read_secret=secret_reader(rt_client))
    spec = {"datadog": {"query": "sum:errors{*}"}}

    with pytest.raises(ProviderError, match=f"secret {namespace}/datadog not found"):
        await measure(spec, ctx)

    await _secret(
        rt_client,
        namespace,
        "datadog",
        {"api-key": "wrong", "app-key": APP_KEY, "address": address},
    )
    with pytest.raises(ProviderError, match="authentication error response code: 403"):
        await measure(spec, ctx)

    v1_with_queries = {"datadog": {"queries": {"a": "sum:x{*}"}}}
    with pytest.raises(ProviderError, match="apiVersion v1 supports only query"):
        await measure(v1_with_queries, ctx)


# -- CloudWatch -----------------------------------------------------------------------------


async def test_cloudwatch_returns_metric_data_results(moto: MotoServer) -> None:
    now = datetime.datetime.now(datetime.UTC)
    dimensions = [{"Name": "LoadBalancer", "Value": "app/web/0123"}]
    async with moto.config.client("cloudwatch") as cw:
        await cw.put_metric_data(
            Namespace="AWS/ApplicationELB",
            MetricData=[
                {
                    "MetricName": "HTTPCode_Target_5XX_Count",
                    "Dimensions": dimensions,
                    "Timestamp": now - datetime.timedelta(seconds=s),
                    "Value": v,
                    "Unit": "Count",
                }
                for s, v in ((90, 2.0), (60, 3.0), (30, 5.0))
            ],
        )
    spec = {
        "cloudWatch": {
            "interval": "10m",
            "metricDataQueries": [
                {
                    "id": "errors",
                    "label": "5xx",
                    "metricStat": {
                        "metric": {
                            "namespace": "AWS/ApplicationELB",
                            "metricName": "HTTPCode_Target_5XX_Count",
                            "dimensions": [{"name": "LoadBalancer", "value": "app/web/0123"}],
                        },
                        "period": "600",
                        "stat": "Sum",
                    },
                }
            ],
        }
    }

    result = await measure(spec, context(moto.config))

    [data] = result.value
    assert data["Id"] == "errors"
    assert data["Label"] == "5xx"
    assert data["Values"] == [10.0]
    assert data["StatusCode"] == "Complete"
    assert len(data["Timestamps"]) == 1
    assert result.display == "[[10]]"


async def test_cloudwatch_rejected_query_is_a_provider_error(moto: MotoServer) -> None:
    spec = {
        "cloudWatch": {
            "metricDataQueries": [
                {"id": "q", "metricStat": {"metric": {"metricName": "X"}, "stat": "Sum"}}
            ]
        }
    }  # no period: GetMetricData refuses it, as AWS does for Argo

    with pytest.raises(ProviderError, match="cloudwatch GetMetricData in us-east-1"):
        await measure(spec, context(moto.config))
    with pytest.raises(ProviderError, match="cloudwatch: interval"):
        await measure({"cloudWatch": {**spec["cloudWatch"], "interval": "5 minutes"}})


# -- web ------------------------------------------------------------------------------------


@pytest.fixture
async def web_server() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def status(request: web.Request) -> web.Response:
        seen.append({"method": request.method, "headers": dict(request.headers)})
        return web.json_response(
            {
                "data": {
                    "ok": True,
                    "rate": 0.97,
                    "count": 3,
                    "checks": [{"name": "db", "pass": 1}, {"name": "api", "pass": 0}],
                    "html": "<b>&</b>",
                }
            }
        )

    async def echo(request: web.Request) -> web.Response:
        seen.append(
            {
                "method": request.method,
                "content_type": request.content_type,
                "body": await request.text(),
            }
        )
        return web.json_response({"received": await request.json(), "status": "accepted"})

    async def text(request: web.Request) -> web.Response:
        return web.Response(text="all good")

    async def broken(request: web.Request) -> web.Response:
        return web.json_response({"error": "down"}, status=503)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return web.json_response({})

    app = web.Application()
    app.router.add_get("/status", status)
    app.router.add_post("/echo", echo)
    app.router.add_put("/echo", echo)
    app.router.add_get("/text", text)
    app.router.add_get("/broken", broken)
    app.router.add_get("/slow", slow)
    server = await serve(app)
    yield str(server.make_url("")).rstrip("/"), seen
    await server.close()


@pytest.mark.parametrize(
    ("json_path", "value", "display"),
    [
        ("{$.data.ok}", True, "true"),
        ("{.data.rate}", 0.97, "0.97"),
        ("{$.data.count}", 3.0, "3"),  # a Go float64, written as Go writes it
        ('{$.data.checks[?(@.name=="api")].pass}', 0.0, "0"),
        ("{$.data.checks[*].name}", "db", '"db"'),  # the first match, as Argo takes it
        ("{$.data.html}", "<b>&</b>", '"\\u003cb\\u003e\\u0026\\u003c/b\\u003e"'),
        (None, None, None),  # default {$}: the whole document
    ],
)
async def test_web_get_selects_the_json_path_value(
    web_server: tuple[str, list[dict[str, Any]]],
    json_path: str | None,
    value: Any,
    display: str | None,
) -> None:
    base, seen = web_server
    spec: dict[str, Any] = {
        "url": f"{base}/status",
        "headers": [{"key": "Authorization", "value": "Bearer t0k"}],
    }
    if json_path is not None:
        spec["jsonPath"] = json_path

    result = await measure({"web": spec})

    if json_path is None:
        assert result.value["data"]["count"] == 3.0
        assert result.display.startswith('{"data":{"checks":[{"name":"db","pass":1}')
    else:
        assert result.value == value
        assert type(result.value) is type(value)
        assert result.display == display
    assert not result.assume_successful
    assert seen[0]["method"] == "GET"
    assert seen[0]["headers"]["Authorization"] == "Bearer t0k"


async def test_web_post_json_body_and_put_text_body(
    web_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base, seen = web_server

    posted = await measure(
        {
            "web": {
                "method": "POST",
                "url": f"{base}/echo",
                "jsonBody": {"service": "checkout", "window": 5},
                "jsonPath": "{$.received.service}",
            }
        }
    )
    put = await measure(
        {
            "web": {
                "method": "PUT",
                "url": f"{base}/echo",
                "body": '{"n": 1}',
                "jsonPath": "{$.status}",
            }
        }
    )

    assert (posted.value, posted.display) == ("checkout", '"checkout"')
    assert seen[0]["method"] == "POST"
    assert seen[0]["content_type"] == "application/json"
    assert json.loads(seen[0]["body"]) == {"service": "checkout", "window": 5}
    assert put.value == "accepted"
    assert seen[1]["method"] == "PUT"
    assert seen[1]["body"] == '{"n": 1}'


async def test_web_answer_that_is_not_json_is_successful_text(
    web_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base, _ = web_server

    result = await measure({"web": {"url": f"{base}/text", "jsonPath": "{$.data.ok}"}})

    assert (result.value, result.display, result.assume_successful) == (
        "all good",
        "all good",
        True,
    )


async def test_web_failures_are_provider_errors(
    web_server: tuple[str, list[dict[str, Any]]],
) -> None:
    base, _ = web_server

    with pytest.raises(ProviderError, match="received non 2xx response code: 503"):
        await measure({"web": {"url": f"{base}/broken"}})
    with pytest.raises(ProviderError, match="Could not find JSONPath"):
        await measure({"web": {"url": f"{base}/status", "jsonPath": "{$.data.missing}"}})
    with pytest.raises(ProviderError, match="no answer within 1s"):
        await measure({"web": {"url": f"{base}/slow", "timeoutSeconds": 1}})
    with pytest.raises(ProviderError, match="only be used with method POST or PUT"):
        await measure({"web": {"url": f"{base}/echo", "jsonBody": {"a": 1}}})
    with pytest.raises(ProviderError, match=r"web GET http://127\.0\.0\.1:1/x"):
        await measure({"web": {"url": "http://127.0.0.1:1/x"}})


# -- the CRD rules on a real API server -----------------------------------------------------

PROBE_GROUP = "providers.test.okra.mumo.co"


class ProviderProbe(BaseModel):
    """A resource whose spec is a MetricProvider, to exercise its generated schema."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    __crd__: ClassVar[CRDInfo] = CRDInfo(
        group=PROBE_GROUP, version="v1", kind="ProviderProbe", plural="providerprobes"
    )
    spec: MetricProvider


PROBE = GVK(PROBE_GROUP, "v1", "ProviderProbe")


@pytest.fixture(scope="module")
def probe_crd(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    [path] = write_crds([ProviderProbe], tmp_path_factory.mktemp("crds"))
    [name] = control_plane.install_crds([path])
    yield path
    control_plane.kubectl("delete", "crd", name, "--wait=false", check=False)


def _probe(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{PROBE_GROUP}/v1",
        "kind": "ProviderProbe",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def test_crd_accepts_argo_shaped_providers_and_fills_argo_defaults(
    control_plane: ControlPlane, probe_crd: Path, rt_client: Client, namespace: str
) -> None:
    applied = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-f", str(probe_crd)
    )
    assert "arning" not in applied.stderr, applied.stderr  # no CEL cost or schema warnings

    created = await rt_client.create(
        _probe("dd", namespace, {"datadog": {"query": "avg:cpu{*}", "secretRef": {"name": "x"}}})
    )
    web_ok = await rt_client.create(
        _probe(
            "web",
            namespace,
            {"web": {"method": "POST", "url": "http://x", "jsonBody": {"a": [1, {"b": None}]}}},
        )
    )

    assert created["spec"]["datadog"]["interval"] == "5m"
    assert created["spec"]["datadog"]["apiVersion"] == "v1"
    assert web_ok["spec"]["web"]["jsonBody"] == {"a": [1, {"b": None}]}
    assert MetricProvider.model_validate(created["spec"]).datadog is not None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({}, "exactly one of prometheus, datadog, cloudWatch, web must be set"),
        (
            {"prometheus": {"query": "up"}, "web": {"url": "http://x"}},
            "exactly one of prometheus, datadog, cloudWatch, web must be set",
        ),
        (
            {"datadog": {"query": "a", "queries": {"a": "b"}}},
            "datadog: set exactly one of query or queries",
        ),
        (
            {"datadog": {"apiVersion": "v2", "queries": {"a": "x", "b": "y"}}},
            "with more than one query a formula is required",
        ),
        (
            {"datadog": {"queries": {"a": "x"}}},
            "apiVersion v1 supports only query",
        ),
        (
            {"datadog": {"query": "x", "secretRef": {"namespaced": True}}},
            "secretRef.namespaced requires secretRef.name",
        ),
        ({"web": {"url": "http://x", "body": "{}"}}, "body and jsonBody need method POST or PUT"),
        ({"prometheus": {"query": "up", "timeout": 0}}, "spec.prometheus.timeout"),
        # A provider okra does not implement is pruned as an unknown field, leaving none.
        (
            {"kayenta": {"address": "http://x"}},
            "exactly one of prometheus, datadog, cloudWatch, web must be set",
        ),
    ],
)
async def test_crd_rejects_invalid_providers_with_a_clear_message(
    probe_crd: Path,
    rt_client: Client,
    namespace: str,
    spec: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(InvalidError) as err:
        await rt_client.create(_probe("bad", namespace, spec))
    assert message in err.value.message
