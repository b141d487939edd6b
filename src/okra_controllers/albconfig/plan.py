"""The AWSApplicationLoadBalancerConfig's plan: pure functions from the spec and the listener's
rules (as DescribeRules returns them) to the one write that makes them serve the spec
(`plan` -> `Action`), whether AWS's rule is in sync, what it does in the config's own shape
(`status.applied`), and what drifted. No I/O; the controller observes, acts and reports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from okra_controllers.api.v1alpha1.cell import (
    AWSApplicationLoadBalancerConfig,
    AWSApplicationLoadBalancerConfigSpec,
    ForwardTargetGroup,
    HeaderCondition,
    ListenerRule,
    QueryStringCondition,
)
from okra_controllers.aws import elbv2
from okra_controllers.aws.elbv2 import OWNER_TAG, Json
from okra_controllers.lbconfig import (
    in_spec_order,
    parse_spec,
    tg_name,
    weights_note,
)


@dataclass(frozen=True)
class Create:
    """No rule at the priority and none of ours to move there: CreateRule (tagged)."""

    conditions: list[Json]
    actions: list[Json]
    priority: int


@dataclass(frozen=True)
class Modify:
    """Our rule differs: ModifyRule with only the parts that differ (None = leave)."""

    rule_arn: str
    conditions: list[Json] | None = None
    actions: list[Json] | None = None


@dataclass(frozen=True)
class Move:
    """Our rule sits at another priority (the spec's priority changed) and the new one
    is free: SetRulePriorities, so the rule keeps its ARN and no orphan is left behind."""

    rule_arn: str
    priority: int


@dataclass(frozen=True)
class Nothing:
    """The rule at the priority is ours (or adoptable) and already as wanted."""

    rule_arn: str


@dataclass(frozen=True)
class Conflict:
    """Another rule holds the priority: okra does not write."""

    message: str
    rule_arn: str


Action = Create | Modify | Move | Nothing | Conflict


def listener_of(rule_arn: str) -> str:
    """The listener ARN a rule ARN belongs to (`...:listener-rule/app/LB/ID/L/R` ->
    `...:listener/app/LB/ID/L`)."""
    return rule_arn.replace(":listener-rule/", ":listener/", 1).rsplit("/", 1)[0]


def rule_priority(rule: Mapping[str, Any]) -> int | None:
    if rule.get("IsDefault") or str(rule.get("Priority")) == "default":
        return None
    try:
        return int(rule["Priority"])
    except (KeyError, TypeError, ValueError):
        return None


def _describe(conditions: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for field_, name, values in elbv2.normal_conditions(conditions):
        shown = ",".join("=".join(v) if len(v) > 1 else v[0] for v in values)
        parts.append(f"{field_}{'[' + name + ']' if name else ''}={shown}")
    return "; ".join(parts) or "none"


def plan(
    spec: AWSApplicationLoadBalancerConfigSpec,
    rules: Sequence[Mapping[str, Any]],
    *,
    owner: str = "",
    rule_arn: str | None = None,
    tags: Mapping[str, Mapping[str, str]] | None = None,
) -> Action:
    """The one write (or none) that makes the listener's rules serve `spec`.

    `rules`: the listener's rules as DescribeRules returns them. `owner`: this config's
    `<namespace>/<name>`. `rule_arn`: the rule this config already owns
    (`status.ruleARN`). `tags`: rule ARN -> tags for the rules whose tags were read;
    the controller reads them only for the rule a first plan found in Conflict, then
    plans again.
    """
    want = elbv2.effective_rule(spec)
    conditions = elbv2.rule_conditions(want)
    actions = [elbv2.forward_action(spec.forward_target_groups)]
    candidates = [r for r in rules if rule_priority(r) is not None]
    at = next((r for r in candidates if rule_priority(r) == want.priority), None)
    if at is None:
        mine = next((r for r in candidates if rule_arn and r["RuleArn"] == rule_arn), None)
        if mine is not None:
            return Move(mine["RuleArn"], want.priority)
        return Create(conditions, actions, want.priority)
    arn = str(at["RuleArn"])
    same_conditions = elbv2.same_conditions(at.get("Conditions") or [], conditions)
    tagged = (tags or {}).get(arn, {}).get(OWNER_TAG)
    if not (arn == rule_arn or same_conditions or (owner and tagged == owner)):
        held = f"tagged {OWNER_TAG}={tagged}" if tagged else f"not tagged {OWNER_TAG}={owner}"
        return Conflict(
            f"priority {want.priority} of the listener is held by rule {arn} with other "
            f"conditions ({_describe(at.get('Conditions') or [])}), {held}: choose another "
            "spec.listenerRule.priority or remove that rule",
            arn,
        )
    new_conditions = None if same_conditions else conditions
    new_actions = None if elbv2.same_forward(at.get("Actions") or [], actions) else actions
    if new_conditions is None and new_actions is None:
        return Nothing(arn)
    return Modify(arn, new_conditions, new_actions)


def in_sync(spec: AWSApplicationLoadBalancerConfigSpec, rule: Mapping[str, Any] | None) -> bool:
    """Whether AWS's `rule` is exactly what `spec` asks for."""
    if rule is None:
        return False
    want = elbv2.effective_rule(spec)
    return (
        rule_priority(rule) == want.priority
        and elbv2.same_conditions(rule.get("Conditions") or [], elbv2.rule_conditions(want))
        and elbv2.same_forward(
            rule.get("Actions") or [], [elbv2.forward_action(spec.forward_target_groups)]
        )
    )


def same_spec(
    a: AWSApplicationLoadBalancerConfigSpec, b: AWSApplicationLoadBalancerConfigSpec
) -> bool:
    """Whether two specs ask for the same rule: how the Cell controller should compare
    `status.applied` with what it wrote (order-insensitive; a missing `listenerRule` is
    the catch-all rule that `applied` spells out)."""
    ra, rb = elbv2.effective_rule(a), elbv2.effective_rule(b)
    return (
        a.listener_arn == b.listener_arn
        and ra.priority == rb.priority
        and elbv2.same_conditions(elbv2.rule_conditions(ra), elbv2.rule_conditions(rb))
        and elbv2.same_forward(
            [elbv2.forward_action(a.forward_target_groups)],
            [elbv2.forward_action(b.forward_target_groups)],
        )
    )


def applied_from_rule(
    spec: AWSApplicationLoadBalancerConfigSpec, rule: Mapping[str, Any]
) -> AWSApplicationLoadBalancerConfigSpec | None:
    """What `rule` does, in the config's own shape (`status.applied`); names of target
    groups come from the spec where it lists them. None when the rule cannot be said in
    that shape (no weighted forward, say), which never equals a valid spec."""
    want = elbv2.effective_rule(spec)
    hosts: list[str] = []
    paths: list[str] = []
    methods: list[str] = []
    ips: list[str] = []
    headers: list[HeaderCondition] = []
    queries: list[QueryStringCondition] = []
    try:
        for c in rule.get("Conditions") or []:
            values = elbv2.condition_values(c)
            match c.get("Field"):
                case "host-header":
                    hosts += values
                case "path-pattern":
                    paths += values
                case "http-request-method":
                    methods += values
                case "source-ip":
                    ips += values
                case "http-header":
                    name = (c.get("HttpHeaderConfig") or {}).get("HttpHeaderName", "")
                    headers.append(HeaderCondition(name=name, values=values))
                case "query-string":
                    queries += [
                        QueryStringCondition(key=v.get("Key"), value=v["Value"]) for v in values
                    ]
        forwards = [a for a in rule.get("Actions") or [] if a.get("Type") == "forward"]
        names = {tg.arn: tg.name for tg in spec.forward_target_groups}
        tgs = [
            ForwardTargetGroup(name=names.get(arn) or tg_name(arn), arn=arn, weight=weight)
            for arn, weight in (elbv2.forward_weights(forwards[0]) if len(forwards) == 1 else ())
        ]
        listener_rule = ListenerRule(
            priority=rule_priority(rule) or want.priority,
            hosts=in_spec_order(hosts, want.hosts, str.lower),
            path_patterns=in_spec_order(paths, want.path_patterns, str),
            methods=in_spec_order(methods, want.methods, str),
            sourceIPs=in_spec_order(ips, want.source_i_ps, str),
            headers=in_spec_order(headers, want.headers, lambda h: h.name.lower()),
            query_strings=in_spec_order(
                queries, want.query_strings, lambda q: (q.key or "", q.value)
            ),
        )
        return AWSApplicationLoadBalancerConfigSpec(
            listenerARN=listener_of(str(rule["RuleArn"])),
            listener_rule=listener_rule,
            forward_target_groups=in_spec_order(tgs, spec.forward_target_groups, lambda t: t.arn),
        )
    except (ValidationError, KeyError, TypeError, AttributeError):
        return None


def spec_problems(
    raw: Mapping[str, Any],
) -> tuple[AWSApplicationLoadBalancerConfig | None, list[str]]:
    """The parsed config, or the problems with it, each naming the field."""
    return parse_spec(AWSApplicationLoadBalancerConfig, raw, lambda c: elbv2.validate(c.spec))


def drift_message(found: str) -> str:
    """The DriftRepaired Event's and notification's message for `drift`'s finding."""
    return f"the listener rule was changed outside okra ({found}); restored"


def drift(spec: AWSApplicationLoadBalancerConfigSpec, rule: Mapping[str, Any] | None) -> str:
    """What differs between okra's applied rule and `rule` as found in AWS."""
    if rule is None:
        return "rule deleted"
    want = elbv2.effective_rule(spec)
    found: list[str] = []
    if rule_priority(rule) != want.priority:
        found.append(f"priority {rule_priority(rule)} instead of {want.priority}")
    if not elbv2.same_conditions(rule.get("Conditions") or [], elbv2.rule_conditions(want)):
        found.append(
            f"conditions {_describe(rule.get('Conditions') or [])} instead of "
            f"{_describe(elbv2.rule_conditions(want))}"
        )
    wanted = [elbv2.forward_action(spec.forward_target_groups)]
    if not elbv2.same_forward(rule.get("Actions") or [], wanted):
        have = weights_note(rule.get("Actions") or []).removeprefix(": ") or "no forward action"
        found.append(f"weights {have} instead of {weights_note(wanted).removeprefix(': ')}")
    return "; ".join(found) or "rule differs"
