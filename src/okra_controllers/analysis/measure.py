"""Take one measurement through a provider, with a deadline and metrics; a
provider failure is a value (an error message), never an exception."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from prometheus_client import Histogram

from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
)
from okra_controllers.analysis.providers.registry import provider_for
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_runtime.metrics import REGISTRY

MEASUREMENT_TIMEOUT = 120.0
MEASUREMENT_SECONDS = Histogram(
    "okra_analysis_measurement_duration_seconds",
    "Time to take one measurement",
    ["provider"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)


@dataclass(frozen=True)
class Outcome:
    provider: str  # prometheus | datadog | cloudwatch | web | unknown
    result: ProviderResult | None
    error: str | None


async def measure(
    spec: MetricProvider, ctx: ProviderContext, deadline: float = MEASUREMENT_TIMEOUT
) -> Outcome:
    start = time.perf_counter()
    kind = "unknown"
    try:
        provider, provider_spec = provider_for(spec)
        kind = provider.kind
        async with asyncio.timeout(deadline):
            return Outcome(kind, await provider.measure(provider_spec, ctx), None)
    except ProviderError as e:
        return Outcome(kind, None, str(e))
    except TimeoutError:
        return Outcome(kind, None, f"{kind}: no answer within {deadline:.0f}s")
    finally:
        MEASUREMENT_SECONDS.labels(kind).observe(time.perf_counter() - start)
