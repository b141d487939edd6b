"""The load balancer config the Cell's traffic goes through, as the Cell writes it: the
AWSApplicationLoadBalancerConfig's or AWSNetworkLoadBalancerConfig's spec (the listener
and the weighted forward), or the AWSRoute53RecordSetConfig's (one weighted record per
target group). Pure: the Cell controller applies the object (`cell/act.py`) when it
differs from the config the cache holds."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from okra_controllers.api.kinds import ROUTE53_CONFIG
from okra_controllers.api.v1alpha1.cell import Cell, CellALB, CellNLB, CellRoute53, ListenerRule
from okra_controllers.cell.plan import Forward

DEFAULT_RULE = ListenerRule(priority=50000, path_patterns=["/*"])


def config_spec(cell: Cell, forward: Iterable[Forward]) -> tuple[str, dict[str, Any]]:
    """The kind and spec of the Cell's load balancer config with these weights (the
    Cell has an ingress with a listener)."""
    assert cell.spec.ingress is not None
    lb = cell.spec.ingress.listener()
    assert lb is not None
    if isinstance(lb, CellRoute53):
        return ROUTE53_CONFIG.kind, route53_spec(lb, forward)
    return listener_spec(cell, lb, forward)


def listener_spec(
    cell: Cell, lb: CellALB | CellNLB, forward: Iterable[Forward]
) -> tuple[str, dict[str, Any]]:
    """The ALB or NLB config's spec: the listener and the weighted forward."""
    assert cell.spec.ingress is not None
    spec: dict[str, Any] = {"listenerARN": lb.listener_arn}
    kind = "AWSNetworkLoadBalancerConfig"
    if not cell.spec.ingress.network:  # an ALB: okra's rule; an NLB: the default action
        kind = "AWSApplicationLoadBalancerConfig"
        rule = getattr(lb, "listener_rule", None) or DEFAULT_RULE
        spec["listenerRule"] = rule.model_dump(by_alias=True, exclude_defaults=False, mode="json")
    spec["forwardTargetGroups"] = [
        {"name": f.name, "arn": f.arn, "weight": f.weight}
        for f in sorted(forward, key=lambda f: f.name)
    ]
    if lb.role_arn:
        spec["roleARN"] = lb.role_arn
    return kind, spec


def route53_spec(lb: CellRoute53, forward: Iterable[Forward]) -> dict[str, Any]:
    """The AWSRoute53RecordSetConfig's spec: one weighted record per target group with
    weight, named by the target group (`SetIdentifier`) and pointing at its load balancer;
    a version's share is its records' weight (Route 53 weights are relative, and the
    shares total 100). Every field spelled out, defaults too, so that an unchanged spec
    compares equal to the one the API server holds."""
    spec: dict[str, Any] = {
        "hostedZoneID": lb.hosted_zone_id,
        "recordName": lb.record_name,
        "recordType": lb.record_type,
        "ttl": lb.ttl,
        "records": [
            {"setIdentifier": f.name, "weight": f.weight, "targetGroupARN": f.arn}
            for f in sorted(forward, key=lambda f: f.name)
        ],
    }
    if lb.role_arn:
        spec["roleARN"] = lb.role_arn
    return spec
