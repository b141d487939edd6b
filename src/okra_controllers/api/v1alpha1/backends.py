"""The traffic backends' own settings, shared by a single-application Cell's `ingress`
(which adds the `targetGroupSelector` of its target groups) and a system Cell's
applications (which add the target group of each cluster and how fast weight moves)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from okra_controllers.api.v1alpha1.common import ARN_MAX_LENGTH, ApiModel

ELB_ARN = r"^arn:[a-z0-9-]+:elasticloadbalancing:"
ROLE_ARN = r"^arn:[a-z0-9-]+:iam::[0-9]{12}:role/.+"


class NLBListener(ApiModel):
    """An NLB listener whose default action okra owns (an AWSNetworkLoadBalancerConfig)."""

    listener_arn: str = Field(alias="listenerARN", pattern=ELB_ARN, max_length=ARN_MAX_LENGTH)
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=ROLE_ARN, max_length=ARN_MAX_LENGTH
    )
    """An IAM role to assume for the listener (the NLB in another account)."""


class Route53Records(ApiModel):
    """The weighted records of one DNS name okra owns (an AWSRoute53RecordSetConfig)."""

    hosted_zone_id: str = Field(alias="hostedZoneID", min_length=1, max_length=32)
    record_name: str = Field(min_length=1, max_length=1024)
    record_type: Literal["A", "AAAA", "CNAME"] = "A"
    """A or AAAA: alias records to each load balancer; CNAME: its DNS name as a value."""
    ttl: int = Field(default=60, ge=0, le=172800)
    """Seconds resolvers keep an answer (see AWSRoute53RecordSetConfig `spec.ttl`): a
    step's weights count as in effect this long after Route 53 says INSYNC."""
    role_arn: str | None = Field(
        default=None, alias="roleARN", pattern=ROLE_ARN, max_length=ARN_MAX_LENGTH
    )
    """An IAM role to assume for Route 53 (the zone in another account)."""
