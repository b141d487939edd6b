"""A controller's backoffs do not leak into one another: the quick retries of an outage
(a server unreachable) leave an ordinary error that follows it, such as a conflict on
an object read stale during the outage, on a fresh backoff (5 ms), not on the one the
outage's retries grew (5 ms * 2^20 is over an hour, capped at 1000 s)."""

from __future__ import annotations

import asyncio

from okra_runtime.controller import Controller
from okra_runtime.reconcile import Request
from support import LogCapture, eventually


async def test_an_error_after_an_outage_starts_its_own_backoff(logs: LogCapture) -> None:
    script = ["down"] * 20 + ["conflict", "ok"]
    seen: list[str] = []

    async def reconcile(req: Request) -> None:
        seen.append(script[len(seen)])
        if seen[-1] == "down":
            raise ConnectionRefusedError("connection refused")
        if seen[-1] == "conflict":
            raise RuntimeError("the object changed since it was read")

    ctrl = Controller("outage-then-conflict", reconcile, unreachable_max_delay=0.01)
    task = asyncio.create_task(ctrl.run())
    try:
        ctrl.enqueue(Request("cell", "ns"))

        async def all_ran() -> bool:
            return len(seen) == len(script)

        assert await eventually(all_ran, within=10), seen[-3:]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    failed = [
        r["retries"] for r in logs.records() if r.get("event") == "reconcile failed; will retry"
    ]
    print(f"after 20 unreachable retries, the ordinary error's retry count: {failed}")
    assert failed == [0]
    assert ctrl.queue.num_requeues(Request("cell", "ns")) == 0  # the success forgot it
