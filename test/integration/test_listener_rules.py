"""The albconfig controller's shared listing of a listener's rules, against moto:
one DescribeRules per listener within the TTL, however many configs ask at once, handed
out without a copy to readers that leave it unchanged; AWS refusing the listing (a listener
that does not exist) is shared for a shorter TTL."""

from __future__ import annotations

import asyncio
import copy
import dataclasses

import pytest
from botocore.exceptions import ClientError

from okra_controllers.albconfig.controller import (
    ListenerRules,
)
from okra_controllers.albconfig.plan import (
    Create,
    Modify,
    Nothing,
    applied_from_rule,
    drift,
    in_sync,
    plan,
)
from okra_controllers.api.v1alpha1.cell import AWSApplicationLoadBalancerConfigSpec
from okra_controllers.aws import elbv2
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
        assert a is b  # the listing itself, read-only, not a copy each
        assert cache.fresh_for(first.listener_arn) == 10
        now[0] = 4
        assert cache.fresh_for(first.listener_arn) == 6
        await cache.get(elb, second.listener_arn)
        assert listed() == 2  # one listing per listener
        now[0] = 11
        await cache.get(elb, first.listener_arn)
        assert listed() == 3  # expired after the TTL
        cache.forget(first.listener_arn)
        assert cache.fresh_for(first.listener_arn) is None
        await cache.get(elb, first.listener_arn)
        assert listed() == 4  # listed again once forgotten


async def test_a_rule_read_back_after_a_write_is_put_into_the_listing(moto: MotoServer) -> None:
    """Configs written one after another on one listener (a rollout of many Cells) plan
    against the held listing brought up to date with each rule read back, not a new
    DescribeRules of the listener per write; the listing keeps its age and equals what AWS
    lists, and a listing handed out before the put is left as it was."""
    seed = Seeder(moto.config)
    net = await seed.network()
    alb = await seed.alb("lr-put", net)
    tgs = [await seed.target_group(f"lr-put-{i}", net) for i in range(2)]
    calls: list[str] = []
    aws = dataclasses.replace(moto.config, on_call=calls.append)
    now = [0.0]
    cache = ListenerRules(ttl=10, clock=lambda: now[0])

    def spec(priority: int, weights: tuple[int, int]) -> AWSApplicationLoadBalancerConfigSpec:
        return AWSApplicationLoadBalancerConfigSpec.model_validate(
            {
                "listenerARN": alb.listener_arn,
                "listenerRule": {"priority": priority, "hosts": [f"p{priority}.example.com"]},
                "forwardTargetGroups": [
                    {"name": "a", "arn": tgs[0], "weight": weights[0]},
                    {"name": "b", "arn": tgs[1], "weight": weights[1]},
                ],
            }
        )

    async with aws.client("elbv2") as elb:
        first = await cache.get(elb, alb.listener_arn)
        before = copy.deepcopy(first)
        for priority in (1, 2, 3):
            action = plan(spec(priority, (50, 50)), await cache.get(elb, alb.listener_arn))
            assert isinstance(action, Create)
            created = await elbv2.create_rule(
                elb, alb.listener_arn, priority, action.conditions, action.actions, {"t": "x"}
            )
            rule = await elbv2.describe_rule(elb, str(created["RuleArn"]))
            assert rule is not None
            cache.put(alb.listener_arn, rule)
        now[0] = 4
        held = await cache.get(elb, alb.listener_arn)
        assert calls.count("elbv2:DescribeRules") == 1 + 3  # one listing, three read-backs
        assert list(held) == await elbv2.describe_rules(elb, alb.listener_arn)
        assert cache.fresh_for(alb.listener_arn) == 6  # the listing's age, not the put's
        assert first == before  # handed out before the puts: unchanged
        ours = next(r for r in held if r.get("Priority") == "2")
        assert isinstance(plan(spec(2, (50, 50)), held), Nothing)
        modify = plan(spec(2, (20, 80)), held)
        assert isinstance(modify, Modify)
        assert modify.rule_arn == ours["RuleArn"]
        await elbv2.modify_rule(elb, modify.rule_arn, modify.conditions, modify.actions)
        changed = await elbv2.describe_rule(elb, str(ours["RuleArn"]))
        assert changed is not None
        cache.put(alb.listener_arn, changed)
        held = await cache.get(elb, alb.listener_arn)
        assert list(held) == await elbv2.describe_rules(elb, alb.listener_arn)  # in place
        assert isinstance(plan(spec(2, (20, 80)), held), Nothing)
        cache.forget(alb.listener_arn)
        cache.put(alb.listener_arn, changed)  # none held: nothing to bring up to date
        assert cache.fresh_for(alb.listener_arn) is None


