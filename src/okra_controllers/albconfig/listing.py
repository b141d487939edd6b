"""One DescribeRules per listener, shared by the ALB configs on it (`ListenerRules`): the
listing kept for a period, brought up to date with the rules this process writes, and AWS
refusing it shared for a shorter one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from botocore.exceptions import ClientError

from okra_controllers.albconfig.plan import rule_priority
from okra_controllers.aws import elbv2
from okra_controllers.aws.elbv2 import Json
from okra_controllers.aws.errors import refused
from okra_controllers.aws.recent import RecentAnswers


class ListenerRules:
    """One DescribeRules per listener, shared by every config on that listener for `ttl`
    seconds. A rule this process writes is read back and put into the listing (`put`);
    a failed write, or one that moves a rule to another priority, forgets the listing.
    So a rollout of 50 Cells on one listener lists it once, not once per write.

    A listener holds up to 100 rules and every config on it would otherwise list them all
    on its own resync; sharing the listing divides the reads (and botocore's parsing of
    them) by the number of configs per listener. The controller sets `ttl` to its drift
    check period and brings each synced config back just after its listener's listing
    expires (`fresh_for`), so the configs of a listener look together: one DescribeRules
    per listener per period, and a listing never older than a moment when it is read.

    Readers get the shared listing itself, not a copy (it is read once per config per
    period and copying it was most of the cost of an idle look): they must never mutate
    it. Every reader in this module is a pure function of it; tests check that a whole
    reconcile leaves it as AWS answered.

    AWS refusing the listing (`ListenerNotFound`: a listener ARN that names nothing) is
    shared too, for `refusal_ttl` seconds: a hundred configs naming the same missing
    listener fail at once on one DescribeRules instead of queueing on the listener's lock
    one AWS call after another, holding workers the other configs need."""

    def __init__(
        self, ttl: float, clock: Callable[[], float] = time.monotonic, refusal_ttl: float = 5.0
    ) -> None:
        self.ttl = ttl
        self.refusal_ttl = min(refusal_ttl, ttl)
        self._clock = clock
        self._cache: dict[str, tuple[float, tuple[Json, ...]]] = {}
        self._refused: RecentAnswers[str, ClientError] = RecentAnswers(self.refusal_ttl, clock)
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, elb: Any, listener: str) -> tuple[Json, ...]:
        async with self._locks.setdefault(listener, asyncio.Lock()):
            hit = self._cache.get(listener)
            if hit is not None and self._clock() - hit[0] < self.ttl:
                return hit[1]
            refusal = self._refused.get(listener)
            if refusal is not None:
                raise ClientError(refusal.response, refusal.operation_name)
            started = self._clock()
            try:
                rules = tuple(await elbv2.describe_rules(elb, listener))
            except ClientError as e:
                if refused(e):
                    self._refused.put(listener, e, started)
                raise
            self._refused.forget(listener)
            self._cache[listener] = (started, rules)
            return rules

    def age(self, listener: str) -> float:
        """Seconds since the listener's shared listing was read from AWS (0 when none
        is held: the next `get` reads it)."""
        hit = self._cache.get(listener)
        return 0.0 if hit is None else max(0.0, self._clock() - hit[0])

    def fresh_for(self, listener: str) -> float | None:
        """Seconds until the listener's shared listing expires (None: none held, as
        after a write)."""
        hit = self._cache.get(listener)
        return None if hit is None else hit[0] + self.ttl - self._clock()

    def put(self, listener: str, rule: Json) -> None:
        """Bring the listener's listing, if one is held, up to date with one rule as AWS
        shows it now (read back after this process wrote it): the rule with the same ARN
        is replaced or the new one added, in DescribeRules' order (by priority, the
        default rule last). The listing keeps its age, so it is still listed anew once
        per `ttl`. A new tuple: listings already handed out stay as they were."""
        hit = self._cache.get(listener)
        if hit is None:
            return
        arn = rule.get("RuleArn")
        others = [r for r in hit[1] if r.get("RuleArn") != arn]
        ordered = sorted(
            [*others, rule], key=lambda r: (rule_priority(r) is None, rule_priority(r) or 0)
        )
        self._cache[listener] = (hit[0], tuple(ordered))

    def forget(self, listener: str) -> None:
        self._cache.pop(listener, None)
        self._refused.forget(listener)
