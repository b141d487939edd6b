"""AWSRoute53RecordSetConfig: the weighted records of one DNS name, the traffic backend of
a Cell whose clusters do not share a load balancer (`spec.ingress.type: AWSRoute53`).

One config owns every record of one name and type in one hosted zone: a weighted record
(`SetIdentifier`) per target, each an alias to a load balancer (given, or found from a
target group's load balancer) or plain values. Route 53's weights are 0..255 and relative:
a record answers weight/sum of the queries, and when every weight is 0 all answer equally.
The Cell writes its shares (0..100, always totalling 100) as the weights themselves, so a
record's weight is its percentage.

Route 53 applies a change batch atomically; it is applied when GetChange says `INSYNC`,
and resolvers see it only after the record's TTL. `status.inSyncAt` and
`status.effectiveAt` (INSYNC + TTL) say when; `Synced` turns True only at `effectiveAt`,
so a Cell's next step (an analysis) never starts before resolvers can see the weights.
"""

from __future__ import annotations

import datetime
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from okra_controllers.api.v1alpha1.cell import LoadBalancerConfigStatus
from okra_controllers.api.v1alpha1.common import (
    ARN_MAX_LENGTH,
    ApiModel,
    OkraObject,
    condition_column,
    okra_crd,
)
from okra_runtime.crdgen import CRDInfo, PrinterColumn

ROLE_ARN = r"^arn:[a-z0-9-]+:iam::[0-9]{12}:role/.+"
TARGET_GROUP_ARN = r"^arn:[a-z0-9-]+:elasticloadbalancing:.+:targetgroup/"
MAX_RECORD_WEIGHT = 255
MAX_RECORDS = 100
"""Route 53 allows up to 100 weighted records of one name and type."""
DEFAULT_TTL = 60
"""Seconds: the TTL of plain records, and what resolvers cache an alias to a load balancer
for (Route 53 answers ELB aliases with the load balancer's own 60 s TTL)."""
RecordType = Literal["A", "AAAA", "CNAME"]


class Route53AliasTarget(ApiModel):
    dns_name: str = Field(alias="dnsName", min_length=1, max_length=1024)
    hosted_zone_id: str = Field(alias="hostedZoneID", min_length=1, max_length=32)
    """The load balancer's canonical hosted zone (DescribeLoadBalancers'
    `CanonicalHostedZoneId`), not the zone the record is in."""
    evaluate_target_health: bool = False


class Route53WeightedRecord(ApiModel):
    """One weighted record. Exactly one of `aliasTarget`, `values` and `targetGroupARN`:
    the last points the record at the load balancer the target group is attached to (an
    alias for A/AAAA, its DNS name for CNAME)."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.aliasTarget) ? 1 : 0) + (has(self.values) ? 1 : 0)"
                    " + (has(self.targetGroupARN) ? 1 : 0) == 1",
                    "message": "a record needs exactly one of aliasTarget, values, targetGroupARN",
                }
            ]
        }
    }
    set_identifier: str = Field(min_length=1, max_length=128)
    weight: int = Field(ge=0, le=MAX_RECORD_WEIGHT)
    alias_target: Route53AliasTarget | None = None
    values: list[str] | None = Field(default=None, min_length=1, max_length=100)
    target_group_arn: str | None = Field(
        default=None, alias="targetGroupARN", pattern=TARGET_GROUP_ARN, max_length=ARN_MAX_LENGTH
    )

    @model_validator(mode="after")
    def _one_target(self) -> Route53WeightedRecord:
        given = [x for x in (self.alias_target, self.values, self.target_group_arn) if x]
        if len(given) != 1:
            raise ValueError("a record needs exactly one of aliasTarget, values, targetGroupARN")
        return self


class AWSRoute53RecordSetConfigSpec(ApiModel):
    hosted_zone_id: str = Field(alias="hostedZoneID", min_length=1, max_length=32)
    """The zone's ID (`Z0123...`, with or without `/hostedzone/`)."""
    record_name: str = Field(min_length=1, max_length=1024)
    """The name every record answers for (`app.example.com`; a trailing dot is optional)."""
    record_type: RecordType = "A"
    ttl: int = Field(default=DEFAULT_TTL, ge=0, le=172800)
    """Seconds. The TTL of plain records; for aliases, how long resolvers keep an answer
    (not written: Route 53 answers aliases with the target's TTL, 60 s for a load
    balancer). Weights count as in effect `ttl` seconds after Route 53 says INSYNC."""
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=ROLE_ARN, max_length=ARN_MAX_LENGTH
    )
    """An IAM role to assume for Route 53 calls (the zone in another account)."""
    records: list[Route53WeightedRecord] = Field(min_length=1, max_length=MAX_RECORDS)

    @model_validator(mode="after")
    def _unique(self) -> AWSRoute53RecordSetConfigSpec:
        ids = [r.set_identifier for r in self.records]
        if len(set(ids)) != len(ids):
            raise ValueError("records: setIdentifier must be unique")
        return self


class PendingChange(ApiModel):
    """A change batch Route 53 accepted and has not yet said INSYNC for: a manager that
    restarts polls GetChange for it instead of writing the change again."""

    id: str = Field(min_length=1, max_length=128)
    submitted_at: datetime.datetime
    generation: int | None = None
    """The config's generation the change was written for."""


class AppliedRecordSet(ApiModel):
    """What ListResourceRecordSets showed for the name and type, in the spec's shape."""

    record_name: str
    record_type: str
    records: list[Route53WeightedRecord] = Field(default_factory=list)


class AWSRoute53RecordSetConfigStatus(LoadBalancerConfigStatus):
    applied: AppliedRecordSet | None = None
    """What okra last read back from Route 53; its records equal the spec's when in sync
    (a `targetGroupARN` record shown as the alias or values it resolved to, with the
    target group beside it)."""
    pending_change: PendingChange | None = None
    in_sync_at: datetime.datetime | None = None
    """When GetChange said INSYNC for the last change okra wrote."""
    effective_at: datetime.datetime | None = None
    """`inSyncAt` + `ttl`, to the whole second: from then resolvers answer with the
    records as written, and `Synced` may turn True."""


class AWSRoute53RecordSetConfig(OkraObject):
    """The weighted records of one name in a Route 53 hosted zone; its controller makes
    Route 53 match and says when resolvers see them."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "AWSRoute53RecordSetConfig",
        "awsroute53recordsetconfigs",
        condition_column("Synced"),
        PrinterColumn("Name", "string", ".spec.recordName"),
        PrinterColumn("Effective", "date", ".status.effectiveAt", priority=1),
        short_names=("r53config",),
    )
    kind: str = "AWSRoute53RecordSetConfig"
    spec: AWSRoute53RecordSetConfigSpec
    status: AWSRoute53RecordSetConfigStatus | None = None


ROUTE53_MODELS: tuple[type[ApiModel], ...] = (AWSRoute53RecordSetConfig,)
