"""`decode_json`: a large response body is decoded with the cyclic GC paused (a decoded JSON
tree has no cycles, so collections during the decode only cost time), and the GC is left as
it was found, whatever happens."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import orjson
import pytest

from okra_runtime.client import LARGE_BODY, decode_json


def _list_body(n: int) -> bytes:
    items = [
        {"metadata": {"name": f"cm-{i}", "labels": {"a": "b"}}, "data": {"k": "v"}}
        for i in range(n)
    ]
    return orjson.dumps({"kind": "ConfigMapList", "items": items})


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """Generations of the collections that start while the test runs."""
    started: list[int] = []

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(on_gc)
    try:
        yield started
    finally:
        gc.callbacks.remove(on_gc)


def test_a_large_body_is_decoded_without_collections(collections: list[int]) -> None:
    body = _list_body(5_000)
    assert len(body) >= LARGE_BODY
    assert gc.isenabled()
    gc.collect()
    before = len(collections)
    plain = orjson.loads(body)
    during_plain = len(collections) - before  # len() allocates no tracked object
    assert during_plain > 0, "with the GC on this decode collects (else the test is moot)"
    before = len(collections)
    decoded = decode_json(body)
    assert len(collections) - before == 0
    assert decoded == plain
    assert gc.isenabled()


def test_a_small_body_leaves_the_gc_alone(collections: list[int]) -> None:
    body = _list_body(3)
    assert len(body) < LARGE_BODY
    assert decode_json(body)["items"][2]["metadata"]["name"] == "cm-2"
    assert gc.isenabled()


def test_the_gc_is_enabled_again_when_the_body_does_not_decode() -> None:
    body = b"[" * LARGE_BODY
    with pytest.raises(orjson.JSONDecodeError):
        decode_json(body)
    assert gc.isenabled()


def test_a_gc_disabled_by_the_caller_stays_disabled() -> None:
    gc.disable()
    try:
        decode_json(_list_body(5_000))
        assert not gc.isenabled()
    finally:
        gc.enable()
