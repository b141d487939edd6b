"""The Route 53 config's plan: pure functions from the spec and what Route 53 lists to the
one change batch (or none) that makes the name answer as the spec says.

- `desired`: the spec's records in the API's shape; a `targetGroupARN` record becomes an
  alias to the target group's load balancer (A/AAAA) or its DNS name as a value (CNAME).
- `plan`: UPSERT each desired record that is missing or differs, DELETE each record of
  the name and type the spec does not list (a weighted record of another identifier, or
  a plain record, which Route 53 would not let stand beside weighted ones); nothing when
  everything already answers as planned. DELETEs come first in the batch.
- Records are compared by meaning: weight, alias (DNS name case- and dot-insensitive,
  zone, health evaluation) or TTL and values (in any order), and no other routing policy.
- `applied`: what Route 53 shows, in the spec's shape (`status.applied`).
- `effective_at`: INSYNC + TTL, to the whole second up.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.api.v1alpha1.route53 import (
    AppliedRecordSet,
    AWSRoute53RecordSetConfigSpec,
    Route53AliasTarget,
    Route53WeightedRecord,
)
from okra_controllers.aws.route53 import LoadBalancer, fqdn, zone_id

Json = dict[str, Any]
OTHER_ROUTING = (
    "Region",
    "Failover",
    "GeoLocation",
    "GeoProximityLocation",
    "CidrRoutingConfig",
    "MultiValueAnswer",
    "HealthCheckId",
    "TrafficPolicyInstanceId",
)
"""Record fields of routing policies other than weighted: okra's records have none."""


@dataclass(frozen=True)
class Desired:
    records: tuple[Json, ...] = ()
    problems: tuple[str, ...] = ()
    """Records that cannot be said (a target group attached to no load balancer)."""


def desired(spec: AWSRoute53RecordSetConfigSpec, lbs: Mapping[str, LoadBalancer]) -> Desired:
    """The spec's records as ChangeResourceRecordSets takes them; `lbs` the load
    balancer of each `targetGroupARN` (one missing is a problem, its record left out)."""
    out: list[Json] = []
    problems: list[str] = []
    for i, r in enumerate(spec.records):
        rec: Json = {
            "Name": fqdn(spec.record_name),
            "Type": spec.record_type,
            "SetIdentifier": r.set_identifier,
            "Weight": r.weight,
        }
        alias = r.alias_target
        values = r.values
        if r.target_group_arn:
            lb = lbs.get(r.target_group_arn)
            if lb is None:
                problems.append(
                    f"spec.records[{i}].targetGroupARN: target group {r.target_group_arn} is "
                    "attached to no load balancer (or does not exist): a record needs a load "
                    "balancer to point at"
                )
                continue
            if spec.record_type == "CNAME":
                values = [lb.dns_name]
            else:
                alias = Route53AliasTarget(
                    dnsName=lb.dns_name,
                    hostedZoneID=lb.canonical_zone,
                    evaluate_target_health=False,
                )
        if alias is not None:
            rec["AliasTarget"] = {
                "HostedZoneId": zone_id(alias.hosted_zone_id),
                "DNSName": alias.dns_name,
                "EvaluateTargetHealth": alias.evaluate_target_health,
            }
        else:
            rec["TTL"] = spec.ttl
            rec["ResourceRecords"] = [{"Value": v} for v in values or ()]
        out.append(rec)
    return Desired(tuple(out), tuple(problems))


