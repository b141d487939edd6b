"""okra_runtime.loop picks the event loop okra-manager runs on: uvloop when it is
installed unless OKRA_EVENT_LOOP=asyncio; a wrong value is an error that names it."""

from __future__ import annotations

import asyncio
import importlib.util
import sys

import pytest

from okra_runtime import loop
from okra_runtime.informer import drop_managed_fields

HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None


def test_asyncio_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loop.ENV, "asyncio")
    assert loop.loop_factory() == ("asyncio", None)

    async def which() -> str:
        return type(asyncio.get_running_loop()).__module__

    assert loop.run(which()).startswith("asyncio")


def test_default_is_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loop.ENV, raising=False)
    name, factory = loop.loop_factory()
    assert name == ("uvloop" if HAVE_UVLOOP else "asyncio")
    assert (factory is not None) == HAVE_UVLOOP

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert loop.run(answer()) == 42


def test_uvloop_required_but_missing_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # missing, even where it is installed
    monkeypatch.setenv(loop.ENV, "uvloop")
    with pytest.raises(ImportError):
        loop.loop_factory()


def test_unknown_loop_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(loop.ENV, "trio")
    with pytest.raises(ValueError, match="OKRA_EVENT_LOOP='trio'"):
        loop.loop_factory()


def test_drop_managed_fields_keeps_everything_else() -> None:
    obj = {
        "metadata": {"name": "a", "resourceVersion": "7", "managedFields": [{"manager": "x"}]},
        "spec": {"k": 1},
    }
    assert drop_managed_fields(obj) == {
        "metadata": {"name": "a", "resourceVersion": "7"},
        "spec": {"k": 1},
    }
    assert drop_managed_fields({"kind": "Status"}) == {"kind": "Status"}  # no metadata at all
