"""The ALB config controller's pure parts: our model -> ELBv2 shapes, comparing what AWS
returns with what we want (so an idle rule never gets a spurious ModifyRule), validation
messages, and `plan`, the one write a reconcile makes."""

from __future__ import annotations

import copy
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.albconfig.plan import (
    Conflict,
    Create,
    Modify,
    Move,
    Nothing,
    applied_from_rule,
    in_sync,
    listener_of,
    plan,
    same_spec,
    spec_problems,
)
from okra_controllers.api.v1alpha1.cell import (
    AWSApplicationLoadBalancerConfigSpec,
    ForwardTargetGroup,
    HeaderCondition,
    ListenerRule,
    QueryStringCondition,
)
from okra_controllers.aws.elbv2 import (
    OWNER_TAG,
    forward_action,
    rule_conditions,
    same_conditions,
    same_forward,
    validate,
)

PREFIX = "arn:aws:elasticloadbalancing:us-east-1:123456789012"
LISTENER = f"{PREFIX}:listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
RULE = f"{PREFIX}:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/9683b2d02a6cabee"
OTHER_RULE = f"{PREFIX}:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/0000000000000001"
DEFAULT_RULE = f"{PREFIX}:listener-rule/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2/default01"
OWNER = "prod/web"


def tg_arn(name: str) -> str:
    return f"{PREFIX}:targetgroup/{name}/{zlib.crc32(name.encode()):016x}"


def tg(name: str, weight: int) -> ForwardTargetGroup:
    return ForwardTargetGroup(name=name, arn=tg_arn(name), weight=weight)


def spec(
    tgs: list[ForwardTargetGroup] | None = None, rule: ListenerRule | None = None
) -> AWSApplicationLoadBalancerConfigSpec:
    return AWSApplicationLoadBalancerConfigSpec(
        listenerARN=LISTENER,
        listener_rule=rule
        if rule is not None
        else ListenerRule(priority=10, hosts=["web.example.com"]),
        forward_target_groups=tgs if tgs is not None else [tg("v1", 80), tg("v2", 20)],
    )


def default_rule() -> dict[str, Any]:
    return {
        "RuleArn": DEFAULT_RULE,
        "Priority": "default",
        "Conditions": [],
        "Actions": [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}],
        "IsDefault": True,
    }


def aws_rule(
    s: AWSApplicationLoadBalancerConfigSpec, arn: str = RULE, priority: int | None = None
) -> dict[str, Any]:
    """The rule as DescribeRules shows it after CreateRule from `s`: legacy `Values`
    beside the *Config form for host/path, `Order` on actions, priority as a string."""
    rule = s.listener_rule or ListenerRule(priority=50000, path_patterns=["/*"])
    conditions = rule_conditions(rule)
    for c in conditions:
        if c["Field"] == "host-header":
            c["Values"] = list(c["HostHeaderConfig"]["Values"])
        if c["Field"] == "path-pattern":
            c["Values"] = list(c["PathPatternConfig"]["Values"])
    action = forward_action(s.forward_target_groups)
    action["Order"] = 1
    return {
        "RuleArn": arn,
        "Priority": str(priority if priority is not None else rule.priority),
        "Conditions": conditions,
        "Actions": [action],
        "IsDefault": False,
    }


# --- our model -> ELBv2 ----------------------------------------------------------------------


