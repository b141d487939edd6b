"""`controller_runtime_reconcile_panics_total`: counted, as controller-runtime counts a
recovered panic, for each reconcile that ends in an exception that is a programming error
(what panics in Go: a None dereferenced, a missing key or index, a wrong type, a failed
assertion, a division by zero); such a reconcile is an error too, and retried as before.
Errors a reconciler means (the API server's answer, an unreachable server, TerminalError,
ReportedError, any other exception) are not panics. Plain asyncio, no server."""

from __future__ import annotations

import asyncio
import collections

import pytest

from okra_runtime import metrics as m
from okra_runtime.controller import Controller
from okra_runtime.errors import ConflictError, NoKindMatchError, ServerError
from okra_runtime.reconcile import ReportedError, Request, TerminalError
from support import until


def _none() -> dict[str, str] | None:
    return None


def _attribute() -> None:
    _none().get("x")  # type: ignore[union-attr]


def _key() -> None:
    _ = {"a": 1}["metadata"]


def _index() -> None:
    _ = [][0]


def _type() -> None:
    _ = "a" + 1  # type: ignore[operator]


def _zero() -> None:
    _ = 1 / 0


def _assert() -> None:
    raise AssertionError("the plan said it cannot happen")


PANICS = {
    "attribute": _attribute,
    "key": _key,
    "index": _index,
    "type": _type,
    "zero": _zero,
    "assert": _assert,
}


def _raise(e: Exception) -> None:
    raise e


ERRORS = {
    "conflict": lambda: _raise(ConflictError(409, "Conflict", "the object has been modified")),
    "server": lambda: _raise(ServerError(500, "InternalError", "etcd timeout")),
    "unreachable": lambda: _raise(ConnectionRefusedError("connect: connection refused")),
    "nokind": lambda: _raise(NoKindMatchError("no kind Cell is served")),
    "runtime": lambda: _raise(RuntimeError("the reconciler gave up")),
    "terminal": lambda: _raise(TerminalError("spec can never work")),
    "reported": lambda: _raise(ReportedError("said in the status")),
}


def sample(metric: str, controller: str) -> float:
    return m.REGISTRY.get_sample_value(metric, {"controller": controller}) or 0.0


async def run_until(ctrl: Controller, calls: collections.Counter[str], names: list[str]) -> None:
    task = asyncio.create_task(ctrl.run())
    try:
        for name in names:
            ctrl.enqueue(Request(name, "ns"))
        # each is reconciled, and each but the terminal one retried, as before
        await until(lambda: all(calls[n] >= (1 if n == "terminal" else 2) for n in names))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("kind", sorted(PANICS))
async def test_a_programming_error_is_counted_as_a_panic_and_retried(kind: str) -> None:
    name = f"panics-{kind}"
    calls: collections.Counter[str] = collections.Counter()

    async def reconcile(req: Request) -> None:
        calls[req.name] += 1
        PANICS[req.name]()

    ctrl = Controller(name, reconcile)
    await run_until(ctrl, calls, [kind])
    panics = sample("controller_runtime_reconcile_panics_total", name)
    assert panics >= 2
    # each panic is a reconcile error too, retried on the queue's backoff as any error
    assert sample("controller_runtime_reconcile_errors_total", name) == panics


async def test_errors_a_reconciler_means_are_not_panics() -> None:
    name = "panics-none"
    calls: collections.Counter[str] = collections.Counter()

    async def reconcile(req: Request) -> None:
        calls[req.name] += 1
        ERRORS[req.name]()

    ctrl = Controller(name, reconcile, unreachable_max_delay=0.01, reported_base_delay=0.001)
    await run_until(ctrl, calls, sorted(ERRORS))
    assert sample("controller_runtime_reconcile_errors_total", name) >= 2 * len(ERRORS) - 1
    assert sample("controller_runtime_reconcile_panics_total", name) == 0
    # the label is there from the start, at 0, so that increase() sees the first panic
    assert (
        m.REGISTRY.get_sample_value(
            "controller_runtime_reconcile_panics_total", {"controller": name}
        )
        == 0.0
    )
