"""The two Cell controllers share the Cell kind and split it by shape (cell.system.shape): a
system Cell (spec.clusters, spec.applications) is the system Cell controller's, any other
the Cell controller's. Each controller's `for_(CELL)` filters by its predicate, so neither
queues the other's Cells; a Cell edited from one shape to the other reaches both once (the
new owner reconciles it, the old one lets it go)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from okra_controllers.api.kinds import CELL
from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell import controller as cell_controller
from okra_controllers.cell import report
from okra_controllers.cell.system import controller as system_controller
from okra_controllers.cell.system.shape import IsApplicationCell, IsSystemCell, is_system
from okra_controllers.settings import Settings
from okra_runtime.builder import Builder
from okra_runtime.cache import Store
from okra_runtime.controller import Controller
from okra_runtime.gvk import GVK
from okra_runtime.handler import EnqueueForObject
from okra_runtime.informer import EventHandler
from okra_runtime.metrics import REGISTRY
from okra_runtime.reconcile import Request

NS = "shop"
SINGLE = {"ingress": {"type": "alb"}, "steps": [{"setWeight": 50}]}
SYSTEM = {"clusters": [{"name": "blue"}], "applications": [{"name": "web"}]}


def cell(spec: dict[str, Any], name: str = "web", generation: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Cell",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "generation": generation,
            "resourceVersion": str(generation),
        },
        "spec": spec,
    }


def test_a_cell_with_clusters_or_applications_is_a_system_cell() -> None:
    assert is_system(cell(SYSTEM))
    assert is_system(cell({"clusters": []}))
    assert is_system(cell({"applications": []}))
    assert not is_system(cell(SINGLE))
    assert not is_system(cell({"argocd": {"clusterSecretSelector": {}}}))
    assert not is_system({"metadata": {"name": "web"}})  # no spec at all


@pytest.mark.parametrize("spec", [SINGLE, SYSTEM])
def test_each_predicate_passes_its_own_cells_only(spec: dict[str, Any]) -> None:
    system, application = IsSystemCell(), IsApplicationCell()
    obj, edited = cell(spec), cell(spec, generation=2)
    mine, other = (system, application) if spec is SYSTEM else (application, system)
    assert mine.create(obj)
    assert mine.update(obj, edited)
    assert mine.delete(obj)
    assert not other.create(obj)
    assert not other.update(obj, edited)
    assert not other.delete(obj)


@pytest.mark.parametrize(("before", "after"), [(SINGLE, SYSTEM), (SYSTEM, SINGLE)])
def test_a_cell_edited_into_the_other_shape_passes_both(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    """The new owner must reconcile it; the old one sees it once more and lets it go."""
    old, new = cell(before), cell(after, generation=2)
    assert IsSystemCell().update(old, new)
    assert IsApplicationCell().update(old, new)


# -- through the controllers' setup ----------------------------------------------------


@dataclasses.dataclass
class FakeInformer:
    store: Store = dataclasses.field(default_factory=Store)
    floors: Any = None
    handlers: list[EventHandler] = dataclasses.field(default_factory=list)

    def add_handler(self, handler: EventHandler) -> None:
        self.handlers.append(handler)


class FakeEvents:
    def event(self, *_: Any) -> None:
        pass


class FakeManager:
    """What the two setups use of okra_runtime.manager.Manager: informers that keep their
    handlers, and the controllers added (not run)."""

    def __init__(self) -> None:
        self.client = object()
        self.informers: dict[GVK, FakeInformer] = {}
        self.controllers: dict[str, Controller] = {}

    def informer_for(self, gvk: GVK) -> FakeInformer:
        return self.informers.setdefault(gvk, FakeInformer())

    def event_recorder(self, controller: str) -> FakeEvents:
        return FakeEvents()

    def add_closer(self, name: str, closer: Any) -> None:
        pass

    def builder(self, name: str) -> Builder:
        return Builder(self, name)  # type: ignore[arg-type]

    def add(self, controller: Controller, *, needs_leader: bool = True) -> None:
        self.controllers[controller.name] = controller


async def queued(ctrl: Controller) -> set[str]:
    """The names of the Cells the controller's queue holds (and empties it)."""
    names = set()
    while len(ctrl.queue):
        request = await ctrl.queue.get()
        ctrl.queue.done(request)
        names.add(request.name)
    return names


