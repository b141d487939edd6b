"""ELBv2 listener rules (ALB) and listener default actions (NLB) for okra's controllers:
one small function per AWS call, plus the translation between okra's model and the
API's shapes; and the account's target groups with their tags, read in one batched walk
(`tagged_target_groups`) for target groups found by tag.

Why the comparisons here are not plain `==`: DescribeRules does not hand back what
CreateRule was given. It returns conditions in its own order, values in its own order,
the legacy `Values` list beside the `*Config` form, and adds fields (`Order` on
actions, stickiness defaults). A controller that compared raw dicts would call
ModifyRule on every resync of an idle rule, which costs API quota and, worse, makes
"did AWS apply what we planned?" unanswerable. `same_conditions` and `same_forward`
compare *meaning*: order-insensitive, host and header names case-insensitive (as the
ALB matches them), legacy and `*Config` forms alike.

Every async function takes `aws`: an `AwsConfig` (a client is opened for the one
call) or an already-open elbv2 client, so a reconcile can share one client across its
calls; opening a client costs tens of milliseconds of CPU.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from okra_controllers.api.v1alpha1.cell import (
    AWSApplicationLoadBalancerConfigSpec,
    ForwardTargetGroup,
    ListenerRule,
)
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.errors import error_code

OWNER_TAG = "okra.mumo.co/owner"
"""Tag on every rule okra creates: `<namespace>/<name>` of the config that owns it."""

MAX_TARGET_GROUPS = 5
"""Target groups in one forward action (ALB quota)."""
MAX_WEIGHT = 999
MIN_PRIORITY, MAX_PRIORITY = 1, 50000
MAX_CONDITION_VALUES = 5
"""Condition values per rule (ALB quota "condition values per rule")."""
PAGE_SIZE = 400
"""DescribeRules' largest page: one call covers a listener at the default rule quota (100)."""
TARGET_GROUP_PAGE_SIZE = 400
"""DescribeTargetGroups' largest page."""
TAGS_BATCH = 20
"""ARNs in one DescribeTags call: AWS refuses more."""
TAGS_CONCURRENCY = 4
"""DescribeTags calls in flight at once while reading many target groups' tags."""

DEFAULT_RULE = ListenerRule(priority=MAX_PRIORITY, path_patterns=["/*"])
"""The rule a config without `listenerRule` gets, as in the original okra: every path,
evaluated last before the listener's default action."""

Json = dict[str, Any]


@asynccontextmanager
async def _elb(aws: AwsConfig | Any) -> AsyncIterator[Any]:
    if isinstance(aws, AwsConfig):
        async with aws.client("elbv2") as client:
            yield client
    else:
        yield aws


# --- AWS calls -----------------------------------------------------------------------------


async def describe_rules(aws: AwsConfig | Any, listener_arn: str) -> list[Json]:
    """Every rule of the listener, the default rule included (`IsDefault`), following
    `NextMarker` if the listener has more rules than one page holds."""
    rules: list[Json] = []
    kwargs: Json = {"ListenerArn": listener_arn, "PageSize": PAGE_SIZE}
    async with _elb(aws) as elb:
        while True:
            out = await elb.describe_rules(**kwargs)
            rules.extend(out.get("Rules", []))
            marker = out.get("NextMarker")
            if not marker:
                return rules
            kwargs["Marker"] = marker


async def describe_rule(aws: AwsConfig | Any, rule_arn: str) -> Json | None:
    """One rule by ARN (the read-back after a write); None if it does not exist."""
    async with _elb(aws) as elb:
        try:
            out = await elb.describe_rules(RuleArns=[rule_arn])
        except elb.exceptions.RuleNotFoundException:
            return None
    rules: list[Json] = out.get("Rules", [])
    return rules[0] if rules else None


async def create_rule(
    aws: AwsConfig | Any,
    listener_arn: str,
    priority: int,
    conditions: Sequence[Json],
    actions: Sequence[Json],
    tags: Mapping[str, str],
) -> Json:
    """CreateRule with its tags in the same call, so no rule okra made is ever untagged."""
    async with _elb(aws) as elb:
        out = await elb.create_rule(
            ListenerArn=listener_arn,
            Priority=priority,
            Conditions=list(conditions),
            Actions=list(actions),
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
        )
    rule: Json = out["Rules"][0]
    return rule


