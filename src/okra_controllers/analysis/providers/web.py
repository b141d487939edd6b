"""The web provider: an HTTP request whose JSON answer, at `jsonPath`, is the result.

Why it looks like this: Argo Rollouts (`metricproviders/webmetric/webmetric.go`) decodes the
answer into Go values (every number a float64), selects with Kubernetes JSONPath (`{$.data.ok}`,
`{.items[0].value}`, filters such as `{.items[?(@.name=="api")].value}`), takes the first match
and stores it as Go's JSON encoding. okra does the same, evaluating the path inside the braces
with jsonpath-ng. One Argo quirk is kept on purpose: an answer that is not JSON is stored as
text and marked Successful without any condition being evaluated (`assume_successful`).
"""

from __future__ import annotations

import asyncio
import functools
import json

import aiohttp
from jsonpath_ng import JSONPath
from jsonpath_ng.ext.parser import parse as parse_jsonpath

from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
    as_go_json_value,
    go_json,
)
from okra_controllers.api.v1alpha1.providers import WebMetric

__all__ = ["PROVIDER", "WebProvider", "compile_jsonpath"]

DEFAULT_TIMEOUT = 10
DEFAULT_JSONPATH = "{$}"


class WebProvider:
    kind = "web"

    async def measure(self, spec: WebMetric, ctx: ProviderContext) -> ProviderResult:
        method = spec.method or "GET"
        if spec.body and spec.json_body is not None:
            raise ProviderError("web: use either body or jsonBody; both cannot be set")
        if (spec.body or spec.json_body is not None) and method == "GET":
            raise ProviderError("web: body and jsonBody can only be used with method POST or PUT")
        path = compile_jsonpath(spec.json_path or DEFAULT_JSONPATH)
        headers = {h.key: h.value for h in spec.headers or ()}
        data: str | None = spec.body or None
        if spec.json_body is not None:
            data = json.dumps(spec.json_body)
            headers["Content-Type"] = "application/json"
        timeout = (
            spec.timeout_seconds
            if spec.timeout_seconds and spec.timeout_seconds > 0
            else DEFAULT_TIMEOUT
        )
        try:
            async with (
                asyncio.timeout(timeout),
                aiohttp.ClientSession() as session,
                session.request(
                    method, spec.url, data=data, headers=headers, ssl=not spec.insecure
                ) as resp,
            ):
                status, body = resp.status, await resp.read()
        except TimeoutError:
            raise ProviderError(f"web {method} {spec.url}: no answer within {timeout}s") from None
        except (aiohttp.ClientError, ValueError) as e:
            raise ProviderError(f"web {method} {spec.url}: {e}") from None
        if not 200 <= status < 300:
            raise ProviderError(
                f"web {method} {spec.url}: received non 2xx response code: {status}"
            )
        try:
            document = json.loads(body)
        except ValueError:
            text = body.decode(errors="replace")
            return ProviderResult(text, text, assume_successful=True)
        matches = path.find(document)
        if not matches:
            raise ProviderError(
                f"web {spec.url}: Could not find JSONPath {spec.json_path or DEFAULT_JSONPATH} "
                "in body"
            )
        value = as_go_json_value(matches[0].value)
        return ProviderResult(value, go_json(value))


@functools.lru_cache(maxsize=256)
def compile_jsonpath(template: str) -> JSONPath:
    """A Kubernetes JSONPath template holding one `{...}` expression, compiled."""
    text = template.strip()
    inner = text[1:-1].strip() if text.startswith("{") and text.endswith("}") else None
    if not inner or "{" in inner or "}" in inner:
        raise ProviderError(
            f"web: jsonPath {template!r} must be one Kubernetes JSONPath expression in braces, "
            "e.g. {$.data.ok}"
        )
    if inner.startswith((".", "[")):
        inner = "$" + inner
    elif inner.startswith("@"):
        inner = "$" + inner[1:]
    elif not inner.startswith("$"):
        raise ProviderError(
            f"web: jsonPath {template!r}: a path starts with $ or ., e.g. {{$.data.ok}}"
        )
    try:
        compiled: JSONPath = parse_jsonpath(inner)
    except Exception as e:  # jsonpath-ng raises plain Exceptions for some bad paths
        raise ProviderError(f"web: jsonPath {template!r}: {e}") from None
    return compiled


PROVIDER = WebProvider()