@pytest.fixture
async def controllers() -> tuple[FakeManager, Controller, Controller]:
    mgr = FakeManager()
    settings = Settings(None, "okra", AwsConfig(), 1)
    cell_controller.setup(mgr, settings)  # type: ignore[arg-type]
    system_controller.setup(mgr, settings)  # type: ignore[arg-type]
    return mgr, mgr.controllers["cell"], mgr.controllers["system-cell"]


def for_cell(mgr: FakeManager) -> list[EventHandler]:
    """The Cell informer's handlers of each controller's `for_(CELL)` (not the system Cell
    controller's `watches(CELL, system_of)`, which maps an application's Cell made by a
    system to that system)."""
    return [h for h in mgr.informers[CELL].handlers if isinstance(h, EnqueueForObject)]


async def test_each_controller_queues_only_its_own_cells(
    controllers: tuple[FakeManager, Controller, Controller],
) -> None:
    mgr, cells, systems = controllers
    handlers = for_cell(mgr)
    assert len(handlers) == 2
    single, system = cell(SINGLE, "web"), cell(SYSTEM, "shop")
    for h in handlers:
        h.on_add(single)
        h.on_add(system)
    assert (await queued(cells), await queued(systems)) == ({"web"}, {"shop"})
    for h in handlers:
        h.on_update(single, cell(SINGLE, "web", generation=2))
        h.on_update(system, cell(SYSTEM, "shop", generation=2))
    assert (await queued(cells), await queued(systems)) == ({"web"}, {"shop"})
    for h in handlers:
        h.on_delete(single)
        h.on_delete(system)
    assert (await queued(cells), await queued(systems)) == ({"web"}, {"shop"})


async def test_a_cell_edited_into_the_other_shape_reaches_both_controllers(
    controllers: tuple[FakeManager, Controller, Controller],
) -> None:
    mgr, cells, systems = controllers
    single, system = cell(SINGLE), cell(SYSTEM, generation=2)
    for h in for_cell(mgr):
        h.on_update(single, system)
    assert (await queued(cells), await queued(systems)) == ({"web"}, {"web"})
    for h in for_cell(mgr):  # and back
        h.on_update(system, cell(SINGLE, generation=3))
    assert (await queued(cells), await queued(systems)) == ({"web"}, {"web"})


def info_series(name: str) -> list[dict[str, str]]:
    return [
        s.labels
        for metric in REGISTRY.collect()
        if metric.name == "okra_cell_info"
        for s in metric.samples
        if s.labels.get("cell") == name and s.labels.get("namespace") == NS
    ]


async def test_the_cell_controller_lets_a_cell_edited_into_a_system_cell_go() -> None:
    """It does nothing with it, and its series of the Cell go (the system Cell's deletion
    will not reach it)."""
    rec = cell_controller.CellReconciler(FakeManager(), FakeEvents(), AwsConfig())  # type: ignore[arg-type]
    report.report_info(NS, "edited", CellStatus(phase="Completed"))
    assert info_series("edited")
    rec.caches.cells.upsert(cell(SYSTEM, "edited", generation=2))
    assert await rec.reconcile(Request("edited", NS)) is None
    assert info_series("edited") == []


async def test_the_system_cell_controller_lets_a_cell_edited_into_an_application_cell_go() -> None:
    rec = system_controller.SystemReconciler(
        FakeManager(),  # type: ignore[arg-type]
        FakeEvents(),  # type: ignore[arg-type]
        AwsConfig(),
        argocd=False,
    )
    rec.cells.upsert(cell(SINGLE, "edited", generation=2))
    assert await rec.reconcile(Request("edited", NS)) is None
