"""Read-your-writes when the watch wins the race: the event of this process's own write
reaches the informer before the write's answer does. The cache already shows the write, so
the object is fresh; a floor set then would hold it until the floor's ttl."""

from __future__ import annotations

from typing import Any

import pytest

from okra_runtime import GVK
from okra_runtime.informer import Informer

pytestmark = pytest.mark.unit

RUN = GVK("okra.mumo.co", "v1alpha1", "AnalysisRun")


def run(rv: str) -> dict[str, Any]:
    return {"metadata": {"name": "r", "namespace": "ns", "resourceVersion": rv}}


def informer() -> Informer:
    inf = Informer(client=None, gvk=RUN)  # type: ignore[arg-type]  # never started
    inf._apply("ADDED", run("10"))
    return inf


def test_a_write_whose_event_came_first_sets_no_floor() -> None:
    inf = informer()
    inf._apply("MODIFIED", run("11"))  # the watch delivers our write...
    inf.wrote(run("11"))  # ...before its answer is seen
    assert inf.floors.fresh("ns/r")
    assert len(inf.floors) == 0


def test_a_write_the_cache_does_not_show_yet_waits_for_its_event() -> None:
    inf = informer()
    inf.wrote(run("11"))
    assert not inf.floors.fresh("ns/r")
    inf._apply("MODIFIED", run("11"))
    assert inf.floors.fresh("ns/r")


def test_an_object_the_cache_does_not_hold_sets_no_floor() -> None:
    inf = informer()
    inf.wrote({"metadata": {"name": "other", "namespace": "ns", "resourceVersion": "12"}})
    assert len(inf.floors) == 0
