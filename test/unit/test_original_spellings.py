"""Manifests written against the original okra's Go API (github.com/mumoshu/okra,
`api/v1alpha1`: every field of its seven kinds, `test/fixtures/original-go-manifests.yaml`)
decode into okra's models, read as okra spells them, and each field spelled the
original's way is named with okra's spelling (the `DeprecatedSpelling` Events)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.cell import (
    AWSApplicationLoadBalancerConfig,
    AWSTargetGroup,
    Cell,
    Pause,
    VersionBlocklist,
)
from okra_controllers.api.v1alpha1.clusterset import ClusterSet
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSet, spelling_warnings

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "original-go-manifests.yaml"
MODELS: dict[str, Any] = {
    "Cell": Cell,
    "AWSApplicationLoadBalancerConfig": AWSApplicationLoadBalancerConfig,
    "AWSTargetGroup": AWSTargetGroup,
    "AWSTargetGroupSet": AWSTargetGroupSet,
    "ClusterSet": ClusterSet,
    "Pause": Pause,
    "VersionBlocklist": VersionBlocklist,
}
TG1 = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web1/73e2d6bc24d8a067"
TG2 = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web2/83e2d6bc24d8a067"


def manifests() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(FIXTURE.read_text()) if d]


def by_name(kind: str, name: str) -> dict[str, Any]:
    return next(d for d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name)


def test_every_kind_of_the_original_is_in_the_fixture_and_decodes() -> None:
    docs = manifests()
    assert {d["kind"] for d in docs} == set(MODELS)
    for d in docs:
        MODELS[d["kind"]].model_validate(d)


def test_the_cells_version_labels_move_to_spec_version_labels() -> None:
    alb = Cell.model_validate(by_name("Cell", "web")).spec
    assert alb.version_labels == ["okra.mumo.co/version"]
    assert alb.labels_for_version() == ["okra.mumo.co/version"]
    lb = alb.ingress.aws_application_load_balancer if alb.ingress else None
    assert lb is not None
    assert lb.target_group_selector.version_labels is None
    assert lb.target_group_selector.match_labels == {"role": "web"}
    nlb = Cell.model_validate(by_name("Cell", "tcp")).spec
    assert nlb.labels_for_version() == ["example.com/version"]


def test_a_version_label_in_both_places_is_read_once_in_order() -> None:
    doc = by_name("Cell", "tcp")
    doc["spec"]["versionLabels"] = ["a", "example.com/version"]
    spec = Cell.model_validate(doc).spec
    assert spec.labels_for_version() == ["a", "example.com/version"]


def test_the_cells_listener_rule_is_read_as_listener_rule() -> None:
    spec = Cell.model_validate(by_name("Cell", "web")).spec
    lb = spec.ingress.aws_application_load_balancer if spec.ingress else None
    assert lb is not None
    assert lb.listener is None
    rule = lb.listener_rule
    assert rule is not None
    assert rule.model_dump(by_alias=True) == {
        "priority": 10,
        "hosts": ["example.com"],
        "pathPatterns": ["/*"],
        "methods": ["GET"],
        "sourceIPs": ["10.0.0.0/8"],
        "headers": [{"name": "X-Canary", "values": ["yes"]}],
        "queryStrings": [{"key": "lang", "value": "en"}],
    }


def test_argo_rollouts_steps_keep_their_place() -> None:
    spec = Cell.model_validate(by_name("Cell", "web")).spec
    assert spec.update_strategy.canary is not None
    steps = spec.update_strategy.canary.steps
    assert [s.model_dump(by_alias=True, exclude_none=True) for s in steps] == [
        {"setWeight": 20},
        {"pause": {"duration": "10s"}},
        {
            "analysis": {
                "templates": [{"templateName": "smoke", "clusterScope": False}],
                "args": [
                    {"name": "host", "value": "example.com"},
                    {"name": "cell", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                ],
            }
        },
        {"stepWeight": 0},
        {
            "analysis": {
                "templates": [{"templateName": "success-rate", "clusterScope": False}],
                "args": [{"name": "host", "value": "example.com"}],
            }
        },
    ]


def test_the_load_balancer_configs_listener_is_read_as_okra_spells_it() -> None:
    config = AWSApplicationLoadBalancerConfig.model_validate(
        by_name("AWSApplicationLoadBalancerConfig", "web")
    ).spec
    assert config.listener is None
    assert config.listener_rule is not None
    assert config.listener_rule.priority == 10
    assert [(t.name, t.arn, t.weight) for t in config.forward_target_groups] == [
        ("web1", TG1, 80),
        ("web2", TG2, 20),  # no name: the target group's, from its ARN
    ]


def test_a_load_balancer_config_with_no_target_group_is_refused() -> None:
    doc = by_name("AWSApplicationLoadBalancerConfig", "web")
    del doc["spec"]["listener"]["rule"]["forward"]
    with pytest.raises(ValidationError, match="at least one target group"):
        AWSApplicationLoadBalancerConfig.model_validate(doc)


def test_cluster_set_selector_is_cluster_selector() -> None:
    cs = ClusterSet.model_validate(by_name("ClusterSet", "web")).spec
    eks = cs.generators[0].awseks
    assert eks.cluster_selector.match_tags == {"service": "web"}
    assert eks.selector is None


def test_target_group_set_arn_is_ignored() -> None:
    tgs = AWSTargetGroupSet.model_validate(by_name("AWSTargetGroupSet", "web")).spec
    assert tgs.arn is None
    assert tgs.binding_selector.match_labels == {"role": "web"}


def test_each_original_spelling_is_named_with_okras() -> None:
    said = {
        (d["kind"], d["metadata"]["name"]): deprecated_spellings(d["kind"], d["spec"])
        for d in manifests()
    }
    assert said[("Cell", "web")] == [
        "spec.ingress.awsApplicationLoadBalancer.targetGroupSelector.versionLabels: "
        "write spec.versionLabels",
        "spec.ingress.awsApplicationLoadBalancer.listener.rule: write "
        "spec.ingress.awsApplicationLoadBalancer.listenerRule (headers as [{name, values}], "
        "queryStrings as [{key, value}])",
        "spec.ingress.awsApplicationLoadBalancer.listener.rule.forward: ignored (the Cell "
        "forwards to the target groups its selector finds); remove it",
        "spec.updateStrategy.canary.steps[2].experiment: runs its analyses as one analysis "
        "step (okra starts no ReplicaSets and the experiment's duration is not waited for); "
        "write an analysis step",
        "spec.updateStrategy.canary.steps[2].experiment.analyses[0].name: not read (okra "
        "names the step's AnalysisRun after the step, and an analysis step has no name); "
        "remove it",
        "spec.updateStrategy.canary.steps[2].experiment.analyses[0].requiredForCompletion: "
        "not read (the step waits for every analysis to succeed, as if true for each); "
        "remove it",
        "spec.updateStrategy.canary.steps[3].setCanaryScale: changes nothing for clusters "
        "(it scales pods); remove it",
    ]
    assert said[("Cell", "tcp")] == [
        "spec.ingress.awsNetworkLoadBalancer.targetGroupSelector.versionLabels: "
        "write spec.versionLabels"
    ]
    assert said[("AWSApplicationLoadBalancerConfig", "web")] == [
        "spec.listener.rule: write spec.listenerRule (headers as [{name, values}], "
        "queryStrings as [{key, value}])",
        "spec.listener.rule.forward.targetGroups: write spec.forwardTargetGroups",
    ]
    assert said[("ClusterSet", "web")] == [
        "spec.generators[0].awseks.selector: write spec.generators[0].awseks.clusterSelector"
    ]
    assert said[("AWSTargetGroupSet", "web")] == [
        "spec.arn: ignored (the target groups come from the generators); remove it"
    ]
    assert (
        spelling_warnings(by_name("AWSTargetGroupSet", "web")["spec"])[-1]
        == (said[("AWSTargetGroupSet", "web")][0])
    )
    for kind in ("AWSTargetGroup", "Pause", "VersionBlocklist"):
        assert said[(kind, "web1" if kind == "AWSTargetGroup" else "web")] == []


def test_okras_own_spelling_is_left_as_it_is() -> None:
    spec = {
        "ingress": {
            "awsApplicationLoadBalancer": {
                "listenerARN": "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/a/1/2",
                "targetGroupSelector": {"matchLabels": {"role": "web"}},
            }
        },
        "versionLabels": ["v"],
        "updateStrategy": {"canary": {"steps": [{"setWeight": 10}]}},
    }
    assert deprecated_spellings("Cell", spec) == []
    assert Cell.model_validate({"spec": spec}).spec.labels_for_version() == ["v"]