async def modify_rule(
    aws: AwsConfig | Any,
    rule_arn: str,
    conditions: Sequence[Json] | None = None,
    actions: Sequence[Json] | None = None,
) -> Json:
    """ModifyRule with only the parts given: AWS leaves an omitted part as it is."""
    kwargs: Json = {"RuleArn": rule_arn}
    if conditions is not None:
        kwargs["Conditions"] = list(conditions)
    if actions is not None:
        kwargs["Actions"] = list(actions)
    async with _elb(aws) as elb:
        out = await elb.modify_rule(**kwargs)
    rule: Json = out["Rules"][0]
    return rule


async def set_rule_priority(aws: AwsConfig | Any, rule_arn: str, priority: int) -> None:
    """Move a rule (SetRulePriorities), keeping its ARN, tags and forward weights."""
    async with _elb(aws) as elb:
        await elb.set_rule_priorities(RulePriorities=[{"RuleArn": rule_arn, "Priority": priority}])


async def delete_rule(aws: AwsConfig | Any, rule_arn: str) -> bool:
    """DeleteRule; False if the rule was already gone (deleting is then done, not failed)."""
    async with _elb(aws) as elb:
        try:
            await elb.delete_rule(RuleArn=rule_arn)
        except elb.exceptions.RuleNotFoundException:
            return False
    return True


async def rule_tags(aws: AwsConfig | Any, rule_arn: str) -> dict[str, str]:
    """The rule's tags (DescribeTags). DescribeRules does not return tags, so this is
    read only when ownership cannot be told from the rule itself."""
    async with _elb(aws) as elb:
        out = await elb.describe_tags(ResourceArns=[rule_arn])
    for desc in out.get("TagDescriptions", []):
        if desc.get("ResourceArn") == rule_arn:
            return {t["Key"]: t.get("Value", "") for t in desc.get("Tags", [])}
    return {}


@dataclass(frozen=True)
class TaggedTargetGroup:
    """A target group as DescribeTargetGroups and DescribeTags show it."""

    arn: str
    name: str
    tags: Mapping[str, str] = field(default_factory=dict)


