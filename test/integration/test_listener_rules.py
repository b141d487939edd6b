"""The albconfig controller's shared listing of a listener's rules, against moto:
one DescribeRules per listener within the TTL, however many configs ask at once."""

from __future__ import annotations

import asyncio
import dataclasses

from okra_controllers.albconfig.controller import ListenerRules
from okra_testkit.emulator import MotoServer
from okra_testkit.seed import Seeder


async def test_listener_rules_are_listed_once_per_listener_within_the_ttl(moto: MotoServer) -> None:
    seed = Seeder(moto.config)
    net = await seed.network()
    first = await seed.alb("lr-one", net)
    second = await seed.alb("lr-two", net)
    calls: list[str] = []
    aws = dataclasses.replace(moto.config, on_call=calls.append)
    now = [0.0]
    cache = ListenerRules(ttl=10, clock=lambda: now[0])

    def listed() -> int:
        return calls.count("elbv2:DescribeRules")

    async with aws.client("elbv2") as elb:
        a, b = await asyncio.gather(
            cache.get(elb, first.listener_arn), cache.get(elb, first.listener_arn)
        )
        assert a == b
        assert [r["IsDefault"] for r in a] == [True]
        assert listed() == 1  # concurrent readers share one listing
        a[0]["Priority"] = "mutated"
        assert (await cache.get(elb, first.listener_arn))[0]["Priority"] == "default"
        assert listed() == 1  # and get copies
        await cache.get(elb, second.listener_arn)
        assert listed() == 2  # one listing per listener
        now[0] = 11
        await cache.get(elb, first.listener_arn)
        assert listed() == 3  # expired after the TTL
        cache.forget(first.listener_arn)
        await cache.get(elb, first.listener_arn)
        assert listed() == 4  # forgotten after a write
