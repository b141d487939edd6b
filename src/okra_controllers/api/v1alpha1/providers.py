"""Metric provider specs: where one analysis metric gets its measurement.

Why these shapes: okra runs Argo Rollouts-compatible analysis itself, and templates written for
Argo Rollouts must work unchanged, so every field keeps Argo Rollouts' YAML name, type and
default (`pkg/apis/rollouts/v1alpha1/analysis_types.go`). okra implements four of Argo's
providers: `prometheus`, `datadog`, `cloudWatch` and `web`; a template naming any other one is
rejected (`extra="forbid"`) rather than silently never measured.

What a schema can say is said here as CEL rules, so the API server rejects a broken provider
when the template is written. Argo Rollouts' own CRD cannot say these, so its controller only
finds out while measuring; okra's providers repeat the same checks at measurement time, for
`argoproj.io` templates that reach okra without them. Pydantic does not enforce the CEL rules,
so reading an object never fails on them: the provider reports the problem as a measurement
error, as Argo Rollouts does.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "CloudWatchMetric",
    "CloudWatchMetricDataQuery",
    "CloudWatchMetricStat",
    "CloudWatchMetricStatMetric",
    "CloudWatchMetricStatMetricDimension",
    "DatadogMetric",
    "DatadogSecretRef",
    "MetricProvider",
    "OAuth2Config",
    "PrometheusAuth",
    "PrometheusMetric",
    "Sigv4Config",
    "WebMetric",
    "WebMetricHeader",
]

DatadogAggregator = Literal[
    "avg", "min", "max", "sum", "last", "percentile", "mean", "l2norm", "area"
]


def _config(*rules: tuple[str, str]) -> ConfigDict:
    """camelCase YAML names, unknown fields rejected, and the model's CEL rules."""
    config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
    if rules:
        config["json_schema_extra"] = {
            "x-kubernetes-validations": [{"rule": r, "message": m} for r, m in rules]
        }
    return config


class WebMetricHeader(BaseModel):
    """An HTTP header sent with every request."""

    model_config = _config()
    key: str
    value: str


class Sigv4Config(BaseModel):
    """SigV4 signing for Amazon Managed Prometheus (used for an aps-workspaces address)."""

    model_config = _config()
    region: str | None = None
    """AWS region of the workspace (default: okra's region)."""
    profile: str | None = None
    """Shared-config profile whose credentials sign the request."""
    role_arn: str | None = None
    """IAM role assumed (sts:AssumeRole) to sign the request."""


class OAuth2Config(BaseModel):
    """OAuth2 client credentials: a token from tokenUrl is sent as a Bearer token."""

    model_config = _config()
    token_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = None
    scopes: list[str] | None = None


class PrometheusAuth(BaseModel):
    """How okra authenticates to Prometheus."""

    model_config = _config()
    sigv4: Sigv4Config | None = None
    oauth2: OAuth2Config | None = None


class PrometheusMetric(BaseModel):
    """An instant PromQL query; result is a list of floats (vector) or a float (scalar)."""

    model_config = _config()
    address: str | None = None
    """Base URL, e.g. http://prometheus:9090 (default: env ARGO_ROLLOUTS_PROMETHEUS_ADDRESS)."""
    query: str
    """The PromQL query; {{args.NAME}} is replaced before it is sent."""
    authentication: PrometheusAuth | None = None
    timeout: int | None = Field(default=None, ge=1)
    """Seconds to wait for an answer (default: 30)."""
    insecure: bool | None = None
    """Skip TLS certificate verification."""
    headers: list[WebMetricHeader] | None = None
    """Extra HTTP headers, e.g. X-Scope-OrgID for a multi-tenant Cortex or Mimir."""


class DatadogSecretRef(BaseModel):
    """The Secret holding api-key, app-key and optionally address."""

    model_config = _config()
    name: str | None = None
    """Secret name (default: the Secret named datadog in okra's namespace)."""
    namespaced: bool | None = None
    """Read the Secret in the analysis' namespace instead of okra's (requires name)."""


