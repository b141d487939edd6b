"""Provider specs keep Argo Rollouts' YAML, generate a CRD schema that says what a schema can,
and the pure parts of the providers (answer parsing, Go number formatting, JSONPath) behave as
Argo Rollouts' Go code does."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from okra_controllers.analysis.providers import datadog, prometheus, web
from okra_controllers.analysis.providers.base import (
    ProviderError,
    go_format_float,
    go_json,
    go_sprint_float,
)
from okra_controllers.analysis.providers.cloudwatch import metric_data_queries
from okra_controllers.analysis.providers.registry import provider_for
from okra_controllers.api.v1alpha1.providers import (
    CloudWatchMetric,
    DatadogMetric,
    MetricProvider,
    PrometheusMetric,
)
from okra_runtime.crdgen import CRDInfo, openapi_schema

# Provider blocks as Argo Rollouts' documentation writes them (docs/analysis/*.md).
ARGO_PROVIDERS = """
- prometheus:
    address: http://prometheus.example.com:9090
    timeout: 40
    insecure: true
    headers:
    - key: X-Scope-OrgID
      value: tenant_a
    query: |
      sum(irate(istio_requests_total{destination_service=~"{{args.service-name}}"}[5m]))
- prometheus:
    address: https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1
    query: up
    authentication:
      sigv4:
        region: us-east-1
        profile: analysis
        roleArn: arn:aws:iam::123456789012:role/amp
- prometheus:
    address: https://prometheus.example.com
    query: up
    authentication:
      oauth2:
        tokenUrl: https://idp.example.com/token
        clientId: okra
        clientSecret: s3cret
        scopes: [metrics]
- datadog:
    apiVersion: v2
    interval: 5m
    queries:
      a: sum:requests.errors{service:web}.as_count()
      b: sum:requests{service:web}.as_count()
    formula: "moving_rollup(a, 60, 'sum') / b"
    aggregator: sum
    secretRef:
      name: team-datadog
      namespaced: true
- cloudWatch:
    interval: 5m
    metricDataQueries:
    - id: rate
      expression: errors / requests
    - id: errors
      metricStat:
        metric:
          namespace: app
          metricName: errors
          dimensions:
          - name: service
            value: web
        period: 300
        stat: Sum
        unit: Count
      returnData: false
- web:
    method: POST
    url: http://my-server.com/api/v1/measurement?service={{ args.service-name }}
    timeoutSeconds: 20
    headers:
    - key: Content-Type
      value: application/json
    jsonBody:
      key1: value_1
      key2:
        nestedObj: nested value
        key3: [1, 2]
    jsonPath: "{$.data.ok}"
    insecure: true