def batches(items: Sequence[str], size: int = TAGS_BATCH) -> list[list[str]]:
    """`items` in order, cut into lists of at most `size`."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


async def tagged_target_groups(aws: AwsConfig | Any) -> list[TaggedTargetGroup]:
    """Every target group of the account and region with its tags: DescribeTargetGroups
    page by page (`NextMarker`), then DescribeTags for at most `TAGS_BATCH` ARNs a call.

    DescribeTags refuses a whole batch when one of its target groups was deleted after the
    listing; that batch is then asked one ARN at a time and the deleted groups are left out
    (they are gone, which is what a caller pruning by this answer must see). Every other
    error is raised: the caller knows nothing and must change nothing."""
    groups: list[Json] = []
    kwargs: Json = {"PageSize": TARGET_GROUP_PAGE_SIZE}
    async with _elb(aws) as elb:
        while True:
            out = await elb.describe_target_groups(**kwargs)
            groups.extend(out.get("TargetGroups", []))
            marker = out.get("NextMarker")
            if not marker:
                break
            kwargs["Marker"] = marker
        arns = list(dict.fromkeys(g["TargetGroupArn"] for g in groups))
        gate = asyncio.Semaphore(TAGS_CONCURRENCY)

        async def ask(batch: list[str]) -> dict[str, dict[str, str]]:
            found = await elb.describe_tags(ResourceArns=batch)
            return {
                d["ResourceArn"]: {t["Key"]: t.get("Value", "") for t in d.get("Tags", [])}
                for d in found.get("TagDescriptions", [])
            }

        async def describe(batch: list[str]) -> dict[str, dict[str, str]]:
            async with gate:
                try:
                    return await ask(batch)
                except ClientError as e:
                    if error_code(e) != "TargetGroupNotFound":
                        raise
                tags: dict[str, dict[str, str]] = {}
                for arn in batch:
                    try:
                        tags |= await ask([arn])
                    except ClientError as e:
                        if error_code(e) != "TargetGroupNotFound":
                            raise
                return tags

        tags: dict[str, dict[str, str]] = {}
        for part in await asyncio.gather(*(describe(b) for b in batches(arns))):
            tags |= part
    return [
        TaggedTargetGroup(g["TargetGroupArn"], g.get("TargetGroupName", ""), tags[arn])
        for g in groups
        if (arn := g["TargetGroupArn"]) in tags
    ]


async def describe_listener(aws: AwsConfig | Any, listener_arn: str) -> Json | None:
    """One listener by ARN (protocol, default actions); None if it does not exist."""
    async with _elb(aws) as elb:
        try:
            out = await elb.describe_listeners(ListenerArns=[listener_arn])
        except elb.exceptions.ListenerNotFoundException:
            return None
    listeners: list[Json] = out.get("Listeners", [])
    return listeners[0] if listeners else None


async def modify_default_actions(
    aws: AwsConfig | Any, listener_arn: str, actions: Sequence[Json]
) -> Json:
    """ModifyListener with only `DefaultActions`: port, protocol and certificates stay."""
    async with _elb(aws) as elb:
        out = await elb.modify_listener(ListenerArn=listener_arn, DefaultActions=list(actions))
    listener: Json = out["Listeners"][0]
    return listener


async def target_health(aws: AwsConfig | Any, tg_arn: str) -> dict[str, str]:
    """Target id -> state (`healthy`, `unhealthy`, `initial`, `draining`, `unused`, ...)."""
    async with _elb(aws) as elb:
        out = await elb.describe_target_health(TargetGroupArn=tg_arn)
    return {
        d["Target"]["Id"]: d.get("TargetHealth", {}).get("State", "unavailable")
        for d in out.get("TargetHealthDescriptions", [])
    }


# --- our model -> the API ------------------------------------------------------------------


def effective_rule(spec: AWSApplicationLoadBalancerConfigSpec) -> ListenerRule:
    """The rule a spec asks for; without `listenerRule`, the catch-all `DEFAULT_RULE`."""
    return spec.listener_rule if spec.listener_rule is not None else DEFAULT_RULE


def rule_conditions(rule: ListenerRule) -> list[Json]:
    """ELBv2 `Conditions` for the rule. Values inside one condition are ORed; the
    conditions are ANDed: one condition per field, one per header."""
    out: list[Json] = []
    if rule.hosts:
        out.append({"Field": "host-header", "HostHeaderConfig": {"Values": list(rule.hosts)}})
    if rule.path_patterns:
        out.append(
            {"Field": "path-pattern", "PathPatternConfig": {"Values": list(rule.path_patterns)}}
        )
    if rule.methods:
        out.append(
            {
                "Field": "http-request-method",
                "HttpRequestMethodConfig": {"Values": list(rule.methods)},
            }
        )
    if rule.source_i_ps:
        out.append({"Field": "source-ip", "SourceIpConfig": {"Values": list(rule.source_i_ps)}})
    for h in rule.headers:
        out.append(
            {
                "Field": "http-header",
                "HttpHeaderConfig": {"HttpHeaderName": h.name, "Values": list(h.values)},
            }
        )
    if rule.query_strings:
        pairs: list[Json] = [
            {"Value": q.value} if q.key is None else {"Key": q.key, "Value": q.value}
            for q in rule.query_strings
        ]
        out.append({"Field": "query-string", "QueryStringConfig": {"Values": pairs}})
    return out


def forward_action(tgs: Sequence[ForwardTargetGroup]) -> Json:
    """A weighted forward. Stickiness is explicitly off: with it on, clients stuck to the
    old version would not follow a weight change, and a canary would measure nothing."""
    return {
        "Type": "forward",
        "ForwardConfig": {
            "TargetGroups": [{"TargetGroupArn": tg.arn, "Weight": tg.weight} for tg in tgs],
            "TargetGroupStickinessConfig": {"Enabled": False},
        },
    }


# --- comparing what AWS shows with what we want --------------------------------------------

_CONFIG_KEY = {
    "host-header": "HostHeaderConfig",
    "path-pattern": "PathPatternConfig",
    "http-request-method": "HttpRequestMethodConfig",
    "source-ip": "SourceIpConfig",
    "http-header": "HttpHeaderConfig",
    "query-string": "QueryStringConfig",
}

NormalCondition = tuple[str, str, tuple[tuple[str, ...], ...]]
NormalAction = tuple[Any, ...]


def condition_values(condition: Mapping[str, Any]) -> list[Any]:
    """The condition's values from its `*Config` form, else the legacy `Values` list."""
    config = condition.get(_CONFIG_KEY.get(str(condition.get("Field")), ""), None) or {}
    values = config.get("Values")
    if values is None:
        values = condition.get("Values") or []
    return list(values)


