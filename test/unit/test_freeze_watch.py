"""The answer the controllers get about Freezes (freeze/watch.py) is worked out once and kept
until it can change: until the hold ends or a freeze starts, a Freeze changes, or a minute
passes; the objects a Freeze event wakes are those it selects."""

from __future__ import annotations

import datetime
from typing import Any

from okra_controllers.freeze import watch
from okra_runtime.cache import Store

T0 = datetime.datetime(2026, 6, 10, 12, tzinfo=datetime.UTC)
CELL = {"metadata": {"name": "web", "namespace": "team", "labels": {"team": "web"}}}


def freeze(name: str, rv: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "team", "resourceVersion": rv},
        "spec": {"reason": "r", **spec},
    }


def test_answer_is_kept_until_it_can_change() -> None:
    store = Store()
    until = T0 + datetime.timedelta(minutes=30)
    store.upsert(freeze("f", "1", until=until.isoformat()))
    first = watch.hold_of(store, CELL, T0)
    assert first is not None
    assert first.until == until
    # kept: the very same answer a second later
    assert watch.hold_of(store, CELL, T0 + datetime.timedelta(seconds=1)) is first
    # a minute on, worked out again (the same freezes: an equal answer)
    again = watch.hold_of(store, CELL, T0 + datetime.timedelta(seconds=61))
    assert again is not first
    assert again == first
    # a changed Freeze is read at once
    store.upsert(freeze("f", "2", until=until.isoformat(), selector={"matchLabels": {"x": "y"}}))
    assert watch.hold_of(store, CELL, T0 + datetime.timedelta(seconds=62)) is None
    # at the hold's end the answer is worked out again
    store.upsert(freeze("f", "3", until=until.isoformat()))
    assert watch.hold_of(store, CELL, until - datetime.timedelta(seconds=1)) is not None
    assert watch.hold_of(store, CELL, until) is None


def test_next_start_and_its_answer() -> None:
    store = Store()
    start = T0 + datetime.timedelta(seconds=20)
    store.upsert(freeze("g", "1", start=start.isoformat()))
    assert watch.hold_of(store, CELL, T0) is None
    assert watch.seconds_to_next(store, CELL, T0) == 20.0
    assert watch.hold_of(store, CELL, start) is not None  # not the answer kept from before
    assert watch.seconds_to_next(store, CELL, start) is None


def test_a_freeze_wakes_the_objects_it_selects() -> None:
    cells = Store()
    for name, team in (("web", "web"), ("pay", "payments")):
        cells.upsert({"metadata": {"name": name, "namespace": "team", "labels": {"team": team}}})
    cells.upsert({"metadata": {"name": "other", "namespace": "elsewhere", "labels": {}}})
    mapper = watch.objects_for_freeze(cells)
    chosen = mapper(freeze("f", "1", selector={"matchLabels": {"team": "web"}}))
    assert [(r.name, r.namespace) for r in chosen] == [("web", "team")]
    everyone = mapper(freeze("f", "1", windows=[{"schedule": "x", "duration": "1h"}]))
    assert sorted(r.name for r in everyone) == ["pay", "web"]  # unreadable: its namespace