"""


@pytest.mark.parametrize("raw", yaml.safe_load(ARGO_PROVIDERS), ids=lambda r: next(iter(r)))
def test_argo_rollouts_provider_yaml_round_trips_unchanged(raw: dict[str, Any]) -> None:
    spec = MetricProvider.model_validate(raw)

    assert spec.model_dump(by_alias=True, exclude_none=True) == raw


def test_fields_take_python_names_too() -> None:
    spec = PrometheusMetric(address="http://p:9090", query="up", timeout=5)

    assert spec.model_dump(by_alias=True, exclude_none=True) == {
        "address": "http://p:9090",
        "query": "up",
        "timeout": 5,
    }


def test_datadog_gets_argo_defaults() -> None:
    spec = DatadogMetric.model_validate({"query": "avg:cpu{*}"})

    assert (spec.interval, spec.api_version, spec.aggregator) == ("5m", "v1", None)


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"prometheus": {"adress": "http://p", "query": "up"}}, "prometheus.adress"),
        ({"kayenta": {"address": "http://k"}}, "kayenta"),
        ({"datadog": {"query": "q", "apiVersion": "v3"}}, "datadog.apiVersion"),
        ({"web": {"url": "http://w", "method": "DELETE"}}, "web.method"),
        ({"prometheus": {"address": "http://p"}}, "prometheus.query"),
    ],
)
def test_unknown_or_invalid_fields_are_rejected_by_name(raw: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as err:
        MetricProvider.model_validate(raw)
    assert where in str(err.value)


class _Probe(BaseModel):
    __crd__: ClassVar[CRDInfo] = CRDInfo(
        group="probe.okra.mumo.co", version="v1", kind="Probe", plural="probes"
    )
    spec: MetricProvider


def _rules(node: dict[str, Any]) -> dict[str, str]:
    return {r["message"]: r["rule"] for r in node.get("x-kubernetes-validations", [])}


def test_crd_schema_says_exactly_one_provider_and_keeps_argo_names() -> None:
    spec = openapi_schema(_Probe)["properties"]["spec"]
    props = spec["properties"]

    assert set(props) == {"prometheus", "datadog", "cloudWatch", "web"}
    assert "exactly one of prometheus, datadog, cloudWatch, web must be set" in _rules(spec)
    dd = props["datadog"]["properties"]
    assert dd["interval"]["default"] == "5m"
    assert dd["apiVersion"] == {
        "description": dd["apiVersion"]["description"],
        "type": "string",
        "enum": ["v1", "v2"],
        "default": "v1",
    }
    assert set(props["datadog"]["properties"]["secretRef"]["properties"]) == {"name", "namespaced"}
    assert len(_rules(props["datadog"])) == 5
    cw = props["cloudWatch"]["properties"]["metricDataQueries"]["items"]["properties"]
    assert cw["period"].get("x-kubernetes-int-or-string") is True
    assert cw["metricStat"]["properties"]["period"].get("x-kubernetes-int-or-string") is True
    json_body = props["web"]["properties"]["jsonBody"]
    assert json_body["type"] == "object"
    assert json_body["x-kubernetes-preserve-unknown-fields"] is True
    assert props["prometheus"]["required"] == ["query"]
    assert props["prometheus"]["properties"]["authentication"]["properties"]["sigv4"][
        "properties"
    ].keys() == {"region", "profile", "roleArn"}


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ({"prometheus": {"query": "up"}}, "prometheus"),
        ({"datadog": {"query": "q"}}, "datadog"),
        ({"cloudWatch": {"metricDataQueries": []}}, "cloudwatch"),
        ({"web": {"url": "http://w"}}, "web"),
    ],
)
def test_provider_for_picks_the_one_provider_set(raw: dict[str, Any], kind: str) -> None:
    spec = MetricProvider.model_validate(raw)

    provider, provider_spec = provider_for(spec)

    assert provider.kind == kind
    assert provider_spec is next(v for v in vars(spec).values() if v is not None)


@pytest.mark.parametrize(
    "raw", [{}, {"prometheus": {"query": "up"}, "web": {"url": "http://w"}}], ids=["none", "two"]
)
def test_provider_for_refuses_none_or_several(raw: dict[str, Any]) -> None:
    with pytest.raises(
        ProviderError,
        match="exactly one of prometheus, datadog, cloudWatch, web must be set",
    ):
        provider_for(MetricProvider.model_validate(raw))


# -- Go formatting: expected strings printed by Go 1.26 for the same float64 values ----------

GO_FLOATS = [
    # value, strconv.FormatFloat(v, 'f', -1, 64), fmt %v, json.Marshal
    (0.0, "0", "0", "0"),
    (-0.0, "-0", "-0", "-0"),
    (0.97, "0.97", "0.97", "0.97"),
    (3.0, "3", "3", "3"),
    (123456.0, "123456", "123456", "123456"),
    (1234567.0, "1234567", "1.234567e+06", "1234567"),
    (1e20, "100000000000000000000", "1e+20", "100000000000000000000"),
    (1e21, "1000000000000000000000", "1e+21", "1e+21"),
    (1e-4, "0.0001", "0.0001", "0.0001"),
    (1.5e-5, "0.000015", "1.5e-05", "0.000015"),
    (1e-7, "0.0000001", "1e-07", "1e-7"),
    (1.2345e-7, "0.00000012345", "1.2345e-07", "1.2345e-7"),
    (
        12345678901234567890.0,
        "12345678901234567000",
        "1.2345678901234567e+19",
        "12345678901234567000",
    ),
]


@pytest.mark.parametrize(("value", "fixed", "sprint", "js"), GO_FLOATS)
def test_floats_are_written_as_go_writes_them(
    value: float, fixed: str, sprint: str, js: str
) -> None:
    assert go_format_float(value) == fixed
    assert go_sprint_float(value) == sprint
    assert go_json(value) == js


def test_special_floats_and_json_documents_are_written_as_go_writes_them() -> None:
    assert [go_format_float(v) for v in (math.nan, math.inf, -math.inf)] == ["NaN", "+Inf", "-Inf"]
    assert go_json({"b": 1.0, "a": "<x&y>", "c": [None, True]}) == (
        '{"a":"\\u003cx\\u0026y\\u003e","b":1,"c":[null,true]}'
    )
    with pytest.raises(ProviderError):
        go_json(math.nan)


# -- answers parsed as Argo's Go code parses them --------------------------------------------


def test_prometheus_vector_and_scalar_answers() -> None:
    vector = {
        "resultType": "vector",
        "result": [{"metric": {}, "value": [1, "0.5"]}, None, {"value": [1, "NaN"]}],
    }
    scalar = {"resultType": "scalar", "result": [1, "+Inf"]}

    values, shown = prometheus._result("http://p", vector)
    assert shown == "[0.5,NaN]"
    assert isinstance(values, list)
    assert values[0] == 0.5
    assert math.isnan(values[1])
    assert prometheus._result("http://p", scalar) == (math.inf, "+Inf")
    with pytest.raises(ProviderError, match="'string' is not supported"):
        prometheus._result("http://p", {"resultType": "string", "result": [1, "x"]})


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (
            400,
            b'{"status":"error","errorType":"bad_data","error":"parse error"}',
            "bad_data: parse",
        ),
        (502, b"<html>bad gateway</html>", "server_error: HTTP 502: <html>bad gateway"),
        (404, b"", "client_error: HTTP 404"),
        (200, b"not json", "bad_response"),
        (503, b'{"status":"success","data":{}}', "inconsistent body for HTTP 503"),
    ],
)
def test_prometheus_error_answers_say_what_went_wrong(
    status: int, body: bytes, message: str
) -> None:
    with pytest.raises(ProviderError, match=message):
        prometheus._decode("http://p", status, body)


def test_prometheus_warnings_are_returned() -> None:
    body = b'{"status":"success","data":{"resultType":"scalar","result":[1,"1"]},"warnings":["w"]}'

    assert prometheus._decode("http://p", 200, body)[1] == ["w"]


def test_datadog_v1_reads_the_last_point_of_the_first_series() -> None:
    answer = {"series": [{"pointlist": [[1, 0.2], [2, None]]}, {"pointlist": [[1, 9]]}]}

    # A null point reads as 0, as Go's decoder leaves a float64 it cannot set.
    assert datadog._read_v1("u", answer) == (0.0, "0", {})
    with pytest.raises(ProviderError, match="Datapoint does not have 2 values"):
        datadog._read_v1("u", {"series": [{"pointlist": [[1, 2, 3]]}]})
    with pytest.raises(ProviderError, match="Could not parse JSON body"):
        datadog._read_v1("u", {"series": [{"pointlist": [[1, "x"]]}]})


def test_datadog_v2_reads_the_first_number_column() -> None:
    def answer(*columns: dict[str, Any], errors: str = "") -> dict[str, Any]:
        return {"data": {"attributes": {"columns": list(columns)}, "errors": errors}}

    legacy = {"name": "q", "values": [None, 0.25]}  # no type: numeric, as Argo reads it
    assert datadog._read_v2("u", answer(legacy)) == (0.25, "0.25", {})
    assert datadog._read_v2("u", answer({"type": "number", "values": [None]})) == (
        None,
        "[]",
        {},
    )
    with pytest.raises(ProviderError, match="errors in your query: bad metric"):
        datadog._read_v2("u", answer(errors="bad metric"))
    with pytest.raises(ProviderError, match="could not parse numeric value"):
        datadog._read_v2("u", answer({"type": "number", "values": ["1"]}))
    with pytest.raises(ProviderError, match="could not parse group label at index 1"):
        datadog._read_v2(
            "u",
            answer({"type": "group", "values": [["a"]]}, {"type": "number", "values": [1, 2]}),
        )


def test_datadog_v2_groups_join_tags_and_keep_both_extremes_when_many() -> None:
    two_tags = {
        "data": {
            "attributes": {
                "columns": [
                    {"type": "group", "values": [["eu"], ["us"]]},
                    {"type": "group", "values": [["h1"], ["h2"]]},
                    {"type": "number", "values": [1.5, 3]},
                ]
            }
        }
    }
    many = {
        "data": {
            "attributes": {
                "columns": [
                    {"type": "group", "values": [[f"h{i}"] for i in range(150)]},
                    {"type": "number", "values": [float(i) for i in range(150)]},
                ]
            }
        }
    }

    values, shown, meta = datadog._read_v2("u", two_tags)
    assert (values, shown) == ([1.5, 3.0], "[1.5,3]")
    assert meta == {"groups": '[{"name":"eu,h1","value":1.5},{"name":"us,h2","value":3}]'}
    values, _, meta = datadog._read_v2("u", many)
    assert isinstance(values, list)
    assert len(values) == 150
    assert meta["groups_truncated"] == "true"
    kept = yaml.safe_load(meta["groups"])
    assert [g["value"] for g in kept] == list(range(50)) + list(range(100, 150))


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({}, "set either query or queries"),
        ({"query": "a", "queries": {"a": "b"}}, "not both"),
        ({"queries": {"a": "b"}}, "apiVersion v1 supports only query"),
        ({"apiVersion": "v2", "query": "a", "formula": "a"}, "formula is only valid with queries"),
        ({"apiVersion": "v2", "queries": {"a": "x", "b": "y"}}, "a formula is required"),
        ({"query": "a", "aggregator": "sum"}, "aggregator is not supported in apiVersion v1"),
    ],
)
def test_datadog_template_problems_are_named(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(ProviderError, match=problem):
        datadog._validate(DatadogMetric.model_validate(raw))


def test_datadog_v2_request_names_a_single_query_query() -> None:
    spec = DatadogMetric.model_validate({"apiVersion": "v2", "query": "avg:cpu{*}"})

    body = datadog._v2_body(spec, now=1000, interval=60)

    assert body == {
        "data": {
            "type": "scalar_request",
            "attributes": {
                "from": 940_000,
                "to": 1_000_000,
                "queries": [
                    {
                        "aggregator": "last",
                        "data_source": "metrics",
                        "name": "query",
                        "query": "avg:cpu{*}",
                    }
                ],
                "formulas": [],
            },
        }
    }


def test_cloudwatch_queries_take_getmetricdata_shape() -> None:
    spec = CloudWatchMetric.model_validate(yaml.safe_load(ARGO_PROVIDERS)[4]["cloudWatch"])

    assert metric_data_queries(spec.metric_data_queries) == [
        {"Id": "rate", "Expression": "errors / requests"},
        {
            "Id": "errors",
            "MetricStat": {
                "Metric": {
                    "MetricName": "errors",
                    "Namespace": "app",
                    "Dimensions": [{"Name": "service", "Value": "web"}],
                },
                "Period": 300,
                "Stat": "Sum",
                "Unit": "Count",
            },
            "ReturnData": False,
        },
    ]


DOCUMENT = {"data": {"ok": True, "items": [{"name": "a", "v": 1}, {"name": "b", "v": 2}]}}


@pytest.mark.parametrize(
    ("template", "first"),
    [
        ("{$}", DOCUMENT),
        ("{$.data.ok}", True),
        ("{.data.ok}", True),
        (" { $.data.items[1].v } ", 2),
        ("{.data.items[-1].name}", "b"),
        ('{$.data.items[?(@.name=="b")].v}', 2),
        ("{$.data.items[*].name}", "a"),
        ("{$..v}", 1),
        ("{@.data.ok}", True),
    ],
)
def test_kubernetes_jsonpath_templates_select_like_argo(template: str, first: Any) -> None:
    assert web.compile_jsonpath(template).find(DOCUMENT)[0].value == first


@pytest.mark.parametrize(
    "template", ["$.data.ok", "{.a}{.b}", "value: {.a}", "{data.ok}", "{$.data[}", "{}"]
)
def test_jsonpath_outside_argo_form_is_refused(template: str) -> None:
    with pytest.raises(ProviderError, match="jsonPath"):
        web.compile_jsonpath(template)
