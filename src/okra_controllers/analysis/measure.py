"""Take one measurement through a provider, with a deadline and metrics; a
provider failure is a value (an error message), never an exception."""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, Self

from prometheus_client import Histogram

from okra_controllers.analysis.providers.base import (
    ProviderContext,
    ProviderError,
    ProviderResult,
    SecretReader,
    secret_reader,
)
from okra_controllers.analysis.providers.registry import provider_for
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_controllers.aws.config import AwsConfig
from okra_runtime.cache import Store
from okra_runtime.client import Client
from okra_runtime.events import EventRecorder
from okra_runtime.informer import Informer
from okra_runtime.metrics import REGISTRY
from okra_runtime.timeutil import utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.gvk import GVK
    from okra_runtime.manager import Manager

MEASUREMENT_TIMEOUT = 120.0
MEASUREMENT_SECONDS = Histogram(
    "okra_analysis_measurement_duration_seconds",
    "Time to take one measurement",
    ["provider"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)


@dataclass(eq=False)
class Measurer:
    """What a reconciler that measures (AnalysisRun, Check) is made with: the client (Secrets
    are read through it), the informer of its kind (`store`), its Event recorder, the AWS
    settings and okra's namespace every provider is handed, and its clock."""

    client: Client
    informer: InitVar[Informer]
    events: EventRecorder
    aws: AwsConfig
    okra_namespace: str
    clock: Callable[[], datetime.datetime] = utcnow
    store: Store = field(init=False)
    read_secret: SecretReader = field(init=False)

    def __post_init__(self, informer: Informer) -> None:
        self.store = informer.store
        self.read_secret = secret_reader(self.client)

    @classmethod
    def of_manager(
        cls, mgr: Manager, settings: Settings, kind: GVK, name: str, **extra: Any
    ) -> Self:
        """The reconciler of `kind` on `mgr`: its Event recorder `<name>-controller`, and the
        AWS settings and namespace of okra's `settings`; `extra`, the subclass's own."""
        return cls(
            mgr.client,
            mgr.informer_for(kind),
            mgr.event_recorder(f"{name}-controller"),
            settings.aws,
            settings.okra_namespace,
            **extra,
        )

    def provider_context(self, namespace: str) -> ProviderContext:
        """What a provider measuring for an object of `namespace` is handed."""
        return ProviderContext(
            namespace=namespace,
            read_secret=self.read_secret,
            aws=self.aws,
            default_namespace=self.okra_namespace,
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
