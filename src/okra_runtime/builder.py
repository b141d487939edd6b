"""Declare a controller fluently, as controller-runtime's builder does:

    manager.builder("cell").for_(CELL).owns(CONFIG).watches(TG, map_tg).complete(reconciler)

`for_` is the primary kind (its Requests name the object itself); `owns` kinds
enqueue their controlling owner of the primary kind; `watches` maps any object
to Requests. Predicates filter per watch; `with_event_filter` adds predicates
to every watch.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol

from okra_runtime.controller import Controller
from okra_runtime.gvk import GVK
from okra_runtime.handler import EnqueueForObject, EnqueueForOwner, EnqueueMapped, Mapper
from okra_runtime.informer import Informer
from okra_runtime.predicates import Predicate
from okra_runtime.reconcile import ReconcileFunc, Reconciler
from okra_runtime.workqueue import RateLimiter


class Host(Protocol):
    """What a Builder needs of the manager it registers with (okra_runtime.manager.Manager).

    A protocol, not the Manager class, so that the manager imports the builder and never the
    reverse."""

    def informer_for(self, kind: GVK) -> Informer: ...

    def add(self, controller: Controller, *, needs_leader: bool = True) -> None: ...


def as_gvk(kind: GVK | str, name: str | None = None) -> GVK:
    if isinstance(kind, GVK):
        return kind
    if name is None:
        raise TypeError("give a GVK, or an apiVersion and a kind: for_('v1', 'ConfigMap')")
    return GVK.of(kind, name)


class Builder:
    def __init__(self, manager: Host, name: str) -> None:
        self._manager = manager
        self._name = name
        self._for: tuple[GVK, tuple[Predicate, ...]] | None = None
        self._owns: list[tuple[GVK, tuple[Predicate, ...]]] = []
        self._watches: list[tuple[GVK, Mapper, tuple[Predicate, ...]]] = []
        self._filters: list[Predicate] = []
        self._max_concurrent = 1
        self._rate_limiter: RateLimiter[Hashable] | None = None
        self._needs_leader = True
        self._reported_base_delay = 1.0

    def for_(
        self, kind: GVK | str, name: str | None = None, *, predicates: tuple[Predicate, ...] = ()
    ) -> Builder:
        if self._for is not None:
            raise ValueError(f"controller {self._name}: for_() can be called once")
        self._for = (as_gvk(kind, name), predicates)
        return self

    def owns(
        self, kind: GVK | str, name: str | None = None, *, predicates: tuple[Predicate, ...] = ()
    ) -> Builder:
        self._owns.append((as_gvk(kind, name), predicates))
        return self

    def watches(
        self,
        kind: GVK | str,
        mapper: Mapper,
        name: str | None = None,
        *,
        predicates: tuple[Predicate, ...] = (),
    ) -> Builder:
        self._watches.append((as_gvk(kind, name), mapper, predicates))
        return self

    def with_event_filter(self, *predicates: Predicate) -> Builder:
        self._filters.extend(predicates)
        return self

    def with_options(
        self,
        *,
        max_concurrent_reconciles: int | None = None,
        rate_limiter: RateLimiter[Hashable] | None = None,
        needs_leader_election: bool | None = None,
        reported_base_delay: float | None = None,
    ) -> Builder:
        """`reported_base_delay`: the first retry of a `ReportedError` (doubling to the
        controller's cap), for a controller whose reported failures only a change outside
        the cluster can cure, so that retrying them sooner than its resync is waste."""
        if max_concurrent_reconciles is not None:
            self._max_concurrent = max_concurrent_reconciles
        if rate_limiter is not None:
            self._rate_limiter = rate_limiter
        if needs_leader_election is not None:
            self._needs_leader = needs_leader_election
        if reported_base_delay is not None:
            self._reported_base_delay = reported_base_delay
        return self

    def complete(self, reconciler: Reconciler | ReconcileFunc) -> Controller:
        if self._for is None:
            raise ValueError(f"controller {self._name}: call for_(kind) before complete()")
        ctrl = Controller(
            self._name,
            reconciler,
            max_concurrent_reconciles=self._max_concurrent,
            rate_limiter=self._rate_limiter,
            reported_base_delay=self._reported_base_delay,
            reported_max_delay=max(300.0, self._reported_base_delay),
        )
        primary, preds = self._for
        mgr, filters = self._manager, tuple(self._filters)
        ctrl.floors = mgr.informer_for(primary).floors  # read-your-writes
        mgr.informer_for(primary).add_handler(
            EnqueueForObject(ctrl.enqueue, (*filters, *preds), made=ctrl.made)
        )
        for kind, kpreds in self._owns:
            mgr.informer_for(kind).add_handler(
                EnqueueForOwner(ctrl.enqueue, (*filters, *kpreds), primary)
            )
        for kind, mapper, kpreds in self._watches:
            mgr.informer_for(kind).add_handler(
                EnqueueMapped(ctrl.enqueue, (*filters, *kpreds), mapper)
            )
        mgr.add(ctrl, needs_leader=self._needs_leader)
        return ctrl