class DatadogMetric(BaseModel):
    """A Datadog metrics query; result is its last value, or null when Datadog has no data."""

    model_config = _config(
        (
            "has(self.query) != has(self.queries)",
            "datadog: set exactly one of query or queries",
        ),
        (
            "!has(self.formula) || has(self.queries)",
            "datadog: formula is only valid with queries",
        ),
        (
            "has(self.formula) || !has(self.queries) || size(self.queries) <= 1",
            "datadog: with more than one query a formula is required",
        ),
        (
            "!has(self.apiVersion) || self.apiVersion != 'v1' || "
            "(has(self.query) && !has(self.aggregator))",
            "datadog: apiVersion v1 supports only query, without aggregator; "
            "use apiVersion v2 for queries, formula and aggregator",
        ),
        (
            "!has(self.secretRef) || !has(self.secretRef.namespaced) || "
            "!self.secretRef.namespaced || has(self.secretRef.name)",
            "datadog: secretRef.namespaced requires secretRef.name",
        ),
    )
    interval: str = "5m"
    """Time window the query covers, ending now (a Go duration such as 5m or 1h)."""
    query: str | None = None
    queries: dict[str, str] | None = None
    """Named queries for a v2 formula, e.g. {a: sum:errors{*}, b: sum:hits{*}}."""
    formula: str | None = None
    """How the named queries combine, e.g. a / b (v2 only)."""
    api_version: Literal["v1", "v2"] = "v1"
    """Datadog API version (v1 is being retired by Datadog; prefer v2)."""
    aggregator: DatadogAggregator | None = None
    """How a v2 query reduces its series to one value (default: last)."""
    secret_ref: DatadogSecretRef | None = None


class CloudWatchMetricStatMetricDimension(BaseModel):
    model_config = _config()
    name: str | None = None
    value: str | None = None


class CloudWatchMetricStatMetric(BaseModel):
    model_config = _config()
    dimensions: list[CloudWatchMetricStatMetricDimension] | None = None
    metric_name: str | None = None
    namespace: str | None = None


class CloudWatchMetricStat(BaseModel):
    """A single CloudWatch metric and the statistic to take of it."""

    model_config = _config()
    metric: CloudWatchMetricStatMetric | None = None
    period: int | str | None = None
    """Seconds per data point."""
    stat: str | None = None
    """Average, Sum, Maximum, p99, ..."""
    unit: str | None = None


class CloudWatchMetricDataQuery(BaseModel):
    """One GetMetricData query: a metric with a statistic, or a metric math expression."""

    model_config = _config()
    id: str | None = None
    expression: str | None = None
    label: str | None = None
    metric_stat: CloudWatchMetricStat | None = None
    period: int | str | None = None
    return_data: bool | None = None


class CloudWatchMetric(BaseModel):
    """A CloudWatch GetMetricData call; result is the list of MetricDataResults."""

    model_config = _config()
    interval: str | None = None
    """Time window queried, ending now (a Go duration; default 5m)."""
    metric_data_queries: list[CloudWatchMetricDataQuery]


class WebMetric(BaseModel):
    """An HTTP request whose JSON answer, at `jsonPath`, is the result."""

    model_config = _config(
        (
            "!(has(self.body) && has(self.jsonBody))",
            "web: set body or jsonBody, not both",
        ),
        (
            "!(has(self.body) || has(self.jsonBody)) || (has(self.method) && self.method != 'GET')",
            "web: body and jsonBody need method POST or PUT",
        ),
    )
    method: Literal["GET", "POST", "PUT"] | None = None
    """HTTP method (default GET)."""
    url: str
    headers: list[WebMetricHeader] | None = None
    body: str | None = None
    """Request body as text (POST or PUT)."""
    timeout_seconds: int | None = None
    """Seconds to wait for an answer (default 10)."""
    json_path: str | None = None
    """Kubernetes JSONPath of the result, e.g. {$.data.ok} (default {$}: the whole answer)."""
    insecure: bool | None = None
    """Skip TLS certificate verification."""
    json_body: dict[str, Any] | None = None
    """Request body as JSON (POST or PUT); sent with Content-Type: application/json."""


class MetricProvider(BaseModel):
    """Where a metric's measurement comes from: exactly one provider."""

    model_config = _config(
        (
            "[has(self.prometheus), has(self.datadog), has(self.cloudWatch), has(self.web)]"
            ".filter(x, x).size() == 1",
            "exactly one of prometheus, datadog, cloudWatch, web must be set",
        ),
    )
    prometheus: PrometheusMetric | None = None
    datadog: DatadogMetric | None = None
    cloud_watch: CloudWatchMetric | None = None
    web: WebMetric | None = None