def test_rule_conditions_one_condition_per_field_and_per_header() -> None:
    rule = ListenerRule(
        priority=5,
        hosts=["a.example.com", "b.example.com"],
        path_patterns=["/api/*"],
        methods=["GET", "HEAD"],
        sourceIPs=["10.0.0.0/8"],
        headers=[
            HeaderCondition(name="X-Canary", values=["1"]),
            HeaderCondition(name="User-Agent", values=["*Mobile*", "*Android*"]),
        ],
        query_strings=[
            QueryStringCondition(key="version", value="v2"),
            QueryStringCondition(value="beta"),
        ],
    )
    assert rule_conditions(rule) == [
        {
            "Field": "host-header",
            "HostHeaderConfig": {"Values": ["a.example.com", "b.example.com"]},
        },
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}},
        {"Field": "http-request-method", "HttpRequestMethodConfig": {"Values": ["GET", "HEAD"]}},
        {"Field": "source-ip", "SourceIpConfig": {"Values": ["10.0.0.0/8"]}},
        {
            "Field": "http-header",
            "HttpHeaderConfig": {"HttpHeaderName": "X-Canary", "Values": ["1"]},
        },
        {
            "Field": "http-header",
            "HttpHeaderConfig": {
                "HttpHeaderName": "User-Agent",
                "Values": ["*Mobile*", "*Android*"],
            },
        },
        {
            "Field": "query-string",
            "QueryStringConfig": {"Values": [{"Key": "version", "Value": "v2"}, {"Value": "beta"}]},
        },
    ]


