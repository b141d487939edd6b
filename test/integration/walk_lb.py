"""The load balancer configs: shapes and judges for the field walk (test_every_field_acts.py).

An AWSApplicationLoadBalancerConfig is judged by its plan (`albconfig/plan.py`) against a
few listeners as DescribeRules shows them: empty; a rule of the config's at its priority
serving other weights; another rule holding its priority with other conditions; the
config's own rule at another priority. Beside the plan: the problems okra finds in the
spec, whether the config's own rule is in sync and how it drifted, what it does in the
config's shape (`status.applied`), and the role the controller calls AWS with.
"""

from __future__ import annotations

from typing import Any

from okra_controllers.albconfig.plan import (
    applied_from_rule,
    drift,
    in_sync,
    plan,
    spec_problems,
)

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
    out: list[Any] = [problems, ("role", spec.role_arn)]  # AlbConfigReconciler._elb's
    for rules, rule_arn in LISTENERS:
        out.append(repr(plan(spec, rules, owner=OWNER, rule_arn=rule_arn)))
    applied = applied_from_rule(spec, OWN)
    out += [in_sync(spec, OWN), drift(spec, OWN), applied and applied.model_dump()]
    return out
