"""A change of a system Cell's spec that okra refuses reaches nothing: the application's
Cell keeps the spec the API server holds for it (its last accepted one); putting the spec
back gives the application's Cell the spec the accepted system spec derives, without a
field okra wrote earlier (`argocd`, `trafficConfirmation`)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from okra_controllers.cell.system.children import with_spec_hash
from okra_controllers.cell.system.controller import covers
from okra_controllers.cell.system.model import ChildSeen, SystemObserved
from okra_controllers.cell.system.names import SPEC_HASH
from okra_controllers.cell.system.plan import plan
from unit.test_cell_system_plan import V1, SystemWorld, app, cluster, system

ARGOCD = {
    "clusterSecret": {"labels": {"myservice-role": "web"}},
    "updateStrategy": {"type": "CreateBeforeDelete"},
}
CONFIRM = {"window": "2s", "tolerance": 5, "minRequests": 10, "deadline": "10s"}
A, B, C = V1[0], V1[1], cluster("web-3", "web")


def served_on_a_and_b() -> tuple[SystemWorld, dict[str, Any]]:
    """web Synced on {a, b}; and its Cell as the API server holds it (what okra applied,
    with a field the server defaults)."""
    w = SystemWorld(system([A, B], [app("web", "web", 50)]))
    w.run(12)
    assert w.app("web").phase == "Synced", w.app("web")
    held = copy.deepcopy(next(c for c in w.objects["cells"]))
    held["metadata"]["resourceVersion"] = "41"
    held["metadata"]["annotations"] = with_spec_hash(copy.deepcopy(held))["metadata"]["annotations"]
    held["spec"]["progressDeadlineAbort"] = False  # the server's default
    return w, held


def observed(w: SystemWorld, held: dict[str, Any]) -> SystemObserved:
    """What the system controller observes: web's Cell as the API server holds it."""
    o = w.observed()
    seen = o.children["web"]
    child = ChildSeen(
        status=seen.status,
        generation=seen.generation,
        annotations=held["metadata"]["annotations"],
        spec=held["spec"],
        resource_version=held["metadata"]["resourceVersion"],
    )
    return dataclasses.replace(o, children={"web": child})


@pytest.mark.parametrize(
    ("extra", "refusal"),
    [
        ({"argocd": ARGOCD}, "with argocd, okra moves an application between sets"),
        ({"trafficConfirmation": CONFIRM}, "trafficConfirmation: cluster(s) web-1-v1 serve"),
    ],
)
def test_a_refused_move_leaves_the_application_cell_as_the_api_server_holds_it(
    extra: dict[str, Any], refusal: str
) -> None:
    """web on {a, b} moved to {a, c} with a field okra refuses with a kept cluster: the
    application is Error, saying why by name; its Cell is the one the API server holds
    (spec, version and resourceVersion, the last precondition of the apply), only the
    holds the system sets now are the plan's."""
    w, held = served_on_a_and_b()
    w.up("web-3", "web")
    w.spec = system([A, C], [app("web", "web", 50, **extra)])
    p = plan(observed(w, held))
    web = next(a for a in p.status.applications or [] if a.name == "web")
    assert web.phase == "Error", web
    assert refusal in web.message, web
    assert p.status.phase == "Failed"
    [cell] = p.cells
    assert cell["spec"] == held["spec"]
    assert not set(extra) & set(cell["spec"]), cell["spec"]
    assert cell["metadata"]["resourceVersion"] == "41"
    assert cell["metadata"]["annotations"] == held["metadata"]["annotations"]
    assert covers(held, with_spec_hash(cell))  # nothing to write: the Cell stays
    # the system's pause still reaches it
    paused = plan(dataclasses.replace(observed(w, held), paused=True))
    assert paused.cells[0]["spec"] == held["spec"]
    assert paused.cells[0]["metadata"]["annotations"]["okra.mumo.co/pause"] == "true"
    assert not covers(held, with_spec_hash(paused.cells[0]))
    assert p.secret_labels == {}  # nor do the clusters' Argo CD Secrets change


def test_a_refused_change_with_no_cell_held_keeps_whatever_is_there() -> None:
    """The API server's copy of the Cell not known: nothing is written, nothing pruned."""
    w, _ = served_on_a_and_b()
    w.up("web-3", "web")
    w.spec = system([A, C], [app("web", "web", 50, argocd=ARGOCD)])
    p = plan(w.observed())  # its ChildSeen has no spec
    assert p.cells == []
    assert ("Cell", "sys-web") in p.keep


@pytest.mark.parametrize("extra", [{"argocd": ARGOCD}, {"trafficConfirmation": CONFIRM}])
def test_putting_the_spec_back_rewrites_a_cell_that_has_a_field_the_spec_no_longer_derives(
    extra: dict[str, Any],
) -> None:
    """web's Cell holds a field (written from a refused change, or from the spec before):
    the plan derives the spec without it, and the apply is not skipped as covered (the
    apply then leaves out the field okra owned, and the API server removes it)."""
    w, held = served_on_a_and_b()
    derived = w.objects["cells"][0]["spec"]
    polluted = copy.deepcopy(held)
    polluted["spec"].update(copy.deepcopy(extra))
    del polluted["metadata"]["annotations"][SPEC_HASH]
    polluted["metadata"]["annotations"] = with_spec_hash(copy.deepcopy(polluted))["metadata"][
        "annotations"
    ]
    p = plan(observed(w, polluted))
    [cell] = p.cells
    assert not set(extra) & set(cell["spec"]), cell["spec"]
    assert cell["spec"] == derived
    assert not covers(polluted, with_spec_hash(cell))
    # one written before the hash was: the same
    old = copy.deepcopy(polluted)
    del old["metadata"]["annotations"][SPEC_HASH]
    assert not covers(old, with_spec_hash(cell))
    # and once it holds the derived spec (the server's defaults beside it), nothing to do
    assert covers(held, with_spec_hash(cell))
