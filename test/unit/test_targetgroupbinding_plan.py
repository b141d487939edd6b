"""The AWSTargetGroupBinding plan: wanted (id, port) pairs vs what the group holds."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.targetgroupbinding import (
    AWSTargetGroupBindingSpec,
    NodeSelector,
    TargetSpec,
    TargetStatus,
)
from okra_controllers.targetgroupbinding.plan import (
    EXCLUDE_LABEL,
    Node,
    ObservedCluster,
    instance_id,
    plan,
)


def t(**kw: Any) -> TargetSpec:
    return TargetSpec.model_validate({"port": 8080, **kw})


def node(name: str, iid: str, **labels: str) -> Node:
    return Node(name, labels, f"aws:///us-east-1a/{iid}")


def test_instance_id_from_provider_id() -> None:
    assert instance_id("aws:///us-east-1a/i-0abc") == "i-0abc"
    assert instance_id("aws://us-east-1a/i-0abc/") == "i-0abc"
    assert instance_id("gce://project/zone/vm") is None
    assert instance_id("aws:///us-east-1a/fargate-ip-10-0-0-1") is None
    assert instance_id("") is None
    assert instance_id(None) is None


@pytest.mark.parametrize(
    "raw",
    [{"matchLabels": {"type": "node"}}, {"labels": {"type": "node"}}, {"type": "node"}],
)
def test_node_selector_spellings_of_the_original(raw: dict[str, Any]) -> None:
    assert NodeSelector.model_validate(raw).selector() == {"type": "node"}


def test_node_selector_rejects_non_label_values() -> None:
    with pytest.raises(ValidationError, match="must be label values"):
        NodeSelector.model_validate({"type": {"nested": "x"}})


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"name": "a"}, "either ids, or clusterName"),
        ({"name": "a", "ids": ["x"], "clusterName": "c"}, "either ids, or clusterName"),
        ({"name": "a", "clusterName": "c", "clusterSelector": {}}, "not both"),
        ({"name": "a", "clusterSelector": {}, "nodeName": "n"}, "nodeName needs clusterName"),
    ],
)
def test_target_entry_needs_exactly_one_source(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        t(**raw)


def test_spec_needs_an_arn_or_a_group_and_unique_entry_names() -> None:
    with pytest.raises(ValidationError, match="targetGroupARN, or targetGroup"):
        AWSTargetGroupBindingSpec.model_validate({"targets": []})
    with pytest.raises(ValidationError, match="a repeated"):
        AWSTargetGroupBindingSpec.model_validate(
            {
                "targetGroupARN": "arn",
                "targets": [{"name": "a", "ids": ["x"], "port": 1}] * 2,
            }
        )


def test_ids_are_registered_and_nothing_else_happens_when_in_sync() -> None:
    targets = [t(name="ips", ids=["10.0.0.2", "10.0.0.1", "10.0.0.1"])]
    p = plan(targets, {}, {}, set())
    assert p.register == (("10.0.0.1", 8080), ("10.0.0.2", 8080))
    assert p.deregister == ()
    assert p.entries[0].status() == TargetStatus(
        name="ips", port=8080, ids=["10.0.0.1", "10.0.0.2"]
    )
    again = plan(targets, {}, {}, set(p.register))
    assert again.in_sync


def test_nodes_by_name_and_by_labels_in_one_cluster() -> None:
    nodes = (
        node("n1", "i-1", type="node"),
        node("n2", "i-2", type="node"),
        node("n3", "i-3", type="other"),
        Node("n4", {"type": "node"}, None),  # no providerID: skipped
    )
    targets = [
        t(name="one", clusterName="c1", nodeName="n3"),
        t(name="typed", clusterName="c1", nodeSelector={"labels": {"type": "node"}}, port=9090),
    ]
    p = plan(targets, {"one": ["c1"], "typed": ["c1"]}, {"c1": ObservedCluster("c1", nodes)}, [])
    assert p.register == (("i-1", 9090), ("i-2", 9090), ("i-3", 8080))
    assert [(e.name, e.clusters, e.ids) for e in p.entries] == [
        ("one", ("c1",), ("i-3",)),
        ("typed", ("c1",), ("i-1", "i-2")),
    ]


def test_nodes_being_deleted_or_excluded_are_not_targets() -> None:
    nodes = (
        Node("gone", {}, "aws:///az/i-1", deleting=True),
        node("excluded", "i-2", **{EXCLUDE_LABEL: "true"}),
        node("ok", "i-3"),
    )
    p = plan(
        [t(name="all", clusterName="c")], {"all": ["c"]}, {"c": ObservedCluster("c", nodes)}, []
    )
    assert p.register == (("i-3", 8080),)


def test_gone_targets_are_deregistered_and_present_ones_left_alone() -> None:
    registered = {("i-1", 8080), ("i-2", 8080), ("i-9", 8080), ("i-1", 9999)}
    p = plan(
        [t(name="all", clusterName="c")],
        {"all": ["c"]},
        {"c": ObservedCluster("c", (node("a", "i-1"), node("b", "i-2"), node("c", "i-3")))},
        registered,
    )
    assert p.register == (("i-3", 8080),)
    assert p.deregister == (("i-1", 9999), ("i-9", 8080))


def test_cluster_selector_across_clusters_lists_clusters_in_status() -> None:
    p = plan(
        [t(name="web", clusterSelector={"matchLabels": {"role": "web"}})],
        {"web": ["wc2", "wc1"]},
        {
            "wc1": ObservedCluster("wc1", (node("a", "i-1"),)),
            "wc2": ObservedCluster("wc2", (node("b", "i-2"),)),
        },
        [],
    )
    assert p.entries[0].status() == TargetStatus(
        name="web", port=8080, clusters=["wc1", "wc2"], ids=["i-1", "i-2"]
    )


def test_an_unreachable_cluster_keeps_what_its_entry_had() -> None:
    previous = [TargetStatus(name="web", port=8080, clusters=["wc1", "wc2"], ids=["i-1", "i-2"])]
    registered = {("i-1", 8080), ("i-2", 8080), ("i-7", 8080)}
    p = plan(
        [t(name="web", clusterSelector={})],
        {"web": ["wc1", "wc2"]},
        {
            "wc1": ObservedCluster("wc1", None, "connection refused"),
            "wc2": ObservedCluster("wc2", (node("b", "i-2"), node("c", "i-3"))),
        },
        registered,
        previous,
    )
    assert p.register == (("i-3", 8080),)
    assert p.deregister == (("i-7", 8080),)  # never listed by this entry: not protected
    assert p.unreachable == (("wc1", "connection refused"),)
    assert p.entries[0].ids == ("i-1", "i-2", "i-3")
    assert p.entries[0].kept == ("i-1",)


def test_a_cluster_without_a_secret_counts_as_unreadable() -> None:
    previous = [TargetStatus(name="n", port=8080, clusters=["c"], ids=["i-1"])]
    p = plan([t(name="n", clusterName="c")], {"n": ["c"]}, {}, {("i-1", 8080)}, previous)
    assert p.in_sync
    assert p.unreachable == (("c", "not observed"),)


def test_without_a_previous_status_a_blind_entry_deregisters_nothing() -> None:
    p = plan(
        [t(name="n", clusterName="c"), t(name="ips", ids=["10.0.0.1"])],
        {"n": ["c"]},
        {"c": ObservedCluster("c", None, "down")},
        {("i-1", 8080), ("10.0.0.9", 8080)},
    )
    assert p.deregister == ()
    assert p.register == (("10.0.0.1", 8080),)


def test_a_port_change_moves_targets() -> None:
    previous = [TargetStatus(name="n", port=8080, ids=["i-1"])]
    p = plan([t(name="n", ids=["i-1"], port=9090)], {}, {}, {("i-1", 8080)}, previous)
    assert p.register == (("i-1", 9090),)
    assert p.deregister == (("i-1", 8080),)
