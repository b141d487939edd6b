"""Route 53 weighted records for okra's controllers: one small function per AWS call,
and the translation between okra's record model and the API's shapes.

Names are compared as Route 53 keeps them: lower case, with a trailing dot (a record
written as `App.Example.com` is listed as `app.example.com.`). Alias DNS names are
compared the same way (Route 53 may add the dot and lowercase them).

Load balancers are found from target groups (`load_balancers_of`): DescribeTargetGroups
gives the load balancers a target group is attached to, DescribeLoadBalancers their DNS
name and canonical hosted zone, which is what an alias record points at.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from okra_controllers.aws.config import AwsConfig

Json = dict[str, Any]
PAGE = "300"
"""ListResourceRecordSets' largest page (weighted records of one name: at most 100)."""


def fqdn(name: str) -> str:
    """`App.example.com` -> `app.example.com.` (how Route 53 lists it)."""
    name = name.strip().lower()
    return name if name.endswith(".") else name + "."


def zone_id(value: str) -> str:
    """`/hostedzone/Z123` -> `Z123`."""
    return value.rsplit("/", 1)[-1]


async def list_records(r53: Any, zone: str, name: str, rtype: str) -> list[Json]:
    """Every record of exactly `name` and `rtype` in the zone (ListResourceRecordSets from
    that name and type, pages followed while they stay on it)."""
    want = fqdn(name)
    out: list[Json] = []
    kwargs: Json = {
        "HostedZoneId": zone_id(zone),
        "StartRecordName": want,
        "StartRecordType": rtype,
        "MaxItems": PAGE,
    }
    while True:
        page = await r53.list_resource_record_sets(**kwargs)
        sets = page.get("ResourceRecordSets") or []
        mine = [r for r in sets if fqdn(r.get("Name", "")) == want and r.get("Type") == rtype]
        out.extend(mine)
        if not page.get("IsTruncated") or len(mine) < len(sets):
            return out
        if fqdn(page.get("NextRecordName", "")) != want or page.get("NextRecordType") != rtype:
            return out
        kwargs["StartRecordName"] = page["NextRecordName"]
        kwargs["StartRecordType"] = page["NextRecordType"]
        if page.get("NextRecordIdentifier"):
            kwargs["StartRecordIdentifier"] = page["NextRecordIdentifier"]


async def change_records(r53: Any, zone: str, changes: Sequence[Json], comment: str) -> Json:
    """One ChangeResourceRecordSets (Route 53 applies the batch atomically); its
    ChangeInfo (`Id`, `Status`: PENDING or INSYNC, `SubmittedAt`)."""
    out = await r53.change_resource_record_sets(
        HostedZoneId=zone_id(zone),
        ChangeBatch={"Comment": comment[:256], "Changes": list(changes)},
    )
    info: Json = out["ChangeInfo"]
    return info


async def get_change(r53: Any, change_id: str) -> Json:
    """GetChange: the ChangeInfo of a change okra wrote."""
    out = await r53.get_change(Id=change_id)
    info: Json = out["ChangeInfo"]
    return info


@dataclass(frozen=True)
class LoadBalancer:
    arn: str
    dns_name: str
    canonical_zone: str


async def load_balancers_of(aws: AwsConfig, tg_arns: Iterable[str]) -> dict[str, LoadBalancer]:
    """The load balancer each target group is attached to (the first, when several);
    a target group attached to none, or not found, is left out."""
    arns = sorted(set(tg_arns))
    if not arns:
        return {}
    async with aws.client("elbv2") as elb:
        groups = (await elb.describe_target_groups(TargetGroupArns=arns))["TargetGroups"]
        lb_of = {
            g["TargetGroupArn"]: g["LoadBalancerArns"][0]
            for g in groups
            if g.get("LoadBalancerArns")
        }
        if not lb_of:
            return {}
        lbs = (await elb.describe_load_balancers(LoadBalancerArns=sorted(set(lb_of.values()))))[
            "LoadBalancers"
        ]
    by_arn = {
        lb["LoadBalancerArn"]: LoadBalancer(
            lb["LoadBalancerArn"], lb["DNSName"], lb.get("CanonicalHostedZoneId", "")
        )
        for lb in lbs
    }
    return {tg: by_arn[lb] for tg, lb in lb_of.items() if lb in by_arn}
