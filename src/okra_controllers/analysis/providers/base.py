"""One interface for every metric provider, so the analysis engine never knows which one it
talks to (Argo Rollouts' `metricproviders.Provider`, made asyncio).

A provider turns a provider spec (its `{{args.x}}` already substituted) into a
`ProviderResult`: the value the success and failure conditions see as `result`, in exactly the
shape Argo Rollouts gives it, and the text Argo would store as the measurement's `value`.
Judging the value is not the provider's job: verdict rules live in one place, elsewhere.
Anything that keeps a provider from measuring (a refused connection, an HTTP error, a response
of the wrong shape, a missing Secret) is a `ProviderError` whose message says what failed and
where; it becomes a measurement in phase Error.

Also here, because every provider needs them: `secret_reader` (Secrets through okra_runtime's
Client) and Go-compatible number formatting, so stored values read exactly as Argo writes them.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from okra_controllers.api.kinds import SECRET
from okra_controllers.aws.config import AwsConfig
from okra_runtime.errors import ApiError, NotFoundError

if TYPE_CHECKING:
    from okra_runtime.client import Client

__all__ = [
    "Provider",
    "ProviderContext",
    "ProviderError",
    "ProviderResult",
    "as_go_json_value",
    "go_format_float",
    "go_json",
    "go_sprint_float",
    "secret_reader",
]


SpecT_contra = TypeVar("SpecT_contra", bound=BaseModel, contravariant=True)
SecretReader = Callable[[str, str], Awaitable[dict[str, str]]]


class ProviderError(Exception):
    """A measurement could not be taken; the message says what failed and where."""


@dataclass(frozen=True)
class ProviderContext:
    """What a provider may use besides its spec."""

    namespace: str
    """Namespace of the AnalysisRun (namespaced Secrets are read there)."""
    read_secret: SecretReader
    """(namespace, name) -> the Secret's decoded data; raises ProviderError if missing."""
    aws: AwsConfig
    """Region, endpoint and credentials for CloudWatch and SigV4 signing."""
    default_namespace: str
    """okra's own namespace: where Argo Rollouts reads the `datadog` Secret by default."""
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    """The manager's environment: Argo Rollouts reads DD_API_KEY / DD_APP_KEY / DD_ADDRESS
    and ARGO_ROLLOUTS_PROMETHEUS_ADDRESS from it. Tests pass their own."""


@dataclass(frozen=True)
class ProviderResult:
    """One measurement's outcome, shaped as Argo Rollouts shapes it."""

    value: Any
    """What the conditions see as `result`: prometheus a float (scalar) or list of floats
    (vector); datadog a float, None (no data) or, for a v2 `by {tag}` query, a list of floats;
    cloudwatch the list of MetricDataResult dicts; web the JSON value at jsonPath."""
    display: str
    """The measurement's `value` string exactly as Argo stores it, e.g. "[0.97]" or "0.97"."""
    metadata: dict[str, str] = field(default_factory=dict)
    """The measurement's `metadata` (e.g. prometheus `warnings`, datadog `groups`)."""
    metric_metadata: dict[str, str] = field(default_factory=dict)
    """The metric result's `metadata` (e.g. `ResolvedPrometheusQuery`): Argo records it once
    per metric, not per measurement."""
    assume_successful: bool = False
    """Argo marks this measurement Successful without evaluating any condition (the web
    provider does so when the answer is not JSON)."""


class Provider(Protocol[SpecT_contra]):
    """A metric provider. Stateless: one instance serves every measurement."""

    @property
    def kind(self) -> str:
        """prometheus | datadog | cloudwatch | web (the `provider` label of okra's metrics)."""
        ...

    async def measure(self, spec: SpecT_contra, ctx: ProviderContext) -> ProviderResult: ...


def secret_reader(client: Client) -> SecretReader:
    """A `ProviderContext.read_secret` that reads Secrets through `client` and decodes their
    data. Errors name the Secret, never its contents."""

    async def read(namespace: str, name: str) -> dict[str, str]:
        try:
            obj = await client.get(SECRET, name, namespace)
        except NotFoundError:
            raise ProviderError(f"secret {namespace}/{name} not found") from None
        except (ApiError, ConnectionError) as e:
            raise ProviderError(f"reading secret {namespace}/{name}: {e}") from None
        out: dict[str, str] = {}
        for key, raw in (obj.get("data") or {}).items():
            try:
                out[key] = base64.b64decode(raw, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError, TypeError):
                raise ProviderError(
                    f"secret {namespace}/{name}: key {key!r} is not base64-encoded UTF-8 text"
                ) from None
        return out

    return read


# -- Go number formatting -------------------------------------------------------------------
# Argo Rollouts is written in Go; the strings it stores come from strconv and encoding/json.
# Python's repr gives the same shortest round-trip digits, only laid out differently.


def _digits(f: float) -> tuple[str, str, int]:
    """sign, shortest significant digits and the decimal exponent of the first digit."""
    sign, digit_tuple, exponent = Decimal(repr(f)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return ("-" if sign else ""), "0", 0
    return ("-" if sign else ""), digits.rstrip("0"), len(digits) - 1 + exponent


def _fixed(sign: str, digits: str, exp: int) -> str:
    if digits == "0":
        return sign + "0"
    if exp < 0:
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    whole, frac = digits[: exp + 1], digits[exp + 1 :]
    return sign + whole.ljust(exp + 1, "0") + (f".{frac}" if frac else "")


def _scientific(sign: str, digits: str, exp: int, min_exp_digits: int) -> str:
    mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):0{min_exp_digits}d}"


def _special(f: float) -> str | None:
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    return None


def go_format_float(f: float) -> str:
    """Go's strconv.FormatFloat(f, 'f', -1, 64): 0.97, 1e21 as 1000000000000000000000."""
    special = _special(f)
    return special if special is not None else _fixed(*_digits(f))


def go_sprint_float(f: float) -> str:
    """Go's fmt %v of a float64 (%g, shortest): 0.97, 1.5e+06, 1e-05."""
    special = _special(f)
    if special is not None:
        return special
    sign, digits, exp = _digits(f)
    if digits != "0" and (exp < -4 or exp >= 6):
        return _scientific(sign, digits, exp, 2)
    return _fixed(sign, digits, exp)


def _go_json_float(f: float) -> str:
    if _special(f) is not None:
        raise ProviderError(f"value {f} cannot be written as JSON")
    sign, digits, exp = _digits(f)
    if digits != "0" and (exp < -6 or exp >= 21):
        return _scientific(sign, digits, exp, 1)
    return _fixed(sign, digits, exp)


def _go_json_string(s: str) -> str:
    text = json.dumps(s, ensure_ascii=False)
    for char, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escaped)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def go_json(value: Any) -> str:
    """Go's json.Marshal of a decoded JSON value: compact, map keys sorted, numbers as Go
    writes float64, and <, >, & escaped."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_json_float(value)
    if isinstance(value, str):
        return _go_json_string(value)
    if isinstance(value, Mapping):
        items = sorted(value.items())
        return "{" + ",".join(f"{_go_json_string(k)}:{go_json(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    raise ProviderError(f"value of type {type(value).__name__} cannot be written as JSON")


def as_go_json_value(value: Any) -> Any:
    """A decoded JSON value as Go's json.Unmarshal into interface{} holds it: every number a
    float64."""
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, Mapping):
        return {k: as_go_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_go_json_value(v) for v in value]
    return value
