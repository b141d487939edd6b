"""Which provider measures a metric: the one set in its `provider` field.

The registry is its own module so that the dependencies point one way: the registry imports
the providers, the providers import `base` (the interface), and `base` imports neither.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from okra_controllers.analysis.providers import cloudwatch, datadog, prometheus, web
from okra_controllers.analysis.providers.base import Provider, ProviderError
from okra_controllers.api.v1alpha1.providers import MetricProvider


def provider_for(spec: MetricProvider) -> tuple[Provider[Any], BaseModel]:
    """The provider for the one provider set in `spec`, and its spec."""
    chosen: list[tuple[Provider[Any], BaseModel]] = []
    if spec.prometheus is not None:
        chosen.append((prometheus.PROVIDER, spec.prometheus))
    if spec.datadog is not None:
        chosen.append((datadog.PROVIDER, spec.datadog))
    if spec.cloud_watch is not None:
        chosen.append((cloudwatch.PROVIDER, spec.cloud_watch))
    if spec.web is not None:
        chosen.append((web.PROVIDER, spec.web))
    if len(chosen) != 1:
        raise ProviderError(
            "metric provider: exactly one of prometheus, datadog, cloudWatch, web must be set"
        )
    return chosen[0]
