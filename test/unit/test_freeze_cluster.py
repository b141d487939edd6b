"""ClusterFreezes (okra_controllers.freeze.hold): which namespaces a namespaceSelector picks,
the union with namespaced Freezes (one hold, until none applies), a ClusterFreeze the
manager cannot read (it holds all it could be about and says why), and what a ClusterFreeze
or a Namespace event wakes (freeze/watch.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.freeze import ClusterFreeze
from okra_controllers.freeze import Hold, Invalid, hold_at, parse, watch
from okra_controllers.freeze.hold import is_cluster, next_hold
from okra_runtime.cache import Store
from unit.test_freeze_windows import at, freeze, window

T = at("2026-06-10T00:00:00Z")
NAMESPACES = {
    "web-prod": {"env": "production", "team": "web"},
    "pay-prod": {"env": "production", "team": "payments"},
    "web-dev": {"env": "dev", "team": "web"},
    "bare": {},
}


def cluster_freeze(
    name: str = "cf",
    *,
    namespaces: dict[str, Any] | None = None,
    selector: dict[str, Any] | None = None,
    windows: list[dict[str, str]] | None = None,
    **spec: Any,
) -> ClusterFreeze:
    body: dict[str, Any] = {"reason": spec.pop("reason", "fleet freeze"), **spec}
    if namespaces is not None:
        body["namespaceSelector"] = namespaces
    if selector is not None:
        body["selector"] = selector
    if windows is not None:
        body["windows"] = windows
    return ClusterFreeze.model_validate({"metadata": {"name": name}, "spec": body})


def held(fs: list[Any], ns: str, labels: dict[str, str], t: datetime.datetime = T) -> Hold | None:
    return hold_at(fs, ns, labels, t, NAMESPACES.get(ns))


def names(fs: list[Any], ns: str, labels: dict[str, str] | None = None) -> tuple[str, ...]:
    h = held(fs, ns, labels or {})
    return h.names if h else ()


# -- which namespaces ------------------------------------------------------------------------

EXPR = {"matchExpressions": [{"key": "env", "operator": "In", "values": ["production"]}]}


@pytest.mark.parametrize(
    ("namespaces", "picked"),
    [
        (None, ["bare", "pay-prod", "web-dev", "web-prod"]),  # left out: every namespace
        ({}, ["bare", "pay-prod", "web-dev", "web-prod"]),  # empty: every namespace
        ({"matchLabels": {"env": "production"}}, ["pay-prod", "web-prod"]),
        ({"matchLabels": {"env": "production", "team": "web"}}, ["web-prod"]),
        (EXPR, ["pay-prod", "web-prod"]),
        (
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]},
            ["bare", "pay-prod", "web-prod"],
        ),
        (
            {"matchExpressions": [{"key": "team", "operator": "Exists"}]},
            ["pay-prod", "web-dev", "web-prod"],
        ),
        ({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, ["bare"]),
        ({"matchLabels": {"env": "staging"}}, []),
    ],
)
def test_namespace_selector_picks_namespaces_by_their_labels(
    namespaces: dict[str, Any] | None, picked: list[str]
) -> None:
    cf = cluster_freeze(namespaces=namespaces)
    assert sorted(ns for ns in NAMESPACES if names([cf], ns)) == picked


def test_selector_picks_objects_within_the_namespaces_picked() -> None:
    cf = cluster_freeze(
        namespaces={"matchLabels": {"env": "production"}},
        selector={"matchLabels": {"tier": "edge"}},
    )
    assert names([cf], "web-prod", {"tier": "edge"}) == ("clusterfreeze/cf",)
    assert names([cf], "web-prod", {"tier": "db"}) == ()
    assert names([cf], "web-dev", {"tier": "edge"}) == ()


def test_a_namespace_not_known_has_no_labels() -> None:
    """A namespace the cache does not hold (None) matches only what matches no labels."""
    every = cluster_freeze("every")
    prod = cluster_freeze("prod", namespaces={"matchLabels": {"env": "production"}})
    not_dev = cluster_freeze(
        "not-dev",
        namespaces={"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]},
    )
    h = hold_at([every, prod, not_dev], "gone", {}, T, None)
    assert h is not None
    assert h.names == ("clusterfreeze/every", "clusterfreeze/not-dev")


def test_a_freeze_namespace_does_not_confine_a_cluster_freeze() -> None:
    """A ClusterFreeze has no namespace; one read with a stray metadata.namespace still
    applies by its namespaceSelector alone."""
    cf = ClusterFreeze.model_validate(
        {"metadata": {"name": "cf", "namespace": "web-prod"}, "spec": {"reason": "r"}}
    )
    assert names([cf], "pay-prod") == ("clusterfreeze/cf",)


# -- with namespaced Freezes: one hold -------------------------------------------------------


def test_union_with_freezes_names_each_freezes_first() -> None:
    ns_freeze = freeze("incident", ns="web-prod", until="2026-06-10T02:00:00Z")
    cf = cluster_freeze(
        "year-end", namespaces={"matchLabels": {"env": "production"}}, until="2026-06-10T05:00:00Z"
    )
    same_name = cluster_freeze("incident", until="2026-06-10T01:00:00Z")
    h = held([ns_freeze, cf, same_name], "web-prod", {})
    assert h is not None
    assert h.names == ("incident", "clusterfreeze/incident", "clusterfreeze/year-end")
    assert h.until == at("2026-06-10T05:00:00Z")
    said = h.describe()
    assert said.startswith("freeze incident (change freeze) until 2026-06-10T02:00:00Z; ")
    assert "clusterfreeze incident (fleet freeze) until 2026-06-10T01:00:00Z" in said
    assert "clusterfreeze year-end (fleet freeze) until 2026-06-10T05:00:00Z" in said
    assert said.endswith("; frozen until 2026-06-10T05:00:00Z")
    # elsewhere, only what selects there
    assert names([ns_freeze, cf, same_name], "pay-prod") == (
        "clusterfreeze/incident",
        "clusterfreeze/year-end",
    )
    assert names([ns_freeze, cf, same_name], "web-dev") == ("clusterfreeze/incident",)


def test_freezes_that_follow_on_across_kinds_are_one_hold() -> None:
    """A Freeze until 02:00 and a ClusterFreeze from 02:00 to 04:00, then a namespaced
    window from 04:00 to 06:00: held until 06:00."""
    first = freeze("first", ns="web-prod", until="2026-06-10T02:00:00Z")
    then = cluster_freeze("then", start="2026-06-10T02:00:00Z", until="2026-06-10T04:00:00Z")
    last = freeze("last", ns="web-prod", windows=[window("0 4 * * *", "2h")])
    h = held([first, then, last], "web-prod", {})
    assert h is not None
    assert h.names == ("first",)
    assert h.until == at("2026-06-10T06:00:00Z")
    # in a namespace the Freezes do not reach, the ClusterFreeze alone, when it starts
    assert held([first, then, last], "pay-prod", {}) is None
    assert next_hold([first, then, last], "pay-prod", {}, T, NAMESPACES["pay-prod"]) == at(
        "2026-06-10T02:00:00Z"
    )
    h = held([first, then, last], "pay-prod", {}, at("2026-06-10T03:00:00Z"))
    assert h is not None
    assert h.names == ("clusterfreeze/then",)
    assert h.until == at("2026-06-10T04:00:00Z")


def test_a_recurring_cluster_freeze_applies_in_its_windows() -> None:
    cf = cluster_freeze(
        "nightly",
        namespaces={"matchLabels": {"env": "production"}},
        windows=[window("0 22 * * *", "10h")],
    )
    assert names([cf], "web-prod") == ("clusterfreeze/nightly",)  # 00:00: inside 22:00-08:00
    h = held([cf], "web-prod", {})
    assert h is not None
    assert h.until == at("2026-06-10T08:00:00Z")
    assert held([cf], "web-prod", {}, at("2026-06-10T12:00:00Z")) is None
    assert next_hold(
        [cf], "web-prod", {}, at("2026-06-10T12:00:00Z"), NAMESPACES["web-prod"]
    ) == at("2026-06-10T22:00:00Z")
    assert next_hold([cf], "web-dev", {}, at("2026-06-10T12:00:00Z"), NAMESPACES["web-dev"]) is None


# -- what is refused, and one the manager cannot read ----------------------------------------


def test_bad_namespace_selector_is_refused_naming_the_field() -> None:
    with pytest.raises(ValidationError) as e:
        cluster_freeze(namespaces={"matchExpressions": [{"key": "env", "operator": "Near"}]})
    assert "namespaceSelector" in str(e.value) or "namespace_selector" in str(e.value)


def raw_cluster(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "typo"}, "spec": {"reason": "holidays", **spec}}


def test_unreadable_cluster_freeze_holds_what_it_selects_and_says_why() -> None:
    f = parse(
        raw_cluster(
            namespaceSelector={"matchLabels": {"env": "production"}},
            selector={"matchLabels": {"team": "web"}},
            windows=[{"schedule": "0 18 * * 5", "duration": "62h", "timeZone": "Paris"}],
        )
    )
    assert isinstance(f, Invalid)
    assert f.cluster
    assert "spec.windows.0.timeZone" in f.problem
    h = held([f], "pay-prod", {"team": "web"})
    assert isinstance(h, Hold)
    assert h.until is None
    assert h.names == ("clusterfreeze/typo",)
    assert (
        "clusterfreeze typo (holidays), which is invalid (spec.windows.0.timeZone" in h.describe()
    )
    assert held([f], "pay-prod", {"team": "api"}) is None  # its selector still reads
    assert held([f], "web-dev", {"team": "web"}) is None  # and its namespaceSelector
    assert next_hold([f], "pay-prod", {"team": "web"}, T, NAMESPACES["pay-prod"]) is None


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"namespaceSelector": {"matchLabels": 3}}, "spec.namespaceSelector.matchLabels"),
        ({"namespaceSelector": "production"}, "spec.namespaceSelector"),
        ({"until": "2026-06-10T01:00:00Z", "start": "2026-06-10T02:00:00Z"}, "spec"),
        ({"reason": ""}, "spec.reason"),
    ],
)
def test_unreadable_namespace_selector_holds_every_namespace(
    spec: dict[str, Any], field: str
) -> None:
    f = parse(raw_cluster(**spec))
    assert isinstance(f, Invalid)
    assert f.cluster
    assert field in f.problem
    for ns in (*NAMESPACES, "not-known"):
        h = hold_at([f], ns, {"any": "thing"}, T, NAMESPACES.get(ns))
        assert h is not None
        assert h.names == ("clusterfreeze/typo",)


def test_an_invalid_cluster_freeze_beside_a_valid_freeze() -> None:
    bad = parse(raw_cluster(windows=[{"schedule": "0 25 * * *", "duration": "1h"}]))
    ok = freeze("incident", ns="web-prod", until="2026-06-10T02:00:00Z")
    h = held([ok, bad], "web-prod", {})
    assert h is not None
    assert h.names == ("incident", "clusterfreeze/typo")
    assert h.until is None  # until the invalid one is fixed or deleted
    assert h.describe().endswith("; frozen until lifted")


def test_kind_is_told_by_kind_or_by_having_no_namespace() -> None:
    assert is_cluster({"kind": "ClusterFreeze", "metadata": {"namespace": "x"}})
    assert not is_cluster({"kind": "Freeze", "metadata": {}})
    assert is_cluster({"metadata": {"name": "cf"}})  # an informer's list item
    assert not is_cluster({"metadata": {"name": "f", "namespace": "team"}})
    assert isinstance(parse({"metadata": {"name": "cf"}, "spec": {"reason": "r"}}), ClusterFreeze)
    f = parse({"metadata": {"name": "f", "namespace": "t"}, "spec": {"reason": "r"}}, cluster=True)
    assert isinstance(f, ClusterFreeze)


# -- the controllers' caches and watches -----------------------------------------------------


def stores() -> tuple[Store, Store, Store, Store]:
    objects, freezes, cluster, namespaces = Store(), Store(), Store(), Store()
    for ns, labels in NAMESPACES.items():
        namespaces.upsert({"metadata": {"name": ns, "labels": labels, "resourceVersion": "1"}})
        for name, team in (("web", "web"), ("pay", "payments")):
            objects.upsert({"metadata": {"name": name, "namespace": ns, "labels": {"team": team}}})
    return objects, freezes, cluster, namespaces


def raw(cf: ClusterFreeze, rv: str = "1") -> dict[str, Any]:
    out = cf.model_dump(by_alias=True, exclude_none=True, mode="json")
    del out["apiVersion"], out["kind"]  # as an informer lists it
    out["metadata"] = {"name": cf.metadata.name, "resourceVersion": rv}
    return out


def test_hold_read_from_the_caches_follows_namespace_labels() -> None:
    objects, freezes, cluster, namespaces = stores()
    src = watch.Sources(freezes, cluster, namespaces)
    cell = objects.get("web", "web-dev", copy=False)
    assert cell is not None
    cluster.upsert(raw(cluster_freeze(namespaces={"matchLabels": {"env": "production"}})))
    assert watch.hold_of(src, cell, T) is None
    namespaces.upsert(
        {"metadata": {"name": "web-dev", "labels": {"env": "production"}, "resourceVersion": "2"}}
    )
    h = watch.hold_of(src, cell, T)  # the namespace's labels changed: worked out again
    assert h is not None
    assert h.names == ("clusterfreeze/cf",)
    cluster.delete("cf")
    assert watch.hold_of(src, cell, T) is None
    # a bare Store is the namespaced Freezes alone
    assert watch.hold_of(freezes, cell, T) is None


def test_a_cluster_freeze_wakes_what_it_selects_in_every_namespace() -> None:
    objects, _, _, namespaces = stores()
    mapper = watch.objects_for_freeze(objects, namespaces)
    prod_web = cluster_freeze(
        namespaces={"matchLabels": {"env": "production"}}, selector={"matchLabels": {"team": "web"}}
    )
    assert sorted((r.namespace, r.name) for r in mapper(raw(prod_web))) == [
        ("pay-prod", "web"),
        ("web-prod", "web"),
    ]
    assert len(mapper(raw(cluster_freeze()))) == 2 * len(NAMESPACES)
    unreadable = raw_cluster(namespaceSelector={"matchLabels": 3})
    assert len(mapper(unreadable)) == 2 * len(NAMESPACES)
    # a namespaced Freeze still wakes its own namespace only
    f = {"metadata": {"name": "f", "namespace": "web-dev"}, "spec": {"reason": "r"}}
    assert sorted(r.name for r in mapper(f)) == ["pay", "web"]
    assert {r.namespace for r in mapper(f)} == {"web-dev"}


def test_a_namespace_event_wakes_its_objects_while_a_cluster_freeze_picks_by_label() -> None:
    objects, _, cluster, _ = stores()
    mapper = watch.objects_for_namespace(objects, cluster)
    ns = {"metadata": {"name": "web-dev", "labels": {"env": "production"}}}
    assert mapper(ns) == []  # no ClusterFreeze
    cluster.upsert(raw(cluster_freeze("every")))
    assert mapper(ns) == []  # one for every namespace: labels do not matter
    cluster.upsert(raw(cluster_freeze("prod", namespaces={"matchLabels": {"env": "production"}})))
    assert sorted(r.name for r in mapper(ns)) == ["pay", "web"]
    assert {r.namespace for r in mapper(ns)} == {"web-dev"}
