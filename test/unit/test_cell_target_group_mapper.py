"""An AWSTargetGroup event enqueues exactly the Cells of its namespace whose target group
selector it matches (ALB or NLB ingress, empty selector = every target group), found
through the Cells' selector index, and keeps doing so as Cells change or go."""

from __future__ import annotations

from typing import Any

from okra_controllers.cell.controller import cells_for_target_group
from okra_runtime import Request
from okra_runtime.cache import Store


def cell(name: str, ns: str, match: dict[str, str], network: bool = False) -> dict[str, Any]:
    kind = "AWSNetworkLoadBalancer" if network else "AWSApplicationLoadBalancer"
    key = "awsNetworkLoadBalancer" if network else "awsApplicationLoadBalancer"
    lb = {"listenerARN": "arn", "targetGroupSelector": {"matchLabels": match}}
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"ingress": {"type": kind, key: lb}},
    }


def tg(ns: str, **labels: str) -> dict[str, Any]:
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


def test_peek_is_the_cached_object_and_index_keys_a_copy() -> None:
    store = Store()
    obj = {"metadata": {"name": "x", "namespace": "n", "labels": {"a": "1"}}}
    store.upsert(obj)
    assert store.peek("n/x") is obj
    assert store.peek("n/y") is None
    keys = store.keys_by_index("label", "a=1")
    keys.add("n/other")
    assert store.keys_by_index("label", "a=1") == {"n/x"}
