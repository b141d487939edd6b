"""`make demo`'s narration never pairs a Cell status with weights from a moment after it:
every line's status is read at or after its weights."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from okra_testkit.demo import narration, observe

WAITING = {"phase": "Completed", "message": "v2 serves 100%; waiting for v3: 1 of 2 target groups"}
STARTED = {"phase": "Migrating", "message": "canary v3 at 20%"}
V2 = {"web-1-v2": 50, "web-2-v2": 50}
V3_AT_20 = {"web-1-v2": 40, "web-2-v2": 40, "web-1-v3": 10, "web-2-v3": 10}


class World:
    """The Cell and AWS as okra changes them: the status first, then the weights it planned
    reach AWS. Every read lets `per_read` of those changes happen after it."""

    def __init__(self, per_read: int) -> None:
        self.status: dict[str, Any] = WAITING
        self.weights: dict[str, int] = V2
        self.changes = [("status", STARTED), ("weights", V3_AT_20)]
        self.per_read = per_read

    def _after_read(self) -> None:
        for _ in range(self.per_read):
            if self.changes:
                what, value = self.changes.pop(0)
                setattr(self, what, value)

    async def read_status(self) -> dict[str, Any]:
        out = self.status
        self._after_read()
        return out

    async def read_weights(self) -> dict[str, int]:
        out = self.weights
        self._after_read()
        return out


@pytest.mark.parametrize("per_read", [0, 1, 2])
def test_a_line_never_pairs_a_status_with_later_weights(per_read: int) -> None:
    world = World(per_read)
    for _ in range(3):
        status, weights = asyncio.run(observe(world.read_weights, world.read_status))
        gives_v3 = any(n.endswith("-v3") and w > 0 for n, w in weights.items())
        assert not (gives_v3 and status is WAITING), (status, weights)


def test_the_line_says_phase_weights_and_message() -> None:
    line = narration(12.34, STARTED, V3_AT_20)
    assert line == (
        "[  12.3s] Migrating   AWS: web-1-v2=40 web-1-v3=10 web-2-v2=40 web-2-v3=10\n"
        "          canary v3 at 20%"
    )
    assert narration(0, {}, {}) == "[   0.0s] -           AWS: -\n          "