async def test_a_refused_listing_is_shared_for_the_refusal_ttl(moto: MotoServer) -> None:
    seed = Seeder(moto.config)
    net = await seed.network()
    alb = await seed.alb("lr-missing", net)
    missing = alb.listener_arn[:-16] + "0000000000000000"
    calls: list[str] = []
    aws = dataclasses.replace(moto.config, on_call=calls.append)
    now = [0.0]
    cache = ListenerRules(ttl=10, clock=lambda: now[0], refusal_ttl=5)

    def listed() -> int:
        return calls.count("elbv2:DescribeRules")

    async with aws.client("elbv2") as elb:
        out = await asyncio.gather(
            *(cache.get(elb, missing) for _ in range(20)), return_exceptions=True
        )
        codes = {e.response["Error"]["Code"] for e in out if isinstance(e, ClientError)}
        print(f"20 configs on a missing listener: {listed()} DescribeRules, codes {codes}")
        assert codes == {"ListenerNotFound"}
        assert len([e for e in out if isinstance(e, ClientError)]) == 20
        assert listed() == 1  # one refusal, shared
        now[0] = 6
        with pytest.raises(ClientError):
            await cache.get(elb, missing)
        assert listed() == 2  # asked again after the refusal TTL
        cache.forget(missing)
        with pytest.raises(ClientError):
            await cache.get(elb, missing)
        assert listed() == 3  # and after a write to the listener


async def test_the_controllers_readers_of_the_shared_listing_leave_it_unchanged(
    moto: MotoServer,
) -> None:
    """The listing is handed out without a copy: every function the controller reads it
    with (plan, in_sync, drift, applied_from_rule) must leave it exactly as AWS answered."""
    seed = Seeder(moto.config)
    net = await seed.network()
    alb = await seed.alb("lr-readers", net)
    tgs = [await seed.target_group(f"lr-readers-{i}", net) for i in range(2)]
    spec = AWSApplicationLoadBalancerConfigSpec.model_validate(
        {
            "listenerARN": alb.listener_arn,
            "listenerRule": {"priority": 7, "hosts": ["r.example.com"], "pathPatterns": ["/a"]},
            "forwardTargetGroups": [
                {"name": "a", "arn": tgs[0], "weight": 30},
                {"name": "b", "arn": tgs[1], "weight": 70},
            ],
        }
    )
    async with moto.config.client("elbv2") as elb:
        action = plan(spec, [], owner="ns/r")
        assert isinstance(action, Create)
        await elbv2.create_rule(
            elb,
            alb.listener_arn,
            action.priority,
            action.conditions,
            action.actions,
            {elbv2.OWNER_TAG: "ns/r"},
        )
        rules = await ListenerRules(ttl=10).get(elb, alb.listener_arn)
    before = copy.deepcopy(rules)
    ours = next(r for r in rules if r["Priority"] == "7")
    assert isinstance(plan(spec, rules, owner="ns/r"), Nothing)
    assert in_sync(spec, ours)
    assert drift(spec, ours) == "rule differs"
    assert applied_from_rule(spec, ours) is not None
    assert plan(spec.model_copy(update={"forward_target_groups": []}), rules) is not None
    assert rules == before
