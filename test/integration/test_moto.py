"""The AWS emulator is a real moto server over HTTP: okra's aiobotocore clients
create and read back the resources okra manages."""

from __future__ import annotations

import pytest

from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.seed import Network, Seeder


@pytest.fixture
async def network(moto: MotoServer) -> Network:
    return await Seeder(moto.config).network()


async def test_alb_rule_with_weighted_forward_reads_back(
    moto: MotoServer, network: Network
) -> None:
    seed = Seeder(moto.config)
    alb = await seed.alb("web", network)
    v1 = await seed.target_group("web-v1", network, tags={"okra.mumo.co/version": "1.0.0"})
    v2 = await seed.target_group("web-v2", network, tags={"okra.mumo.co/version": "2.0.0"})
    forward = {
        "Type": "forward",
        "ForwardConfig": {
            "TargetGroups": [
                {"TargetGroupArn": v1, "Weight": 80},
                {"TargetGroupArn": v2, "Weight": 20},
            ]
        },
    }
    async with moto.config.client("elbv2") as elb:
        rule = (
            await elb.create_rule(
                ListenerArn=alb.listener_arn,
                Priority=10,
                Conditions=[
                    {"Field": "host-header", "HostHeaderConfig": {"Values": ["web.example"]}}
                ],
                Actions=[forward],
            )
        )["Rules"][0]
        await elb.modify_rule(
            RuleArn=rule["RuleArn"],
            Actions=[
                {
                    "Type": "forward",
                    "ForwardConfig": {
                        "TargetGroups": [
                            {"TargetGroupArn": v1, "Weight": 40},
                            {"TargetGroupArn": v2, "Weight": 60},
                        ]
                    },
                }
            ],
        )
        rules = (await elb.describe_rules(ListenerArn=alb.listener_arn))["Rules"]
    by_priority = {r["Priority"]: r for r in rules}
    assert set(by_priority) == {"10", "default"}
    weights = {
        tg["TargetGroupArn"]: tg["Weight"]
        for tg in by_priority["10"]["Actions"][0]["ForwardConfig"]["TargetGroups"]
    }
    assert weights == {v1: 40, v2: 60}
    assert by_priority["10"]["Conditions"][0]["HostHeaderConfig"]["Values"] == ["web.example"]
    assert by_priority["default"]["Actions"][0]["Type"] == "fixed-response"


async def test_target_group_tags_instances_and_health(moto: MotoServer, network: Network) -> None:
    seed = Seeder(moto.config)
    tg = await seed.target_group("api-v1", network, tags={"role": "api", "version": "v1"})
    ids = await seed.instances(2, network, tags={"role": "node"})
    await seed.register_targets(tg, ids)
    async with moto.config.client("elbv2") as elb:
        tags = (await elb.describe_tags(ResourceArns=[tg]))["TagDescriptions"][0]["Tags"]
        health = (await elb.describe_target_health(TargetGroupArn=tg))["TargetHealthDescriptions"]
    assert {t["Key"]: t["Value"] for t in tags} == {"role": "api", "version": "v1"}
    assert sorted(h["Target"]["Id"] for h in health) == sorted(ids)


async def test_nlb_listener_forwards(moto: MotoServer, network: Network) -> None:
    seed = Seeder(moto.config)
    tg = await seed.target_group("tcp-v1", network, protocol="TCP")
    nlb = await seed.nlb("edge", network, tg)
    async with moto.config.client("elbv2") as elb:
        listener = (await elb.describe_listeners(ListenerArns=[nlb.listener_arn]))["Listeners"][0]
        lb = (await elb.describe_load_balancers(LoadBalancerArns=[nlb.arn]))["LoadBalancers"][0]
    assert lb["Type"] == "network"
    assert listener["DefaultActions"][0]["TargetGroupArn"] == tg


async def test_eks_clusters_with_tags(moto: MotoServer, network: Network) -> None:
    seed = Seeder(moto.config)
    await seed.eks_cluster("web-1-v2", network, tags={"role": "web", "version": "v2"})
    async with moto.config.client("eks") as eks:
        names = (await eks.list_clusters())["clusters"]
        described = (await eks.describe_cluster(name="web-1-v2"))["cluster"]
    assert "web-1-v2" in names
    assert described["tags"] == {"role": "web", "version": "v2"}
    assert described["status"] == "ACTIVE"
    assert described["endpoint"].startswith("https://")


async def test_the_counting_proxy_names_every_protocols_operation(
    moto: MotoServer, network: Network
) -> None:
    """Query (ELBv2), JSON-less REST (EKS) and both: no call is counted as `?`, so the
    e2e check of okra-manager's calls against the IAM policy sees each by name."""
    from dataclasses import replace

    await Seeder(moto.config).eks_cluster("counted", network, tags={"role": "counted"})
    proxy = CountingProxy(moto.endpoint_url)
    await proxy.start()
    try:
        config = replace(moto.config, endpoint_url=proxy.endpoint_url)
        async with config.client("eks") as eks:
            await eks.list_clusters()
            await eks.describe_cluster(name="counted")
        async with config.client("elbv2") as elb:
            await elb.describe_load_balancers()
    finally:
        await proxy.stop()
    assert proxy.actions() == ["ListClusters", "DescribeCluster", "DescribeLoadBalancers"]


