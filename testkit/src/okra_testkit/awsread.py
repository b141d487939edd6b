"""What AWS shows of the traffic okra steers, read the way a person checks it: an NLB
listener's default forward (DescribeListeners) and the weighted records of a DNS name
(ListResourceRecordSets). Tests compare these readings with the weights okra planned."""

from __future__ import annotations

from okra_controllers.aws.config import AwsConfig


async def listener_forward(config: AwsConfig, listener_arn: str) -> dict[str, int]:
    """Target group ARN -> weight of the listener's default forward, weights above 0 (a
    forward to one target group without weights counts as weight 1)."""
    async with config.client("elbv2") as elb:
        listener = (await elb.describe_listeners(ListenerArns=[listener_arn]))["Listeners"][0]
    action = listener["DefaultActions"][0]
    groups = (action.get("ForwardConfig") or {}).get("TargetGroups") or [
        {"TargetGroupArn": action["TargetGroupArn"], "Weight": 1}
    ]
    return {str(g["TargetGroupArn"]): int(g["Weight"]) for g in groups if g["Weight"] > 0}


async def weighted_records(
    config: AwsConfig, zone: str, name: str, record_type: str = "A"
) -> dict[str, int]:
    """SetIdentifier -> weight of the weighted records of `name` and `record_type`."""
    async with config.client("route53") as r53:
        out = await r53.list_resource_record_sets(
            HostedZoneId=zone, StartRecordName=name, StartRecordType=record_type
        )
    return {
        str(r["SetIdentifier"]): int(r["Weight"])
        for r in out["ResourceRecordSets"]
        if r["Name"] == name + "." and r["Type"] == record_type and "SetIdentifier" in r
    }


async def registered_targets(
    config: AwsConfig, target_group_arn: str
) -> dict[tuple[str, int], str]:
    """The target group's registered targets (DescribeTargetHealth): (id, port) -> state
    (`initial`, `healthy`, `draining`, …)."""
    async with config.client("elbv2") as elb:
        out = await elb.describe_target_health(TargetGroupArn=target_group_arn)
    return {
        (str(d["Target"]["Id"]), int(d["Target"]["Port"])): str(d["TargetHealth"]["State"])
        for d in out["TargetHealthDescriptions"]
    }
