"""The Datadog provider: v1 `/api/v1/query` or v2 `/api/v2/query/scalar`, as Argo Rollouts
calls them (`metricproviders/datadog/datadog.go`).

Datadog has no emulator, so behaving exactly like Argo is the contract: the same requests
(v1: `from`/`to` in seconds; v2: milliseconds, `queries` named for a `formula`, aggregator
`last` unless set), the same reading of the answer (v1: the last point of the first series,
a null point reading as 0 as Go decodes it; v2: the first number column, nulls skipped, a
list when the query is grouped `by {tag}`), `result` None when Datadog has no data, and the
same search for credentials: `secretRef` if set (in the analysis' namespace when
`namespaced`, else okra's), otherwise DD_API_KEY / DD_APP_KEY / DD_ADDRESS from the
environment, then the `datadog` Secret in okra's namespace.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
    go_format_float,
    go_json,
)
from okra_controllers.api.v1alpha1.providers import DatadogMetric

__all__ = ["DEFAULT_ADDRESS", "PROVIDER", "SECRET_NAME", "DatadogProvider"]

DEFAULT_ADDRESS = "https://api.datadoghq.com"
SECRET_NAME = "datadog"
API_KEY, APP_KEY, ADDRESS = "api-key", "app-key", "address"
REQUEST_TIMEOUT = 10.0
MAX_GROUPS_IN_METADATA = 100


class DatadogProvider:
    kind = "datadog"

    async def measure(self, spec: DatadogMetric, ctx: ProviderContext) -> ProviderResult:
        address, api_key, app_key = await _credentials(spec, ctx)
        _validate(spec)
        try:
            interval = int(parse_duration(spec.interval))
        except ValueError as e:
            raise ProviderError(f"datadog: interval: {e}") from None
        endpoint = address or DEFAULT_ADDRESS
        now = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "DD-API-KEY": api_key,
            "DD-APPLICATION-KEY": app_key,
        }
        if spec.api_version == "v1":
            url = f"{endpoint}/api/v1/query"
            request: dict[str, Any] = {
                "method": "GET",
                "params": {"query": spec.query or "", "from": now - interval, "to": now},
            }
        else:
            url = f"{endpoint}/api/v2/query/scalar"
            request = {"method": "POST", "data": json.dumps(_v2_body(spec, now, interval))}
        try:
            async with (
                asyncio.timeout(REQUEST_TIMEOUT),
                aiohttp.ClientSession() as session,
                session.request(url=url, headers=headers, **request) as resp,
            ):
                status, body = resp.status, await resp.read()
        except TimeoutError:
            raise ProviderError(f"datadog {url}: no answer within {REQUEST_TIMEOUT:.0f}s") from None
        except (aiohttp.ClientError, ValueError) as e:
            raise ProviderError(f"datadog {url}: {e}") from None
        text = body.decode(errors="replace")
        if status in (401, 403):
            raise ProviderError(
                f"datadog {url}: received authentication error response code: {status} {text}"
            )
        if status != 200:
            raise ProviderError(f"datadog {url}: received non 2xx response code: {status} {text}")
        try:
            answer = json.loads(body)
        except ValueError as e:
            raise ProviderError(f"datadog {url}: Could not parse JSON body: {e}") from None
        metadata = {"httpStatusCode": str(status), "responseReceived": "true"}
        value: float | list[float] | None
        if spec.api_version == "v1":
            value, display, extra = _read_v1(url, answer)
        else:
            value, display, extra = _read_v2(url, answer)
        return ProviderResult(value, display, {**metadata, **extra, "requestOutcome": "success"})

    async def samples(
        self, spec: DatadogMetric, ctx: ProviderContext, start: float, end: float
    ) -> list[float]:
        """Every point of every series of `spec.query` from `start` to `end` (Unix seconds),
        through the v1 query API (the one that returns points): the canary judge's sample of
        one side. A v2 formula over several queries is refused."""
        if not spec.query:
            raise ProviderError("datadog judge: set query (a formula over queries is not judged)")
        address, api_key, app_key = await _credentials(spec, ctx)
        url = f"{address or DEFAULT_ADDRESS}/api/v1/query"
        headers = {"DD-API-KEY": api_key, "DD-APPLICATION-KEY": app_key}
        params = {"query": spec.query, "from": str(int(start)), "to": str(int(end))}
        try:
            async with (
                asyncio.timeout(REQUEST_TIMEOUT),
                aiohttp.ClientSession() as session,
                session.get(url, headers=headers, params=params) as resp,
            ):
                status, body = resp.status, await resp.read()
        except TimeoutError:
            raise ProviderError(f"datadog {url}: no answer within {REQUEST_TIMEOUT:.0f}s") from None
        except (aiohttp.ClientError, ValueError) as e:
            raise ProviderError(f"datadog {url}: {e}") from None
        if status != 200:
            text = body.decode(errors="replace")
            raise ProviderError(f"datadog {url}: received response code: {status} {text}")
        try:
            answer = json.loads(body)
        except ValueError as e:
            raise ProviderError(f"datadog {url}: Could not parse JSON body: {e}") from None
        out: list[float] = []
        for series in (answer.get("series") if isinstance(answer, dict) else None) or ():
            for point in (series.get("pointlist") if isinstance(series, dict) else None) or ():
                if isinstance(point, list) and len(point) == 2 and point[1] is not None:
                    out.append(_number(f"datadog {url}", point[1], "point"))
        return out


async def _credentials(spec: DatadogMetric, ctx: ProviderContext) -> tuple[str, str, str]:
    """(address, api key, app key), searched as Argo Rollouts searches for them."""
    ref = spec.secret_ref
    name = ref.name if ref is not None and ref.name else ""
    namespaced = bool(ref is not None and ref.namespaced)
    if namespaced and not name:
        raise ProviderError("datadog: secretRef.name is required when secretRef.namespaced")
    looked: list[str] = []
    if name:
        found = await _from_secret(
            ctx, ctx.namespace if namespaced else ctx.default_namespace, name, looked
        )
        if found:
            return found
    else:
        keys = {
            k: ctx.environ.get("DD_" + k.upper().replace("-", "_"))
            for k in (API_KEY, APP_KEY, ADDRESS)
        }
        if all(v is not None for v in keys.values()) and keys[API_KEY] and keys[APP_KEY]:
            return keys[ADDRESS] or "", keys[API_KEY] or "", keys[APP_KEY] or ""
        looked.append("DD_API_KEY, DD_APP_KEY and DD_ADDRESS are not all set")
        found = await _from_secret(ctx, ctx.default_namespace, SECRET_NAME, looked)
        if found:
            return found
    raise ProviderError("datadog: no API and application key found: " + "; ".join(looked))


async def _from_secret(
    ctx: ProviderContext, namespace: str, name: str, looked: list[str]
) -> tuple[str, str, str] | None:
    try:
        data = await ctx.read_secret(namespace, name)
    except ProviderError as e:
        looked.append(str(e))
        return None
    if not (data.get(API_KEY) and data.get(APP_KEY)):
        looked.append(f"secret {namespace}/{name} has no {API_KEY} or no {APP_KEY}")
        return None
    return data.get(ADDRESS, ""), data[API_KEY], data[APP_KEY]


def _validate(spec: DatadogMetric) -> None:
    """Argo's validateIncomingProps: what its CRD cannot say (okra's CRD says it too)."""
    queries = spec.queries or {}
    problem = None
    if not spec.query and not queries:
        problem = "set either query or queries"
    elif spec.query and queries:
        problem = "set query or queries, not both"
    elif spec.api_version == "v1" and not spec.query:
        problem = "apiVersion v1 supports only query; use apiVersion v2 for queries"
    elif spec.formula and not queries:
        problem = "formula is only valid with queries"
    elif not spec.formula and len(queries) > 1:
        problem = "with more than one query a formula is required"
    elif spec.api_version == "v1" and spec.aggregator:
        problem = "aggregator is not supported in apiVersion v1"
    if problem:
        raise ProviderError(f"datadog: {problem}; please review the analysis template")


def _v2_body(spec: DatadogMetric, now: int, interval: int) -> dict[str, Any]:
    queries = {"query": spec.query} if spec.query else dict(spec.queries or {})
    aggregator = spec.aggregator or "last"
    return {
        "data": {
            "type": "scalar_request",
            "attributes": {
                "from": (now - interval) * 1000,
                "to": now * 1000,
                "queries": [
                    {"aggregator": aggregator, "data_source": "metrics", "name": k, "query": v}
                    for k, v in queries.items()
                ],
                "formulas": [{"formula": spec.formula}] if spec.formula else [],
            },
        }
    }


def _number(where: str, raw: Any, what: str) -> float:
    """A JSON number as Go decodes it into float64 (null leaves the zero value)."""
    if raw is None:
        return 0.0
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ProviderError(f"{where}: Could not parse JSON body: {what} {raw!r} is not a number")
    return float(raw)


def _read_v1(url: str, answer: Any) -> tuple[float | None, str, dict[str, str]]:
    where = f"datadog {url}"
    raw_series = answer.get("series") if isinstance(answer, dict) else None
    if raw_series is not None and not isinstance(raw_series, list):
        raise ProviderError(f"{where}: Could not parse JSON body: series is not a list")
    series: list[list[list[float]] | None] = []
    for s in raw_series or ():
        points = s.get("pointlist") if isinstance(s, dict) else None
        if points is None:
            series.append(None)
            continue
        if not isinstance(points, list) or not all(isinstance(p, list) for p in points):
            raise ProviderError(f"{where}: Could not parse JSON body: pointlist is not a list")
        series.append([[_number(where, v, "point") for v in p] for p in points])
    if not series or not series[0]:
        shown = None if raw_series is None else [{"pointlist": s} for s in series]
        return None, go_json(shown), {}
    point = series[0][-1]
    if len(point) != 2:
        raise ProviderError(f"{where}: Datapoint does not have 2 values")
    return point[1], go_format_float(point[1]), {}


def _read_v2(url: str, answer: Any) -> tuple[float | list[float] | None, str, dict[str, str]]:
    where = f"datadog {url}"
    data = answer.get("data") if isinstance(answer, dict) else None
    data = data if isinstance(data, dict) else {}
    errors = data.get("errors")
    if errors:
        raise ProviderError(f"{where}: There were errors in your query: {errors}")
    attributes = data.get("attributes")
    columns = attributes.get("columns") if isinstance(attributes, dict) else None
    if not isinstance(columns, list):
        columns = []
    number = next(
        (c for c in columns if isinstance(c, dict) and c.get("type", "") in ("", "number")),
        None,
    )
    groups = [c for c in columns if isinstance(c, dict) and c.get("type") == "group"]
    values: list[float] = []
    labelled: list[dict[str, Any]] = []
    for i, raw in enumerate((number or {}).get("values") or ()):
        if raw is None:
            continue
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ProviderError(
                f"{where}: could not parse numeric value {raw!r} in column "
                f"{(number or {}).get('name', '')!r}"
            )
        values.append(float(raw))
        if groups:
            labelled.append({"name": _group_name(where, groups, i), "value": float(raw)})
    if not values:
        return None, "[]", {}
    if not groups:
        return values[0], go_format_float(values[0]), {}
    shown, truncated = labelled, False
    if len(labelled) > MAX_GROUPS_IN_METADATA:
        ordered = sorted(labelled, key=lambda g: float(g["value"]))
        low = MAX_GROUPS_IN_METADATA // 2
        shown = ordered[:low] + ordered[len(ordered) - (MAX_GROUPS_IN_METADATA - low) :]
        truncated = True
    metadata = {"groups": go_json(shown)}
    if truncated:
        metadata["groups_truncated"] = "true"
    return values, "[" + ",".join(go_format_float(v) for v in values) + "]", metadata


def _group_name(where: str, groups: list[dict[str, Any]], index: int) -> str:
    """The row's tag values across every group column, joined with commas."""
    parts: list[str] = []
    for column in groups:
        rows = column.get("values") or []
        tags = rows[index] if index < len(rows) else None
        if not (isinstance(tags, list) and tags and all(isinstance(t, str) for t in tags)):
            raise ProviderError(f"{where}: could not parse group label at index {index}")
        parts.extend(tags)
    return ",".join(parts)


PROVIDER = DatadogProvider()
