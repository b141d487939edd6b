"""The load balancer configs: shapes and judges for the field walk (test_every_field_acts.py).

An AWSApplicationLoadBalancerConfig is judged by its plan (`albconfig/plan.py`) against a
few listeners as DescribeRules shows them: empty; a rule of the config's at its priority
serving other weights; another rule holding its priority with other conditions; the
config's own rule at another priority. Beside the plan: the problems okra finds in the
spec, whether the config's own rule is in sync and how it drifted, what it does in the
config's shape (`status.applied`), and the role the controller calls AWS with.
"""

from __future__ import annotations

import datetime
import importlib
from typing import Any

from okra_controllers.albconfig.plan import (
    applied_from_rule,
    drift,
    in_sync,
    plan,
    spec_problems,
)
from okra_controllers.api.v1alpha1.route53 import AWSRoute53RecordSetConfig
from okra_controllers.aws.route53 import LoadBalancer, zone_id

nlb = importlib.import_module("okra_controllers.nlbconfig.plan")
r53 = importlib.import_module("okra_controllers.route53config.plan")
"""The plan modules (each package's `plan` attribute is its plan function)."""

PREFIX = "arn:aws:elasticloadbalancing:us-east-1:123456789012"
LISTENER = f"{PREFIX}:listener/app/web/1/2"
RULE = f"{PREFIX}:listener-rule/app/web/1/2/mine"
OTHER_RULE = f"{PREFIX}:listener-rule/app/web/1/2/other"
TG_A = f"{PREFIX}:targetgroup/web-a/1"
TG_B = f"{PREFIX}:targetgroup/web-b/2"
OWNER = "prod/web"


def _rule(arn: str, priority: str, conditions: list[Any], weights: list[int]) -> dict[str, Any]:
    groups = [
        {"TargetGroupArn": tg, "Weight": w} for tg, w in zip((TG_A, TG_B), weights, strict=True)
    ]
    return {
        "RuleArn": arn,
        "Priority": priority,
        "IsDefault": False,
        "Conditions": conditions,
        "Actions": [{"Type": "forward", "ForwardConfig": {"TargetGroups": groups}}],
    }


