"""Answers AWS gave a moment ago, shared by every reconcile that would ask the same."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class RecentAnswers(Generic[K, V]):
    """What AWS answered about a key (a listener, a target group ARN), handed to every
    caller that asks about the same key within `ttl` seconds of the question, instead of
    asking again: a hundred objects naming the same missing listener or target group
    cost one AWS call per `ttl`, not one each. At most `kept` keys are held (then all
    are forgotten at once: an answer is only ever a saving, never needed)."""

    def __init__(
        self, ttl: float, clock: Callable[[], float] = time.monotonic, kept: int = 4096
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self.kept = kept
        self._answers: dict[K, tuple[float, V]] = {}

    def get(self, key: K) -> V | None:
        """The answer about `key` if it is younger than `ttl`, else None."""
        hit = self._answers.get(key)
        if hit is None:
            return None
        if self.clock() - hit[0] < self.ttl:
            return hit[1]
        del self._answers[key]
        return None

    def put(self, key: K, answer: V, asked: float) -> None:
        """Remember `answer` about `key`, as of `asked` (the clock when the question went
        out: an answer is as old as its question)."""
        if key not in self._answers and len(self._answers) >= self.kept:
            self._answers.clear()
        self._answers[key] = (asked, answer)

    def forget(self, key: K) -> None:
        """AWS has since said otherwise (it showed the group, listed the listener)."""
        self._answers.pop(key, None)

    def __len__(self) -> int:
        return len(self._answers)
