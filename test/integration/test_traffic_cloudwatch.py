"""Traffic confirmation's reading against moto's CloudWatch over HTTP: the test-side ALB
(`RequestFeeder`) publishes `RequestCount` per target group as the weights of moto's rule
split it, and `requests_served` reads back, in one GetMetricData, exactly what was
published per target group (0 for one with no data point), through the counting proxy
that names the call."""

from __future__ import annotations

import dataclasses
import datetime

import pytest

from okra_controllers.api.v1alpha1.cell import CellRoute53
from okra_controllers.aws.cloudwatch import dimension, requests_served
from okra_controllers.cell import traffic
from okra_controllers.cell.plan.traffic import TrafficQuery
from okra_testkit.albtraffic import RequestFeeder
from okra_testkit.emulator import CountingProxy, MotoServer
from okra_testkit.seed import Seeder
from support import eventually


async def test_what_the_feeder_publishes_is_what_a_reading_sums(moto: MotoServer) -> None:
    seed = Seeder(moto.config)
    net = await seed.network()
    alb = await seed.alb("traffic", net)
    v1 = await seed.target_group("traffic-v1", net)
    v2 = await seed.target_group("traffic-v2", net)
    idle = await seed.target_group("traffic-idle", net)
    async with moto.config.client("elbv2") as elb:
        await elb.create_rule(
            ListenerArn=alb.listener_arn,
            Priority=10,
            Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/*"]}}],
            Actions=[
                {
                    "Type": "forward",
                    "ForwardConfig": {
                        "TargetGroups": [
                            {"TargetGroupArn": v1, "Weight": 80},
                            {"TargetGroupArn": v2, "Weight": 20},
                        ]
                    },
                }
            ],
        )
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    async with RequestFeeder(moto.config, alb.listener_arn, rate=400, period=0.1) as feeder:

        async def enough() -> bool:
            return sum(feeder.published.values()) >= 400

        assert await eventually(enough, within=30)
    end = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    proxy = CountingProxy(moto.endpoint_url)
    await proxy.start()
    try:
        via = dataclasses.replace(moto.config, endpoint_url=proxy.endpoint_url)
        served = await requests_served(
            via, dict.fromkeys([v1, v2, idle], alb.listener_arn), start, end
        )
        assert proxy.actions() == ["GetMetricData"]  # one call, named on the wire
    finally:
        await proxy.stop()
    assert served == {v1: feeder.published[v1], v2: feeder.published[v2], idle: 0.0}
    share = served[v2] / (served[v1] + served[v2])
    assert 0.19 <= share <= 0.21, served
    # A window before the first request holds none.
    before = await requests_served(
        moto.config,
        dict.fromkeys([v1, v2], alb.listener_arn),
        start - datetime.timedelta(minutes=5),
        start,
    )
    assert before == {v1: 0.0, v2: 0.0}


async def test_a_skewed_feeder_gives_a_target_group_nothing(moto: MotoServer) -> None:
    seed = Seeder(moto.config)
    net = await seed.network()
    alb = await seed.alb("skewed", net)
    v1 = await seed.target_group("skewed-v1", net)
    v2 = await seed.target_group("skewed-v2", net)
    async with moto.config.client("elbv2") as elb:
        await elb.create_rule(
            ListenerArn=alb.listener_arn,
            Priority=10,
            Conditions=[{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/*"]}}],
            Actions=[
                {
                    "Type": "forward",
                    "ForwardConfig": {
                        "TargetGroups": [
                            {"TargetGroupArn": v1, "Weight": 50},
                            {"TargetGroupArn": v2, "Weight": 50},
                        ]
                    },
                }
            ],
        )
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    feeder = RequestFeeder(moto.config, alb.listener_arn, rate=200, period=0.1, served={v2: 0.0})
    async with feeder:

        async def some() -> bool:
            return feeder.published.get(v1, 0) >= 100

        assert await eventually(some, within=30)
    end = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    served = await requests_served(
        moto.config, dict.fromkeys([v1, v2], alb.listener_arn), start, end
    )
    assert served[v2] == 0.0
    assert served[v1] == feeder.published[v1]


def test_dimensions_are_the_last_parts_of_the_arns() -> None:
    listener = (
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:"
        "listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
    )
    tg = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web-v2/73e2d6bc24d8a067"
    assert dimension(listener, "app/") == "app/web/50dc6c495c0c9188"
    assert dimension(tg, "targetgroup/") == "targetgroup/web-v2/73e2d6bc24d8a067"


async def test_behind_route53_each_target_group_is_read_at_its_own_alb(moto: MotoServer) -> None:
    """A Route 53 Cell's reading: each record's endpoint is the ALB its target group is
    attached to (DescribeTargetGroups), and its RequestCount there is what it served."""
    seed = Seeder(moto.config)
    net = await seed.network()
    tgs: dict[str, str] = {}
    async with moto.config.client("elbv2") as elb:
        for v in ("v1", "v2"):
            tgs[f"web-{v}"] = await seed.target_group(f"r53-web-{v}", net)
            lb = await seed.alb(f"r53-{v}", net)
            await elb.create_listener(
                LoadBalancerArn=lb.arn,
                Protocol="HTTP",
                Port=8080,
                DefaultActions=[{"Type": "forward", "TargetGroupArn": tgs[f"web-{v}"]}],
            )
            dns = lb.dns_name
            async with moto.config.client("route53") as r53:
                if v == "v1":
                    zone = (
                        await r53.create_hosted_zone(Name="t.example.test", CallerReference="t")
                    )["HostedZone"]["Id"].rsplit("/", 1)[-1]
                await r53.change_resource_record_sets(
                    HostedZoneId=zone,
                    ChangeBatch={
                        "Changes": [
                            {
                                "Action": "UPSERT",
                                "ResourceRecordSet": {
                                    "Name": "web.t.example.test",
                                    "Type": "CNAME",
                                    "SetIdentifier": f"web-{v}",
                                    "Weight": 80 if v == "v1" else 20,
                                    "TTL": 0,
                                    "ResourceRecords": [{"Value": dns}],
                                },
                            }
                        ]
                    },
                )
    start = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    feeder = RequestFeeder(
        moto.config, rate=400, period=0.1, records=(zone, "web.t.example.test"), endpoints=tgs
    )
    async with feeder:

        async def enough() -> bool:
            return sum(feeder.published.values()) >= 400

        assert await eventually(enough, within=30)
    end = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    cell = CellRoute53.model_validate({"hostedZoneID": zone, "recordName": "web.t.example.test"})
    arns = tuple(sorted(tgs.values()))
    reading = await traffic.read(moto.config, cell, TrafficQuery(start, end, arns))
    assert reading.problem == ""
    assert dict(reading.requests) == {a: feeder.published[a] for a in arns}
    v2 = reading.requests[tgs["web-v2"]] / sum(reading.requests.values())
    assert 0.19 <= v2 <= 0.21
    # A target group attached to no load balancer cannot be read, and says so.
    lonely = await seed.target_group("r53-lonely", net)
    missing = await traffic.read(moto.config, cell, TrafficQuery(start, end, (*arns, lonely)))
    assert "is attached to no load balancer" in missing.problem


async def test_two_target_groups_behind_one_nlb_cannot_be_told_apart(moto: MotoServer) -> None:
    nlb = "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/edge/1"
    endpoints = {
        "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/a/1": nlb,
        "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/b/2": nlb,
    }
    now = datetime.datetime.now(datetime.UTC)
    with pytest.raises(ValueError, match="behind one NLB"):
        await requests_served(moto.config, endpoints, now, now)


async def test_an_nlb_endpoint_is_read_by_its_flows(moto: MotoServer) -> None:
    """A target group whose endpoint is an NLB: its count is the NLB's NewFlowCount (per
    load balancer, in AWS/NetworkELB), beside an ALB endpoint's RequestCount in the same
    GetMetricData. (moto names an NLB `loadbalancer/app/...`, AWS `loadbalancer/net/...`:
    the endpoint here is spelled as AWS does.)"""
    nlb = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/edge/5d1b"
    alb = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/50dc"
    tcp = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/edge-v1/73e2"
    http = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web-v2/9a1f"
    now = datetime.datetime.now(datetime.UTC)
    async with moto.config.client("cloudwatch") as cw:
        await cw.put_metric_data(
            Namespace="AWS/NetworkELB",
            MetricData=[
                {
                    "MetricName": "NewFlowCount",
                    "Dimensions": [{"Name": "LoadBalancer", "Value": "net/edge/5d1b"}],
                    "Timestamp": now,
                    "Value": 30.0,
                    "Unit": "Count",
                }
            ],
        )
        await cw.put_metric_data(
            Namespace="AWS/ApplicationELB",
            MetricData=[
                {
                    "MetricName": "RequestCount",
                    "Dimensions": [
                        {"Name": "LoadBalancer", "Value": "app/web/50dc"},
                        {"Name": "TargetGroup", "Value": "targetgroup/web-v2/9a1f"},
                    ],
                    "Timestamp": now,
                    "Value": 70.0,
                    "Unit": "Count",
                }
            ],
        )
    window = (now - datetime.timedelta(seconds=5), now + datetime.timedelta(seconds=5))
    served = await requests_served(moto.config, {tcp: nlb, http: alb}, *window)
    assert served == {tcp: 30.0, http: 70.0}
