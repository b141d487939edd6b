"""A config controller on a manager: its reconciler on the config kind's informer, its
Event recorder and notifier, and the predicates that enqueue it.

Reconciles on spec changes only (and deletion requests, for a controller with a
finalizer): status writes and informer resyncs do not enqueue, since the controller
requeues itself (every idle period, or sooner while a change is pending)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from okra_controllers.aws.config import AwsConfig
from okra_controllers.configctl.outcome import Json
from okra_controllers.configctl.reconciler import DEFAULT_RESYNC, ConfigReconciler
from okra_controllers.notifications.notifier import notifier_for
from okra_runtime.predicates import Any_, FuncPredicate, GenerationChanged, Predicate

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

R = TypeVar("R", bound=ConfigReconciler[Any, Any, Any])


def _deletion_requested(obj: Json) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def predicates(finalizer: str | None) -> tuple[Predicate, ...]:
    """What enqueues a config: its spec changing, and its deletion when okra holds it
    with a finalizer (the others have nothing to undo)."""
    if finalizer is None:
        return (GenerationChanged(),)
    return (Any_(GenerationChanged(), FuncPredicate(_deletion_requested)),)


def register(
    reconciler: type[R], mgr: Manager, aws: AwsConfig, *, concurrency: int, **options: Any
) -> R:
    """Build `reconciler` (with `options`: its resync, ...) and its controller on `mgr`."""
    rec = reconciler(
        mgr.client,
        mgr.informer_for(reconciler.kind),
        mgr.event_recorder(f"{reconciler.name}-controller"),
        aws,
        notifier=notifier_for(mgr),
        **options,
    )
    (
        mgr.builder(reconciler.name)
        .for_(reconciler.kind, predicates=predicates(reconciler.finalizer))
        .with_options(max_concurrent_reconciles=concurrency)
        .complete(rec)
    )
    return rec


def setup(
    reconciler: type[ConfigReconciler[Any, Any, Any]], mgr: Manager, settings: Settings
) -> None:
    """A manager's entry for `reconciler`: it looks at AWS as often as the drift check
    period says (a change made outside okra is put back within that period), every
    `DEFAULT_RESYNC` at the most."""
    register(
        reconciler,
        mgr,
        settings.aws,
        concurrency=settings.concurrency,
        resync=min(DEFAULT_RESYNC, settings.drift_check),
    )
