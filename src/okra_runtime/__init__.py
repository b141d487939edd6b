"""okra_runtime: an asyncio controller runtime for Kubernetes operators.

It knows nothing of any particular operator. The pieces follow
controller-runtime's vocabulary, one concept per module:

- `client`: get/list/watch/create/update/patch/apply/delete any kind by GVK
  (raw dicts), typed errors (`errors`), retries with backoff.
- `informer` + `cache`: list+watch into an indexed local cache that recovers
  from dropped, stalled and expired watches by itself.
- `workqueue`: client-go's queue semantics, rate limiting, metrics.
- `controller` + `builder` + `handler` + `predicates`: from events to
  `Request`s to your reconciler (`reconcile`).
- `manager`: runs it all, with leader election, probes, metrics, signals.
- `events`: an aggregating events.k8s.io/v1 recorder.
- `crdgen`: CustomResourceDefinitions from pydantic models (`crddoc`: their reference page).

A real local control plane for tests and demos is not part of the runtime: it is
`okra_testkit.envtest`, in the test harness (the `okra-testkit` distribution).

See docs/runtime.md for a guide.
"""

from okra_runtime.builder import Builder
from okra_runtime.client import Client
from okra_runtime.controller import Controller
from okra_runtime.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
)
from okra_runtime.events import EventRecorder
from okra_runtime.gvk import GVK
from okra_runtime.hotloop import HotLoopGuard, HotLoopOptions
from okra_runtime.informer import Informer, InformerOptions
from okra_runtime.leaderelection import LeadershipLostError
from okra_runtime.logging import configure_logging
from okra_runtime.manager import Manager, ManagerOptions
from okra_runtime.predicates import GenerationChanged, LabelSelectorPredicate, Predicate
from okra_runtime.reconcile import Reconciler, ReportedError, Request, Result, TerminalError

__all__ = [
    "GVK",
    "AlreadyExistsError",
    "ApiError",
    "Builder",
    "Client",
    "ConflictError",
    "Controller",
    "EventRecorder",
    "GenerationChanged",
    "GoneError",
    "HotLoopGuard",
    "HotLoopOptions",
    "Informer",
    "InformerOptions",
    "InvalidError",
    "LabelSelectorPredicate",
    "LeadershipLostError",
    "Manager",
    "ManagerOptions",
    "NotFoundError",
    "Predicate",
    "Reconciler",
    "ReportedError",
    "Request",
    "Result",
    "TerminalError",
    "configure_logging",
]
