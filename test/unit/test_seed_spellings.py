"""The spellings the original documents use are accepted, normalised to one in the
model, and named with the preferred spelling (the controllers' warning Events)."""

from __future__ import annotations

from typing import Any

import pytest

from okra_controllers.api.v1alpha1.targetgroupbinding import (
    AWSTargetGroupBindingSpec,
    node_selector_warnings,
)
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSetSpec, spelling_warnings

SEED_000_SET: dict[str, Any] = {
    "generators": [
        {
            "awseks": {
                "clusterSelector": {"matchLabels": {"role": "web"}},
                "bindingSelector": {"matchLabels": {"role": "web"}},
            }
        }
    ],
    "template": {"metadata": {"labels": {"role": "{{.awseks.cluster.tags.role}}"}}},
    "bindingTemplate": {
        "spec": {
            "targets": [
                {
                    "name": "specificnodeincluster",
                    "clusterName": "{{.awseks.cluster.name}}",
                    "nodeSelector": {"type": "node"},
                    "port": 8080,
                }
            ]
        }
    },
}


def test_seed_000_target_group_set_is_normalised() -> None:
    spec = AWSTargetGroupSetSpec.model_validate(SEED_000_SET)
    eks = spec.generators[0].awseks
    assert eks is not None
    assert eks.cluster_selector.match_tags == {"role": "web"}
    assert eks.cluster_selector.match_labels == {}
    assert eks.binding_selector is None
    assert spec.binding_selector.match_labels == {"role": "web"}
    assert spec.binding_template is not None
    sel = spec.binding_template.spec.targets[0].node_selector
    assert sel is not None
    assert sel.match_labels == {"type": "node"}
    assert spelling_warnings(SEED_000_SET) == [
        "spec.generators[0].awseks.clusterSelector.matchLabels: write matchTags "
        "(it selects EKS clusters by tag)",
        "spec.generators[0].awseks.bindingSelector: write spec.bindingSelector",
        "spec.bindingTemplate.spec.targets[0].nodeSelector: write the labels under "
        "nodeSelector.matchLabels (found type)",
    ]


def test_binding_selectors_that_disagree_are_an_error() -> None:
    raw = {**SEED_000_SET, "bindingSelector": {"matchLabels": {"role": "api"}}}
    with pytest.raises(ValueError, match=r"role=api and awseks\.bindingSelector role=web"):
        AWSTargetGroupSetSpec.model_validate(raw)


def test_node_selector_spellings_all_mean_match_labels() -> None:
    targets = [
        {"name": "a", "clusterName": "c", "nodeSelector": {"type": "node"}, "port": 80},
        {"name": "b", "clusterName": "c", "nodeSelector": {"labels": {"type": "node"}}, "port": 80},
        {
            "name": "c",
            "clusterName": "c",
            "nodeSelector": {"matchLabels": {"type": "node"}},
            "port": 80,
        },
    ]
    spec = AWSTargetGroupBindingSpec.model_validate(
        {
            "targetGroupARN": "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/x/1",
            "targets": targets,
        }
    )
    for t in spec.targets:
        assert t.node_selector is not None
        assert t.node_selector.match_labels == {"type": "node"}
        assert t.node_selector.selector() == {"type": "node"}
    assert node_selector_warnings(targets) == [
        "spec.targets[0].nodeSelector: write the labels under nodeSelector.matchLabels "
        "(found type)",
        "spec.targets[1].nodeSelector.labels: write nodeSelector.matchLabels",
    ]


def test_a_node_selector_beside_ids_warns_that_it_is_not_read() -> None:
    """The CRD refuses it; a binding stored before keeps working, with this warning."""
    targets = [{"name": "a", "ids": ["i-1"], "nodeSelector": {"matchLabels": {"r": "w"}}}]
    assert node_selector_warnings(targets) == [
        "spec.targets[0].nodeSelector: not read beside ids (it picks Nodes of clusterName / "
        "clusterSelector): remove it"
    ]