def test_reset_forgets_everything(moto: MotoServer) -> None:
    import asyncio

    async def count_vpcs() -> int:
        async with moto.config.client("ec2") as ec2:
            return len((await ec2.describe_vpcs())["Vpcs"])

    asyncio.run(Seeder(moto.config).network())
    assert asyncio.run(count_vpcs()) >= 2  # the default VPC and ours
    moto.reset()
    assert asyncio.run(count_vpcs()) == 1  # only moto's default VPC is back


async def test_every_call_is_counted_by_outcome_and_timed(moto: MotoServer) -> None:
    """okra_aws_api_calls_total{service,operation,outcome} and the duration histogram,
    from the clients' own events: a success, an AWS error, an unreachable endpoint."""
    from dataclasses import replace

    from okra_controllers.aws.config import API_CALLS, API_DURATION
    from okra_runtime.metrics import REGISTRY

    def count(operation: str, outcome: str) -> float:
        return float(API_CALLS.labels("elbv2", operation, outcome)._value.get())

    def timed(operation: str) -> float:
        value = REGISTRY.get_sample_value(
            "okra_aws_api_call_duration_seconds_count",
            {"service": "elbv2", "operation": operation},
        )
        return value or 0.0

    before = (
        count("DescribeLoadBalancers", "success"),
        count("DescribeRules", "error"),
        timed("DescribeLoadBalancers"),
    )
    async with moto.config.client("elbv2") as elb:
        await elb.describe_load_balancers()
        with pytest.raises(elb.exceptions.ListenerNotFoundException):
            await elb.describe_rules(
                ListenerArn="arn:aws:elasticloadbalancing:us-east-1:123456789012:"
                "listener/app/nope/0123456789abcdef/0123456789abcdef"
            )
    assert count("DescribeLoadBalancers", "success") == before[0] + 1
    assert count("DescribeRules", "error") == before[1] + 1
    assert timed("DescribeLoadBalancers") == before[2] + 1
    assert API_DURATION is not None

    dead = replace(moto.config, endpoint_url="http://127.0.0.1:1", total_max_attempts=1)
    unreachable = count("DescribeTargetGroups", "error")
    async with dead.client("elbv2") as elb:
        with pytest.raises(Exception, match=r"127\.0\.0\.1:1"):
            await elb.describe_target_groups()
    assert count("DescribeTargetGroups", "error") == unreachable + 1


async def test_an_operation_has_every_outcome_from_zero_once_called(moto: MotoServer) -> None:
    """Prometheus' rate() and increase() need two samples: the first throttled or failed
    call of an operation must raise a series that was already there at 0."""
    from okra_runtime.metrics import REGISTRY

    def sample(outcome: str) -> float | None:
        labels = {"service": "elbv2", "operation": "DescribeAccountLimits", "outcome": outcome}
        return REGISTRY.get_sample_value("okra_aws_api_calls_total", labels)

    before = sample("success") or 0.0
    async with moto.config.client("elbv2") as elb:
        await elb.describe_account_limits()
    assert sample("success") == before + 1
    assert sample("throttled") == 0.0
    assert sample("error") == 0.0


async def test_every_throttled_attempt_is_counted_retries_included(moto: MotoServer) -> None:
    """AWS throttles the first two attempts of a call (through the fault proxy): the call
    succeeds on its third, counted as 2 throttled attempts and 1 success. A call throttled
    on all of its 3 attempts: 3 throttled, neither success nor error."""
    from dataclasses import replace

    from faultproxy import FaultProxy
    from okra_controllers.aws.config import API_CALLS

    def count(outcome: str) -> float:
        return float(API_CALLS.labels("elbv2", "DescribeSSLPolicies", outcome)._value.get())

    def counts() -> tuple[float, float, float]:
        return count("throttled"), count("success"), count("error")

    async with FaultProxy(moto.config.endpoint_url or "") as proxy:
        config = replace(moto.config, endpoint_url=proxy.endpoint_url, total_max_attempts=3)
        proxy.script["DescribeSSLPolicies"] = ["throttle", "throttle"]
        before = counts()
        async with config.client("elbv2") as elb:
            await elb.describe_ssl_policies()
        after = counts()
        proxy.script["DescribeSSLPolicies"] = ["throttle"] * 3
        async with config.client("elbv2") as elb:
            with pytest.raises(elb.exceptions.ClientError, match="Throttling"):
                await elb.describe_ssl_policies()
        end = counts()
    seen = proxy.counts(["DescribeSSLPolicies"])
    print(
        f"\nthrottled twice then answered: +{after[0] - before[0]:.0f} throttled, "
        f"+{after[1] - before[1]:.0f} success; throttled on every attempt: "
        f"+{end[0] - after[0]:.0f} throttled, +{end[1] - after[1]:.0f} success, "
        f"+{end[2] - after[2]:.0f} error; the proxy saw {seen}"
    )
    assert seen == {"throttle": 5, "": 1}
    assert (after[0] - before[0], after[1] - before[1], after[2] - before[2]) == (2, 1, 0)
    assert (end[0] - after[0], end[1] - after[1], end[2] - after[2]) == (3, 0, 0)
