"""An AWSTargetGroup event enqueues exactly the Cells of its namespace whose target group
selector it matches (ALB or NLB ingress, empty selector = every target group) and for
which it carries a version label, found through the Cells' selector index, and keeps
doing so as Cells change or go."""

from __future__ import annotations

from typing import Any

from okra_controllers.cell.mappers import cells_for_target_group
from okra_runtime import Request
from okra_runtime.cache import Store

VERSION = "okra.mumo.co/version"


def cell(
    name: str, ns: str, match: dict[str, str], network: bool = False, **spec: Any
) -> dict[str, Any]:
    kind = "AWSNetworkLoadBalancer" if network else "AWSApplicationLoadBalancer"
    key = "awsNetworkLoadBalancer" if network else "awsApplicationLoadBalancer"
    lb = {"listenerARN": "arn", "targetGroupSelector": {"matchLabels": match}}
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"ingress": {"type": kind, key: lb}, **spec},
    }


def tg(ns: str, versioned: bool = True, **labels: str) -> dict[str, Any]:
    if versioned:
        labels = {VERSION: "v1", **labels}
    return {"metadata": {"name": "tg", "namespace": ns, "labels": labels}, "spec": {}}


def names(reqs: list[Request]) -> list[str]:
    return sorted(r.name for r in reqs)


def test_matching_cells_only() -> None:
    cells = Store()
    for c in (
        cell("a", "n1", {"app": "web"}),
        cell("b", "n1", {"app": "web", "tier": "front"}),
        cell("c", "n1", {"app": "api"}),
        cell("d", "n2", {"app": "web"}),
        cell("e", "n1", {}),
        cell("f", "n1", {"app": "web"}, network=True),
    ):
        cells.upsert(c)
    mapper = cells_for_target_group(cells)
    assert names(mapper(tg("n1", app="web"))) == ["a", "e", "f"]
    assert names(mapper(tg("n1", app="web", tier="front", v="1"))) == ["a", "b", "e", "f"]
    assert names(mapper(tg("n1"))) == ["e"]
    assert mapper(tg("n2", app="web")) == [Request("d", "n2")]
    assert mapper(tg("n3", app="web")) == []
    # the index follows the cache: a changed selector, a deleted Cell
    cells.upsert(cell("c", "n1", {"app": "web"}))
    cells.delete("n1/a")
    assert names(mapper(tg("n1", app="web"))) == ["c", "e", "f"]
    assert cells_for_target_group(cells)(tg("n1", app="api")) == [Request("e", "n1")]


def test_a_target_group_with_no_version_label_of_the_cell_wakes_no_cell() -> None:
    """The plan never looks at a target group without one of the Cell's version labels:
    thousands of them under a selector matching everything must not keep Cells queued."""
    cells = Store()
    for c in (
        cell("default", "n1", {}),
        cell("by-app", "n1", {}, versionLabels=["app.example/version"]),
        cell("versioned-by", "n1", {}, versionedBy={"label": "release"}),
    ):
        cells.upsert(c)
    mapper = cells_for_target_group(cells)
    assert names(mapper(tg("n1", versioned=False, fuzz="yes"))) == []
    assert names(mapper(tg("n1", fuzz="yes"))) == ["default"]
    assert names(mapper(tg("n1", versioned=False, **{"app.example/version": "2"}))) == ["by-app"]
    assert names(mapper(tg("n1", versioned=False, release="x"))) == ["versioned-by"]
    # an unparsable version still wakes the Cell (it says so in status)
    assert names(mapper(tg("n1", versioned=False, **{VERSION: "not-semver"}))) == ["default"]


def test_peek_is_the_cached_object_and_index_keys_a_copy() -> None:
    store = Store()
    obj = {"metadata": {"name": "x", "namespace": "n", "labels": {"a": "1"}}}
    store.upsert(obj)
    assert store.peek("n/x") is obj
    assert store.peek("n/y") is None
    keys = store.keys_by_index("label", "a=1")
    keys.add("n/other")
    assert store.keys_by_index("label", "a=1") == {"n/x"}


def test_a_version_label_in_the_original_spelling_wakes_the_cell() -> None:
    """The original okra's Go types put `versionLabels` under `targetGroupSelector`: a
    target group carrying only that label is a version of the Cell, so its events wake it
    (not only the Cell's periodic resync)."""
    cells = Store()
    original = cell("a", "n1", {"app": "web"})
    selector = original["spec"]["ingress"]["awsApplicationLoadBalancer"]["targetGroupSelector"]
    selector["versionLabels"] = ["example.com/release"]
    cells.upsert(original)
    mapper = cells_for_target_group(cells)
    release = {"example.com/release": "v2", "app": "web"}
    unversioned = tg("n1", versioned=False, **release)
    assert mapper(unversioned) == [Request("a", "n1")]