def _cidr(value: str) -> str:
    try:
        return str(ipaddress.ip_network(value.strip(), strict=False))
    except ValueError:
        return value


def normal_condition(condition: Mapping[str, Any]) -> NormalCondition:
    """One condition in a canonical, hashable form: (field, header name, sorted values)."""
    field = str(condition.get("Field", ""))
    values = condition_values(condition)
    name = ""
    vals: Iterable[tuple[str, ...]]
    if field == "host-header":
        vals = ((str(v).lower(),) for v in values)
    elif field == "source-ip":
        vals = ((_cidr(str(v)),) for v in values)
    elif field == "http-header":
        config = condition.get("HttpHeaderConfig") or {}
        name = str(config.get("HttpHeaderName", "")).lower()
        vals = ((str(v),) for v in values)
    elif field == "query-string":
        vals = ((str(v.get("Key") or ""), str(v.get("Value", ""))) for v in values)
    elif field in _CONFIG_KEY:
        vals = ((str(v),) for v in values)
    else:  # a field okra does not model: compare it whole
        vals = ((json.dumps(dict(condition), sort_keys=True, default=str),),)
    return field, name, tuple(sorted(set(vals)))


def normal_conditions(conditions: Iterable[Mapping[str, Any]]) -> tuple[NormalCondition, ...]:
    return tuple(sorted(normal_condition(c) for c in conditions))


def same_conditions(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> bool:
    """Whether two `Conditions` lists match the same requests (order-insensitive)."""
    return normal_conditions(a) == normal_conditions(b)


def forward_weights(action: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    """(target group ARN, weight) pairs of a forward action, sorted. A bare
    `TargetGroupArn` (the pre-weights form) forwards everything: weight 1."""
    config = action.get("ForwardConfig") or {}
    groups = config.get("TargetGroups")
    if groups:
        return tuple(sorted((str(g["TargetGroupArn"]), int(g.get("Weight", 1))) for g in groups))
    if action.get("TargetGroupArn"):
        return ((str(action["TargetGroupArn"]), 1),)
    return ()


def _normal_action(action: Mapping[str, Any]) -> NormalAction:
    if action.get("Type") == "forward":
        stickiness = (action.get("ForwardConfig") or {}).get("TargetGroupStickinessConfig") or {}
        enabled = bool(stickiness.get("Enabled", False))
        duration = stickiness.get("DurationSeconds") if enabled else None
        return ("forward", forward_weights(action), enabled, duration)
    rest = {k: v for k, v in action.items() if k != "Order"}
    return (str(action.get("Type", "")), json.dumps(rest, sort_keys=True, default=str))


def normal_actions(actions: Iterable[Mapping[str, Any]]) -> tuple[NormalAction, ...]:
    """Actions in evaluation order (`Order`, else list order), each canonical."""
    indexed = sorted(enumerate(actions), key=lambda ia: (int(ia[1].get("Order", 0)), ia[0]))
    return tuple(_normal_action(a) for _, a in indexed)


def same_forward(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]]) -> bool:
    """Whether two `Actions` lists do the same: same target groups with the same weights
    (in any order), same stickiness, same other actions."""
    return normal_actions(a) == normal_actions(b)


