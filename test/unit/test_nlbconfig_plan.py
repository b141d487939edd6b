"""The NLB config controller's pure parts: `plan` (the one write a reconcile makes, or
why it refuses), `applied_from_listener` (status in the config's own shape) and
validation."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from okra_controllers.api.v1alpha1.cell import AWSNetworkLoadBalancerConfigSpec, ForwardTargetGroup
from okra_controllers.nlbconfig import (
    ModifyDefault,
    Nothing,
    Refuse,
    applied_from_listener,
    forward_action,
    in_sync,
    plan,
    validate,
)

LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/net/nlb/abc/def"
TG = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{}/0123"


def spec(*weights: int) -> AWSNetworkLoadBalancerConfigSpec:
    return AWSNetworkLoadBalancerConfigSpec(
        listenerARN=LISTENER,
        forward_target_groups=[
            ForwardTargetGroup(name=f"tg{i}", arn=TG.format(f"tg{i}"), weight=w)
            for i, w in enumerate(weights)
        ],
    )


def listener(actions: list[dict[str, Any]], protocol: str = "TCP") -> dict[str, Any]:
    return {"ListenerArn": LISTENER, "Protocol": protocol, "DefaultActions": actions}


def test_a_plain_forward_becomes_the_weighted_one() -> None:
    s = spec(70, 30)
    got = plan(s, listener([{"Type": "forward", "TargetGroupArn": TG.format("tg0")}]))
    assert got == ModifyDefault([forward_action(s.forward_target_groups)])
    assert got.actions[0]["ForwardConfig"]["TargetGroups"] == [
        {"TargetGroupArn": TG.format("tg0"), "Weight": 70},
        {"TargetGroupArn": TG.format("tg1"), "Weight": 30},
    ]


def test_same_forward_in_any_order_and_shape_is_nothing() -> None:
    s = spec(70, 30)
    shown = {
        "Type": "forward",
        "Order": 1,
        "TargetGroupArn": TG.format("tg0"),  # AWS adds it beside ForwardConfig
        "ForwardConfig": {
            "TargetGroups": [
                {"TargetGroupArn": TG.format("tg1"), "Weight": 30},
                {"TargetGroupArn": TG.format("tg0"), "Weight": 70},
            ],
            "TargetGroupStickinessConfig": {"Enabled": False},
        },
    }
    assert plan(s, listener([shown])) == Nothing()
    assert in_sync(s, listener([shown]))


def test_one_target_group_at_weight_1_matches_a_plain_forward() -> None:
    assert plan(spec(1), listener([{"Type": "forward", "TargetGroupArn": TG.format("tg0")}])) == (
        Nothing()
    )


def test_a_missing_listener_and_an_alb_listener_are_refused() -> None:
    missing = plan(spec(100), None)
    assert isinstance(missing, Refuse)
    assert missing.reason == "ListenerNotFound"
    for protocol in ("HTTP", "HTTPS"):
        got = plan(spec(100), listener([], protocol))
        assert isinstance(got, Refuse)
        assert got.reason == "NotNetworkListener"
        assert "AWSApplicationLoadBalancerConfig" in got.message
    assert not in_sync(spec(100), None)
    for protocol in ("TCP", "UDP", "TLS", "TCP_UDP"):
        assert isinstance(plan(spec(100), listener([], protocol)), ModifyDefault)


@given(
    want=st.lists(st.integers(0, 999), min_size=1, max_size=5),
    shown=st.lists(st.integers(0, 999), min_size=1, max_size=5),
)
def test_plan_writes_exactly_when_weights_differ(want: list[int], shown: list[int]) -> None:
    s, other = spec(*want), spec(*shown)
    got = plan(s, listener([forward_action(other.forward_target_groups)]))
    assert isinstance(got, Nothing) == (want == shown)
    # after the write AWS shows the spec: nothing more to do, and status says so
    after = listener([forward_action(s.forward_target_groups)])
    assert plan(s, after) == Nothing()
    assert applied_from_listener(s, after) == s


def test_applied_names_unknown_target_groups_by_their_arn() -> None:
    shown = listener([forward_action(spec(50, 50).forward_target_groups)])
    applied = applied_from_listener(spec(100), shown)
    assert applied is not None
    assert [(t.name, t.weight) for t in applied.forward_target_groups] == [
        ("tg0", 50),
        ("tg1", 50),
    ]
    assert applied_from_listener(spec(100), listener([])) is None


def test_validation_names_the_field() -> None:
    assert validate(spec(60, 40)) == []
    assert validate(spec(0, 0)) == [
        "spec.forwardTargetGroups: every weight is 0; at least one target group needs a "
        "weight above 0"
    ]
    too_heavy = spec(100)
    too_heavy.forward_target_groups[0] = ForwardTargetGroup.model_construct(
        name="tg0", arn=TG.format("tg0"), weight=1000
    )  # built in code, past the model's own check
    assert validate(too_heavy) == [
        "spec.forwardTargetGroups[0].weight: 1000 is out of range; NLB weights are 0..999"
    ]
    bad = spec(100).model_copy(
        update={"listener_arn": "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/net/x"}
    )
    assert validate(bad)[0].startswith("spec.listenerARN:")