def test_rule_conditions_leave_out_empty_fields() -> None:
    assert rule_conditions(ListenerRule(path_patterns=["/*"])) == [
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/*"]}}
    ]


def test_forward_action_is_weighted_without_stickiness() -> None:
    assert forward_action([tg("v1", 80), tg("v2", 20)]) == {
        "Type": "forward",
        "ForwardConfig": {
            "TargetGroups": [
                {"TargetGroupArn": tg_arn("v1"), "Weight": 80},
                {"TargetGroupArn": tg_arn("v2"), "Weight": 20},
            ],
            "TargetGroupStickinessConfig": {"Enabled": False},
        },
    }


def test_listener_of_a_rule_arn() -> None:
    assert listener_of(RULE) == LISTENER


# --- same_conditions -------------------------------------------------------------------------


def test_same_conditions_ignores_order_of_conditions_and_values() -> None:
    a = [
        {"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example", "b.example"]}},
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/x", "/y"]}},
    ]
    b = [
        {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/y", "/x"]}},
        {"Field": "host-header", "HostHeaderConfig": {"Values": ["b.example", "a.example"]}},
    ]
    assert same_conditions(a, b)


def test_same_conditions_reads_legacy_values_and_ignores_added_fields() -> None:
    legacy = [{"Field": "path-pattern", "Values": ["/api/*"]}]
    both = [
        {
            "Field": "path-pattern",
            "Values": ["/api/*"],
            "PathPatternConfig": {"Values": ["/api/*"]},
            "RegexValues": None,
        }
    ]
    modern = [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}}]
    assert same_conditions(legacy, modern)
    assert same_conditions(both, modern)


def test_same_conditions_host_and_header_names_are_case_insensitive() -> None:
    assert same_conditions(
        [{"Field": "host-header", "HostHeaderConfig": {"Values": ["Web.Example.COM"]}}],
        [{"Field": "host-header", "HostHeaderConfig": {"Values": ["web.example.com"]}}],
    )
    assert same_conditions(
        [
            {
                "Field": "http-header",
                "HttpHeaderConfig": {"HttpHeaderName": "x-canary", "Values": ["1"]},
            }
        ],
        [
            {
                "Field": "http-header",
                "HttpHeaderConfig": {"HttpHeaderName": "X-Canary", "Values": ["1"]},
            }
        ],
    )


def test_same_conditions_paths_and_methods_are_case_sensitive() -> None:
    assert not same_conditions(
        [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/API"]}}],
        [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api"]}}],
    )
    assert not same_conditions(
        [{"Field": "http-request-method", "HttpRequestMethodConfig": {"Values": ["get"]}}],
        [{"Field": "http-request-method", "HttpRequestMethodConfig": {"Values": ["GET"]}}],
    )


def test_same_conditions_source_ips_compare_as_networks() -> None:
    assert same_conditions(
        [{"Field": "source-ip", "SourceIpConfig": {"Values": ["2001:DB8::/32", "10.1.2.3/8"]}}],
        [{"Field": "source-ip", "SourceIpConfig": {"Values": ["10.0.0.0/8", "2001:db8::/32"]}}],
    )


def test_same_conditions_query_strings_pair_keys_with_values() -> None:
    a = [{"Field": "query-string", "QueryStringConfig": {"Values": [{"Key": "a", "Value": "1"}]}}]
    swapped = [
        {"Field": "query-string", "QueryStringConfig": {"Values": [{"Key": "1", "Value": "a"}]}}
    ]
    keyless = [{"Field": "query-string", "QueryStringConfig": {"Values": [{"Value": "1"}]}}]
    assert same_conditions(a, copy.deepcopy(a))
    assert not same_conditions(a, swapped)
    assert not same_conditions(a, keyless)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param(
            [{"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example"]}}],
            [{"Field": "host-header", "HostHeaderConfig": {"Values": ["b.example"]}}],
            id="other value",
        ),
        pytest.param(
            [{"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example"]}}],
            [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["a.example"]}}],
            id="other field",
        ),
        pytest.param(
            [{"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example"]}}],
            [
                {"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example"]}},
                {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/*"]}},
            ],
            id="extra condition",
        ),
        pytest.param(
            [
                {
                    "Field": "http-header",
                    "HttpHeaderConfig": {"HttpHeaderName": "A", "Values": ["1"]},
                }
            ],
            [
                {
                    "Field": "http-header",
                    "HttpHeaderConfig": {"HttpHeaderName": "B", "Values": ["1"]},
                }
            ],
            id="other header",
        ),
        pytest.param([], [{"Field": "path-pattern", "Values": ["/*"]}], id="none vs one"),
    ],
)
def test_same_conditions_detects_real_differences(
    a: list[dict[str, Any]], b: list[dict[str, Any]]
) -> None:
    assert not same_conditions(a, b)
    assert not same_conditions(b, a)


# --- same_forward ----------------------------------------------------------------------------


def test_same_forward_ignores_target_group_order_and_added_fields() -> None:
    want = [forward_action([tg("v1", 80), tg("v2", 20)])]
    shown = [
        {
            "Type": "forward",
            "Order": 1,
            "ForwardConfig": {
                "TargetGroups": [
                    {"TargetGroupArn": tg_arn("v2"), "Weight": 20},
                    {"TargetGroupArn": tg_arn("v1"), "Weight": 80},
                ],
                "TargetGroupStickinessConfig": {"Enabled": False, "DurationSeconds": 3600},
            },
        }
    ]
    assert same_forward(shown, want)


def test_same_forward_missing_stickiness_is_disabled() -> None:
    want = [forward_action([tg("v1", 100)])]
    shown = [
        {
            "Type": "forward",
            "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": tg_arn("v1"), "Weight": 100}]},
        }
    ]
    assert same_forward(shown, want)


def test_same_forward_detects_weights_stickiness_and_other_actions() -> None:
    want = [forward_action([tg("v1", 80), tg("v2", 20)])]
    weights = [forward_action([tg("v1", 20), tg("v2", 80)])]
    sticky = copy.deepcopy(want)
    sticky[0]["ForwardConfig"]["TargetGroupStickinessConfig"] = {
        "Enabled": True,
        "DurationSeconds": 60,
    }
    fixed = [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "503"}}]
    extra_tg = [forward_action([tg("v1", 80), tg("v2", 20), tg("v3", 0)])]
    for other in (weights, sticky, fixed, extra_tg, []):
        assert not same_forward(other, want)


def test_same_forward_reads_the_bare_target_group_form() -> None:
    bare = [{"Type": "forward", "TargetGroupArn": tg_arn("v1")}]
    assert same_forward(bare, [forward_action([tg("v1", 1)])])
    assert not same_forward(bare, [forward_action([tg("v2", 1)])])


# --- validate --------------------------------------------------------------------------------


def unchecked(**fields: Any) -> AWSApplicationLoadBalancerConfigSpec:
    """A spec as code might build it without validation (the schema's bounds unchecked)."""
    base: dict[str, Any] = {
        "listener_arn": LISTENER,
        "listener_rule": ListenerRule(priority=10, hosts=["web.example.com"]),
        "forward_target_groups": [tg("v1", 80), tg("v2", 20)],
    }
    base.update(fields)
    return AWSApplicationLoadBalancerConfigSpec.model_construct(**base)


def test_validate_accepts_a_good_spec_and_the_default_rule() -> None:
    assert validate(spec()) == []
    assert validate(unchecked(listener_rule=None)) == []


def test_validate_six_target_groups() -> None:
    tgs = [tg(f"v{i}", 10) for i in range(6)]
    assert validate(unchecked(forward_target_groups=tgs)) == [
        "spec.forwardTargetGroups: 6 target groups, but one ALB forward action takes at most 5"
    ]


def test_validate_weights_out_of_range() -> None:
    tgs = [
        ForwardTargetGroup.model_construct(name="a", arn=tg_arn("a"), weight=1000),
        ForwardTargetGroup.model_construct(name="b", arn=tg_arn("b"), weight=-1),
    ]
    assert validate(unchecked(forward_target_groups=tgs)) == [
        "spec.forwardTargetGroups[0].weight: 1000 is out of range; ALB weights are 0..999",
        "spec.forwardTargetGroups[1].weight: -1 is out of range; ALB weights are 0..999",
    ]


def test_validate_duplicate_arns_and_zero_total() -> None:
    tgs = [tg("v1", 0), ForwardTargetGroup(name="again", arn=tg_arn("v1"), weight=0)]
    assert validate(unchecked(forward_target_groups=tgs)) == [
        "spec.forwardTargetGroups[1].arn: the same target group as spec.forwardTargetGroups[0]; "
        "list each target group once",
        "spec.forwardTargetGroups: every weight is 0; at least one target group needs a weight "
        "above 0",
    ]


def test_validate_no_target_groups() -> None:
    assert validate(unchecked(forward_target_groups=[])) == [
        "spec.forwardTargetGroups: at least one target group is required"
    ]


def test_validate_priority_and_missing_condition() -> None:
    rule = ListenerRule.model_construct(
        priority=0, hosts=[], path_patterns=[], methods=[], source_i_ps=[], headers=[],
        query_strings=[],
    )  # fmt: skip
    problems = validate(unchecked(listener_rule=rule))
    assert problems[0] == (
        "spec.listenerRule.priority: 0 is out of range; a listener rule's priority is 1..50000"
    )
    assert problems[1].startswith(
        "spec.listenerRule: no condition; a rule other than the listener's default needs at "
        "least one of hosts, pathPatterns, methods, sourceIPs, headers, queryStrings"
    )
    assert len(problems) == 2


def test_validate_methods_must_be_upper_case() -> None:
    problems = validate(unchecked(listener_rule=ListenerRule(methods=["GET", "post"])))
    assert problems == [
        "spec.listenerRule.methods[1]: 'post'; ALB compares methods case-sensitively and "
        "allows A-Z, '-' and '_': write 'POST'"
    ]


def test_validate_condition_values_per_rule() -> None:
    rule = ListenerRule(
        hosts=["a.example", "b.example"],
        path_patterns=["/a", "/b"],
        headers=[HeaderCondition(name="X", values=["1", "2"])],
    )
    assert validate(unchecked(listener_rule=rule)) == [
        "spec.listenerRule: 6 condition values (hosts 2, pathPatterns 2, headers[*].values 2), "
        "but an ALB rule allows at most 5"
    ]


def test_validate_arns_of_the_right_kind() -> None:
    s = unchecked(
        listener_arn=tg_arn("oops"),
        forward_target_groups=[ForwardTargetGroup(name="l", arn=LISTENER, weight=1)],
    )
    problems = validate(s)
    assert problems[0].startswith(f"spec.listenerARN: {tg_arn('oops')!r} is not an Application")
    assert problems[1] == f"spec.forwardTargetGroups[0].arn: {LISTENER!r} is not a target group ARN"


def test_spec_problems_names_the_field_for_schema_errors() -> None:
    raw = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSApplicationLoadBalancerConfig",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {
            "listenerARN": LISTENER,
            "forwardTargetGroups": [{"name": "v1", "arn": tg_arn("v1"), "weight": 1000}],
        },
    }
    config, problems = spec_problems(raw)
    assert config is None
    assert problems == [
        "spec.forwardTargetGroups[0].weight: Input should be less than or equal to 999"
    ]


def test_spec_problems_runs_validate_on_a_parsed_spec() -> None:
    raw = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "AWSApplicationLoadBalancerConfig",
        "metadata": {"name": "web", "namespace": "prod"},
        "spec": {
            "listenerARN": LISTENER,
            "listenerRule": {"priority": 7},
            "forwardTargetGroups": [{"name": "v1", "arn": tg_arn("v1"), "weight": 1}],
        },
    }
    config, problems = spec_problems(raw)
    assert config is not None
    assert len(problems) == 1
    assert problems[0].startswith("spec.listenerRule: no condition")


# --- plan ------------------------------------------------------------------------------------


def test_plan_creates_the_rule_on_an_empty_listener() -> None:
    s = spec()
    assert plan(s, [default_rule()], owner=OWNER) == Create(
        rule_conditions(s.listener_rule or ListenerRule()),
        [forward_action(s.forward_target_groups)],
        10,
    )


def test_plan_without_listener_rule_creates_the_catch_all_at_50000() -> None:
    s = AWSApplicationLoadBalancerConfigSpec(
        listenerARN=LISTENER, forward_target_groups=[tg("v1", 1)]
    )
    action = plan(s, [default_rule()], owner=OWNER)
    assert isinstance(action, Create)
    assert action.priority == 50000
    assert action.conditions == [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/*"]}}]


def test_plan_does_nothing_when_aws_shows_the_spec() -> None:
    s = spec()
    assert plan(s, [default_rule(), aws_rule(s)], owner=OWNER, rule_arn=RULE) == Nothing(RULE)


def test_plan_modifies_only_the_actions_when_weights_change() -> None:
    before, after = spec(), spec([tg("v1", 40), tg("v2", 60)])
    action = plan(after, [aws_rule(before)], owner=OWNER, rule_arn=RULE)
    assert action == Modify(RULE, None, [forward_action(after.forward_target_groups)])


def test_plan_modifies_only_the_conditions_of_its_own_rule() -> None:
    before = spec()
    after = spec(rule=ListenerRule(priority=10, hosts=["new.example.com"]))
    action = plan(after, [aws_rule(before)], owner=OWNER, rule_arn=RULE)
    assert action == Modify(RULE, rule_conditions(after.listener_rule or ListenerRule()), None)


def test_plan_modifies_both_when_both_differ() -> None:
    before = spec()
    after = spec([tg("v3", 1)], ListenerRule(priority=10, path_patterns=["/v3/*"]))
    action = plan(after, [aws_rule(before)], owner=OWNER, rule_arn=RULE)
    assert isinstance(action, Modify)
    assert action.conditions is not None
    assert action.actions is not None


def test_plan_adopts_a_rule_with_the_same_conditions() -> None:
    s = spec()
    foreign = aws_rule(spec([tg("old", 1)]), arn=OTHER_RULE)
    assert plan(s, [foreign], owner=OWNER) == Modify(
        OTHER_RULE, None, [forward_action(s.forward_target_groups)]
    )
    assert plan(s, [aws_rule(s, arn=OTHER_RULE)], owner=OWNER) == Nothing(OTHER_RULE)


def test_plan_conflicts_with_a_foreign_rule_at_the_priority() -> None:
    s = spec()
    foreign = aws_rule(spec(rule=ListenerRule(priority=10, path_patterns=["/other"])), OTHER_RULE)
    action = plan(s, [default_rule(), foreign], owner=OWNER)
    assert isinstance(action, Conflict)
    assert action.rule_arn == OTHER_RULE
    assert "priority 10 of the listener is held by rule" in action.message
    assert "path-pattern=/other" in action.message
    assert f"not tagged {OWNER_TAG}={OWNER}" in action.message
    assert "choose another spec.listenerRule.priority" in action.message


def test_plan_takes_a_rule_tagged_for_this_config_but_not_for_another() -> None:
    s = spec()
    drifted = aws_rule(spec(rule=ListenerRule(priority=10, path_patterns=["/other"])), OTHER_RULE)
    mine = plan(s, [drifted], owner=OWNER, tags={OTHER_RULE: {OWNER_TAG: OWNER}})
    assert mine == Modify(OTHER_RULE, rule_conditions(s.listener_rule or ListenerRule()), None)
    theirs = plan(s, [drifted], owner=OWNER, tags={OTHER_RULE: {OWNER_TAG: "prod/api"}})
    assert isinstance(theirs, Conflict)
    assert f"tagged {OWNER_TAG}=prod/api" in theirs.message


def test_plan_moves_its_rule_when_the_priority_changes() -> None:
    old = spec()
    new = spec(rule=ListenerRule(priority=20, hosts=["web.example.com"]))
    assert plan(new, [aws_rule(old)], owner=OWNER, rule_arn=RULE) == Move(RULE, 20)
    # Not ours (no status, no tag): a new rule, the other one is left alone.
    assert isinstance(plan(new, [aws_rule(old)], owner=OWNER), Create)


def test_plan_never_takes_the_default_rule() -> None:
    s = spec(rule=ListenerRule(priority=50000, path_patterns=["/*"]))
    default = default_rule()
    default["Conditions"] = rule_conditions(ListenerRule(path_patterns=["/*"]))
    for arn in (None, DEFAULT_RULE):
        assert isinstance(plan(s, [default], owner=OWNER, rule_arn=arn), Create)


# --- read back -------------------------------------------------------------------------------


def test_applied_from_rule_reads_like_the_spec_when_in_sync() -> None:
    s = spec(
        [tg("v1", 70), tg("v2", 30)],
        ListenerRule(
            priority=10,
            hosts=["b.example", "a.example"],
            methods=["GET"],
            headers=[HeaderCondition(name="X-Canary", values=["1"])],
            query_strings=[QueryStringCondition(key="k", value="v")],
        ),
    )
    rule = aws_rule(s)
    rule["Conditions"].reverse()
    rule["Actions"][0]["ForwardConfig"]["TargetGroups"].reverse()
    assert in_sync(s, rule)
    assert applied_from_rule(s, rule) == s


def test_same_spec_for_the_cell_controller() -> None:
    s = spec([tg("v1", 70), tg("v2", 30)])
    shuffled = spec([tg("v2", 30), tg("v1", 70)])
    catch_all = AWSApplicationLoadBalancerConfigSpec(
        listenerARN=LISTENER, forward_target_groups=[tg("v1", 1)]
    )
    spelled_out = spec([tg("v1", 1)], ListenerRule(priority=50000, path_patterns=["/*"]))
    assert same_spec(s, shuffled)
    assert same_spec(catch_all, spelled_out)
    assert not same_spec(s, spec([tg("v1", 30), tg("v2", 70)]))
    assert not same_spec(
        s, spec(s.forward_target_groups, ListenerRule(priority=11, hosts=["web.example.com"]))
    )
    applied = applied_from_rule(catch_all, aws_rule(catch_all))
    assert applied is not None
    assert same_spec(applied, catch_all)


def test_applied_from_rule_names_unknown_target_groups_by_arn() -> None:
    s = spec([tg("v1", 100)])
    shown = aws_rule(spec([tg("v1", 50), tg("stray", 50)]))
    applied = applied_from_rule(s, shown)
    assert applied is not None
    assert [(t.name, t.weight) for t in applied.forward_target_groups] == [
        ("v1", 50),
        ("stray", 50),
    ]
    assert not in_sync(s, shown)


def test_applied_from_rule_is_none_without_a_forward() -> None:
    rule = aws_rule(spec())
    rule["Actions"] = [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "503"}}]
    assert applied_from_rule(spec(), rule) is None
    assert not in_sync(spec(), rule)


# --- properties ------------------------------------------------------------------------------

names = st.lists(
    st.text(alphabet="abcdefghij", min_size=1, max_size=6), min_size=1, max_size=5, unique=True
)
weights = st.integers(min_value=0, max_value=999)
values = st.lists(
    st.text(alphabet="abcxyz/*.-", min_size=1, max_size=8), min_size=0, max_size=2, unique=True
)


@st.composite
def specs(draw: st.DrawFn) -> AWSApplicationLoadBalancerConfigSpec:
    tg_names = draw(names)
    tgs = [ForwardTargetGroup(name=n, arn=tg_arn(n), weight=draw(weights)) for n in tg_names]
    if sum(t.weight for t in tgs) == 0:
        tgs[0] = ForwardTargetGroup(name=tgs[0].name, arn=tgs[0].arn, weight=1)
    hosts = [f"{h}.example" for h in draw(values)]
    paths = [f"/{p}" for p in draw(values)]
    methods = draw(st.lists(st.sampled_from(["GET", "POST", "PUT"]), max_size=1, unique=True))
    headers = [HeaderCondition(name=f"X-{h}", values=[h, h + "1"]) for h in draw(values)[:1]]
    if not (hosts or paths or methods or headers):
        paths = ["/*"]
    rule = ListenerRule(
        priority=draw(st.integers(1, 50000)),
        hosts=hosts,
        path_patterns=paths,
        methods=methods,
        headers=headers,
    )
    return AWSApplicationLoadBalancerConfigSpec(
        listenerARN=LISTENER, listener_rule=rule, forward_target_groups=tgs
    )


@settings(max_examples=300, deadline=None)
@given(s=specs(), data=st.data())
def test_any_permutation_of_what_aws_shows_is_in_sync(
    s: AWSApplicationLoadBalancerConfigSpec, data: st.DataObject
) -> None:
    """For any permutation of target groups, conditions and condition values (and AWS's
    legacy/added fields), the comparison says equal and the plan writes nothing."""
    rule = aws_rule(s)
    rule["Conditions"] = data.draw(st.permutations(rule["Conditions"]))
    for c in rule["Conditions"]:
        for key in ("HostHeaderConfig", "PathPatternConfig", "HttpHeaderConfig"):
            if key in c:
                c[key]["Values"] = data.draw(st.permutations(c[key]["Values"]))
        if "Values" in c:
            c["Values"] = data.draw(st.permutations(c["Values"]))
    fwd = rule["Actions"][0]["ForwardConfig"]
    fwd["TargetGroups"] = data.draw(st.permutations(fwd["TargetGroups"]))
    want = s.listener_rule or ListenerRule()
    assert same_conditions(rule["Conditions"], rule_conditions(want))
    assert same_forward(rule["Actions"], [forward_action(s.forward_target_groups)])
    shuffled = s.model_copy(
        update={
            "forward_target_groups": data.draw(st.permutations(s.forward_target_groups)),
        }
    )
    for owner_arn in (RULE, None):  # ours, or adoptable by its conditions
        assert plan(shuffled, [default_rule(), rule], owner=OWNER, rule_arn=owner_arn) == Nothing(
            RULE
        )
    assert in_sync(shuffled, rule)


@settings(max_examples=200, deadline=None)
@given(s=specs(), data=st.data())
def test_any_weight_change_is_one_actions_only_modify(
    s: AWSApplicationLoadBalancerConfigSpec, data: st.DataObject
) -> None:
    i = data.draw(st.integers(0, len(s.forward_target_groups) - 1))
    old = s.forward_target_groups[i]
    new_weight = data.draw(weights.filter(lambda w: w != old.weight))
    tgs = list(s.forward_target_groups)
    tgs[i] = ForwardTargetGroup(name=old.name, arn=old.arn, weight=new_weight)
    changed = s.model_copy(update={"forward_target_groups": tgs})
    action = plan(changed, [aws_rule(s)], owner=OWNER, rule_arn=RULE)
    assert action == Modify(RULE, None, [forward_action(tgs)])