HOST = [{"Field": "host-header", "HostHeaderConfig": {"Values": ["web.example.com"]}}]
OTHER = [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/other"]}}]
LISTENERS: list[tuple[list[dict[str, Any]], str | None]] = [
    ([], None),
    ([_rule(RULE, "10", HOST, [50, 50])], RULE),
    ([_rule(OTHER_RULE, "10", OTHER, [100, 0])], None),
    ([_rule(RULE, "20", HOST, [80, 20])], RULE),
]
"""(the listener's rules, the config's own rule's ARN from its status)."""
OWN = _rule(RULE, "10", HOST, [80, 20])

ALB_SHAPES: dict[str, dict[str, Any]] = {
    "listener-rule": {
        "listenerARN": LISTENER,
        "listenerRule": {"priority": 10, "hosts": ["web.example.com"]},
        "forwardTargetGroups": [
            {"name": "web-a", "arn": TG_A, "weight": 80},
            {"name": "web-b", "arn": TG_B, "weight": 20},
        ],
    },
    "original-spelling": {
        "listenerARN": LISTENER,
        "listener": {
            "rule": {
                "priority": 10,
                "hosts": ["web.example.com"],
                "forward": {
                    "targetGroups": [
                        {"name": "web-a", "arn": TG_A, "weight": 80},
                        {"name": "web-b", "arn": TG_B, "weight": 20},
                    ]
                },
            }
        },
    },
}
"""okra's spelling, and the original okra's (`listener.rule`, read as the same)."""


def alb_outputs(raw: dict[str, Any]) -> list[Any]:
    config, problems = spec_problems(raw)
    if config is None:
        return [problems]
    spec = config.spec
    out: list[Any] = [problems, ("role", spec.role_arn)]  # the role the pass assumes (configctl)
    for rules, rule_arn in LISTENERS:
        out.append(repr(plan(spec, rules, owner=OWNER, rule_arn=rule_arn)))
    applied = applied_from_rule(spec, OWN)
    out += [in_sync(spec, OWN), drift(spec, OWN), applied and applied.model_dump()]
    return out


# -- AWSNetworkLoadBalancerConfig ---------------------------------------------------------

NLB_LISTENER = f"{PREFIX}:listener/net/tcp/1/2"
NLB_SHAPES: dict[str, dict[str, Any]] = {
    "two-groups": {
        "listenerARN": NLB_LISTENER,
        "forwardTargetGroups": [
            {"name": "web-a", "arn": TG_A, "weight": 80},
            {"name": "web-b", "arn": TG_B, "weight": 20},
        ],
    },
}


def _listener(protocol: str, weights: list[int]) -> dict[str, Any]:
    return {
        "ListenerArn": NLB_LISTENER,
        "Protocol": protocol,
        "DefaultActions": [_rule(RULE, "default", [], weights)["Actions"][0]],
    }


NLB_LISTENERS: list[dict[str, Any] | None] = [
    None,
    _listener("TCP", [50, 50]),
    _listener("TCP", [80, 20]),
    _listener("HTTP", [80, 20]),
]
"""Missing; an NLB's listener forwarding other weights, or the spec's; an ALB's."""


def nlb_outputs(raw: dict[str, Any]) -> list[Any]:
    """The NLB config's plan (nlbconfig/plan.py) against each listener, as for the ALB's."""
    config, problems = nlb.spec_problems(raw)
    if config is None:
        return [problems]
    spec = config.spec
    out: list[Any] = [problems, ("role", spec.role_arn)]  # NlbConfigReconciler's session
    for listener in NLB_LISTENERS:
        out.append(repr(nlb.plan(spec, listener)))
        out.append(nlb.in_sync(spec, listener))
    applied = nlb.applied_from_listener(spec, _listener("TCP", [50, 50]))
    return [*out, applied and applied.model_dump()]


# -- AWSRoute53RecordSetConfig ------------------------------------------------------------

LB = LoadBalancer(arn=f"{PREFIX}:loadbalancer/app/web/1", dns_name="web-1.elb", canonical_zone="Z2")
R53_BASE: dict[str, Any] = {"hostedZoneID": "Z1", "recordName": "web.example.com", "ttl": 30}
R53_SHAPES: dict[str, dict[str, Any]] = {
    "alias": {
        **R53_BASE,
        "records": [
            {
                "setIdentifier": "a",
                "weight": 80,
                "aliasTarget": {"dnsName": "a.elb", "hostedZoneID": "Z2"},
            },
            {
                "setIdentifier": "b",
                "weight": 20,
                "aliasTarget": {"dnsName": "b.elb", "hostedZoneID": "Z2"},
            },
        ],
    },
    "values": {
        **R53_BASE,
        "recordType": "CNAME",
        "records": [
            {"setIdentifier": "a", "weight": 80, "values": ["a.example.com"]},
            {"setIdentifier": "b", "weight": 20, "values": ["b.example.com"]},
        ],
    },
    "target-group": {
        **R53_BASE,
        "records": [
            {"setIdentifier": "a", "weight": 80, "targetGroupARN": TG_A},
            {"setIdentifier": "b", "weight": 20, "targetGroupARN": TG_B},
        ],
    },
}
"""Records of each kind: aliases, plain values, and target groups okra resolves to their
load balancer (one, web-b's, attached to none)."""
FOUND: list[list[dict[str, Any]]] = [
    [],
    [
        {
            "Name": "web.example.com.",
            "Type": "A",
            "SetIdentifier": "a",
            "Weight": 50,
            "AliasTarget": {
                "HostedZoneId": "Z2",
                "DNSName": "a.elb",
                "EvaluateTargetHealth": False,
            },
        },
        {
            "Name": "web.example.com.",
            "Type": "CNAME",
            "SetIdentifier": "b",
            "Weight": 50,
            "TTL": 30,
            "ResourceRecords": [{"Value": "b.example.com"}],
        },
    ],
]
"""What ListResourceRecordSets shows: nothing, or one record of each kind."""


def route53_outputs(raw: dict[str, Any]) -> list[Any]:
    """The records the config wants (route53config/plan.py's `desired`), the change it
    plans against what Route 53 shows, status.applied, when its weights take effect, and
    the zone and role the controller calls Route 53 with."""
    spec = AWSRoute53RecordSetConfig.model_validate(raw).spec
    want = r53.desired(spec, {TG_A: LB})
    out: list[Any] = [want, ("zone", zone_id(spec.hosted_zone_id)), ("role", spec.role_arn)]
    for found in FOUND:
        out += [repr(r53.plan(want.records, found)), r53.applied(spec, found).model_dump()]
    return [*out, r53.effective_at(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), spec.ttl)]