def _meaning(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    alias = rec.get("AliasTarget")
    target: tuple[Any, ...]
    if alias:
        target = (
            "alias",
            zone_id(str(alias.get("HostedZoneId", ""))),
            fqdn(str(alias.get("DNSName", ""))),
            bool(alias.get("EvaluateTargetHealth", False)),
        )
    else:
        values = sorted(str(v.get("Value", "")) for v in rec.get("ResourceRecords") or [])
        target = ("values", int(rec.get("TTL") or 0), tuple(values))
    others = tuple(sorted(k for k in OTHER_ROUTING if rec.get(k) not in (None, "", [], {})))
    return (rec.get("SetIdentifier"), rec.get("Weight"), target, others)


def same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The two records answer alike (see the module docstring)."""
    return _meaning(a) == _meaning(b)


@dataclass(frozen=True)
class Plan:
    changes: tuple[Json, ...] = ()
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def nothing(self) -> bool:
        return not self.changes


def _label(rec: Mapping[str, Any]) -> str:
    return str(rec.get("SetIdentifier") or f"{rec.get('Name')} {rec.get('Type')} (plain)")


def plan(want: Sequence[Json], found: Sequence[Json]) -> Plan:
    """The one change batch that turns `found` (every record of the name and type, as
    listed) into `want`; empty when they already agree."""
    by_id = {r.get("SetIdentifier"): r for r in found}
    wanted = {r["SetIdentifier"] for r in want}
    deletes = [
        {"Action": "DELETE", "ResourceRecordSet": dict(r)}
        for r in found
        if r.get("SetIdentifier") not in wanted
    ]
    upserts: list[Json] = []
    created: list[str] = []
    updated: list[str] = []
    for rec in want:
        have = by_id.get(rec["SetIdentifier"])
        if have is not None and same(rec, have):
            continue
        upserts.append({"Action": "UPSERT", "ResourceRecordSet": dict(rec)})
        (created if have is None else updated).append(rec["SetIdentifier"])
    return Plan(
        changes=(*deletes, *upserts),
        created=tuple(created),
        updated=tuple(updated),
        deleted=tuple(_label(r) for r in found if r.get("SetIdentifier") not in wanted),
    )


def in_sync(want: Sequence[Json], found: Sequence[Json]) -> bool:
    return plan(want, found).nothing


def weights_note(records: Sequence[Mapping[str, Any]]) -> str:
    """`a=20, b=80` (by SetIdentifier, in order): Event and drift text."""
    return ", ".join(f"{_label(r)}={r.get('Weight', '-')}" for r in records) or "nothing"


def applied(
    spec: AWSRoute53RecordSetConfigSpec, found: Sequence[Mapping[str, Any]]
) -> AppliedRecordSet:
    """The records listed, in the spec's shape and order; a record whose alias or values
    the spec resolved from a target group carries that `targetGroupARN` no further (it
    shows what Route 53 holds)."""
    order = {r.set_identifier: i for i, r in enumerate(spec.records)}
    out: list[Route53WeightedRecord] = []
    for r in found:
        sid = str(r.get("SetIdentifier") or "")
        if not sid:
            continue
        alias = r.get("AliasTarget")
        try:
            if alias:
                rec = Route53WeightedRecord(
                    set_identifier=sid,
                    weight=int(r.get("Weight") or 0),
                    alias_target=Route53AliasTarget(
                        dnsName=str(alias.get("DNSName", "")) or "-",
                        hostedZoneID=zone_id(str(alias.get("HostedZoneId", ""))) or "-",
                        evaluate_target_health=bool(alias.get("EvaluateTargetHealth")),
                    ),
                )
            else:
                values = [str(v.get("Value", "")) for v in r.get("ResourceRecords") or []]
                rec = Route53WeightedRecord(
                    set_identifier=sid, weight=int(r.get("Weight") or 0), values=values or ["-"]
                )
        except ValueError:
            continue
        out.append(rec)
    out.sort(key=lambda x: (order.get(x.set_identifier, len(order)), x.set_identifier))
    return AppliedRecordSet(
        record_name=fqdn(spec.record_name), record_type=spec.record_type, records=out
    )


def effective_at(in_sync_at: datetime.datetime, ttl: int) -> datetime.datetime:
    """When resolvers answer with a change Route 53 said INSYNC for at `in_sync_at`:
    after the TTL, to the whole second up (status times are to the second)."""
    at = in_sync_at + datetime.timedelta(seconds=ttl)
    whole = at.replace(microsecond=0)
    return whole if whole == at else whole + datetime.timedelta(seconds=1)


def weight_for_share(share: int) -> int:
    """A Cell's share (0..100, every Cell's shares total 100) as a Route 53 weight: the
    share itself, since Route 53 weights are relative (answers per record = weight/sum)."""
    return max(0, min(255, share))