# --- validation ----------------------------------------------------------------------------


def validate(spec: AWSApplicationLoadBalancerConfigSpec) -> list[str]:
    """What AWS would reject or what cannot be what the user meant, each message naming
    the field and saying what to change. The CRD schema already rejects some of these;
    they are checked again because specs are also built in code (by the Cell controller)
    and the schema cannot see across list items (duplicates, total weight)."""
    problems: list[str] = []
    if ":listener/app/" not in spec.listener_arn:
        problems.append(
            f"spec.listenerARN: {spec.listener_arn!r} is not an Application Load Balancer "
            "listener ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:listener/app/...)"
        )
    problems += validate_target_groups(spec.forward_target_groups, "ALB")
    problems += _validate_rule(spec.listener_rule)
    return problems


def validate_target_groups(tgs: Sequence[ForwardTargetGroup], lb: str) -> list[str]:
    """The forward's limits, the same for an ALB rule and an NLB listener (`lb` names
    which in the messages): 1..5 target groups, each once, weights 0..999, not all 0."""
    where = "spec.forwardTargetGroups"
    problems: list[str] = []
    if not tgs:
        problems.append(f"{where}: at least one target group is required")
    if len(tgs) > MAX_TARGET_GROUPS:
        problems.append(
            f"{where}: {len(tgs)} target groups, but one {lb} forward action takes at most "
            f"{MAX_TARGET_GROUPS}"
        )
    first: dict[str, int] = {}
    for i, tg in enumerate(tgs):
        if not 0 <= tg.weight <= MAX_WEIGHT:
            problems.append(
                f"{where}[{i}].weight: {tg.weight} is out of range; {lb} weights are "
                f"0..{MAX_WEIGHT}"
            )
        if ":targetgroup/" not in tg.arn:
            problems.append(f"{where}[{i}].arn: {tg.arn!r} is not a target group ARN")
        if tg.arn in first:
            problems.append(
                f"{where}[{i}].arn: the same target group as {where}[{first[tg.arn]}]; "
                "list each target group once"
            )
        first.setdefault(tg.arn, i)
    if tgs and sum(tg.weight for tg in tgs) <= 0:
        problems.append(
            f"{where}: every weight is 0; at least one target group needs a weight above 0"
        )
    return problems


def _validate_rule(rule: ListenerRule | None) -> list[str]:
    if rule is None:
        return []  # DEFAULT_RULE is valid
    where = "spec.listenerRule"
    problems: list[str] = []
    if not MIN_PRIORITY <= rule.priority <= MAX_PRIORITY:
        problems.append(
            f"{where}.priority: {rule.priority} is out of range; a listener rule's priority "
            f"is {MIN_PRIORITY}..{MAX_PRIORITY}"
        )
    if not rule.has_condition():
        problems.append(
            f"{where}: no condition; a rule other than the listener's default needs at least "
            "one of hosts, pathPatterns, methods, sourceIPs, headers, queryStrings "
            '(for every request use pathPatterns: ["/*"])'
        )
    for i, m in enumerate(rule.methods):
        if not m or m.upper() != m or not all(c.isalpha() or c in "-_" for c in m):
            problems.append(
                f"{where}.methods[{i}]: {m!r}; ALB compares methods case-sensitively and "
                f"allows A-Z, '-' and '_': write {m.upper()!r}"
            )
    counts = {
        "hosts": len(rule.hosts),
        "pathPatterns": len(rule.path_patterns),
        "methods": len(rule.methods),
        "sourceIPs": len(rule.source_i_ps),
        "headers[*].values": sum(len(h.values) for h in rule.headers),
        "queryStrings": len(rule.query_strings),
    }
    total = sum(counts.values())
    if total > MAX_CONDITION_VALUES:
        used = ", ".join(f"{k} {v}" for k, v in counts.items() if v)
        problems.append(
            f"{where}: {total} condition values ({used}), but an ALB rule allows at most "
            f"{MAX_CONDITION_VALUES}"
        )
    return problems
