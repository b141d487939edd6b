"""AWSTargetGroupBinding and AWSTargetGroupSet: shapes and judges for the field walk
(test_every_field_acts_more.py), over stand-in observations.

An AWSTargetGroupSet is judged by its plan (`targetgroupset/plan.py`) over stand-in
observations: the Argo CD clusters and EKS clusters (by tag) its generators select, each
with the TargetGroupBindings its bindingSelector lists there (none where the AWS Load
Balancer Controller is not installed), and the account's target groups with their tags;
each AWSTargetGroupBinding it generates is judged as a binding is (below), so a template
field the binding does not read does not pass for acting by being copied into it.

A binding is judged by what its controller does without AWS: the clusters each entry
names or selects among the namespace's Argo CD cluster Secrets (`select_clusters`), the
plan over those clusters' Nodes and the group's registered targets (`plan`), and, when it
creates its group, CreateTargetGroup's parameters (`group_request`). The stand-in world
has three clusters (one named and labelled as the walker writes: `walked`), each with a
Node of role web, one labelled `walked: walked`, and one named `walked`; a cluster no
Secret names is unreadable.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBinding
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSet, AWSTargetGroupSetSpec
from okra_controllers.aws.elbv2 import TaggedTargetGroup
from okra_controllers.targetgroupbinding.controller import (
    group_port,
    group_request,
    select_clusters,
)
from okra_controllers.targetgroupbinding.plan import Node, ObservedCluster, plan
from okra_controllers.targetgroupset.controller import cluster_selectors, eks_selected
from okra_controllers.targetgroupset.plan import (
    HASH_ANNOTATION,
    VERSION_KEY,
    Binding,
    ObservedTargetGroups,
)
from okra_controllers.targetgroupset.plan import ObservedCluster as SetCluster
from okra_controllers.targetgroupset.plan import plan as target_group_set_plan
from okra_runtime.labels import selector_from_dict
from okra_testkit.fieldwalk import ELB_ARN
from unit.test_targetgroupset_own_groups import SEED

CLUSTER_LABELS: dict[str, dict[str, str]] = {
    "c1": {"env": "prod"},
    "c2": {"env": "prod", "walked": "walked"},
    "walked": {"walked": "walked"},
    **{name: {} for name in ("web-1", "web-2", "api-1", "argo-1", "argo-2")},
}
"""The clusters of the namespace (their Argo CD Secrets' labels); the last, those the
AWSTargetGroupSet world names, for the bindings a set generates."""
CONFIG = '{"bearerToken": "t", "tlsClientConfig": {"insecure": true}}'
REGISTERED = {("i-old", 80), ("i-c1-web", 8080)}


def cluster_secret(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": namespace,
            "labels": {"argocd.argoproj.io/secret-type": "cluster", **labels},
        },
        "stringData": {"name": name, "server": f"https://{name}.example", "config": CONFIG},
    }


def nodes(cluster: str) -> tuple[Node, ...]:
    def node(name: str, labels: dict[str, str]) -> Node:
        return Node(name, labels, f"aws:///us-east-1a/i-{cluster}-{name}")

    return (
        node("web", {"role": "web", "type": "node"}),
        node("labelled", {"walked": "walked", "role": "api"}),
        node("walked", {}),
    )


BINDING_SHAPES: dict[str, dict[str, Any]] = {
    "ids": {
        "targetGroupARN": ELB_ARN,
        "targets": [{"name": "fixed", "ids": ["i-0abc", "10.0.0.7"], "port": 80}],
    },
    "cluster-name": {
        "targetGroup": {"name": "web", "vpcID": "vpc-0abc"},
        "targets": [
            {
                "name": "web",
                "clusterName": "c1",
                "nodeSelector": {"matchLabels": {"role": "web"}},
                "port": 8080,
            }
        ],
    },
    "cluster-selector": {
        "targetGroupARN": ELB_ARN,
        "targets": [
            {"name": "prod", "clusterSelector": {"matchLabels": {"env": "prod"}}, "port": 8080}
        ],
    },
}
"""A binding of each shape: fixed ids into an existing group; a named cluster's nodes of
role web into a group it creates; the nodes of every prod cluster."""


def binding_outputs(raw: dict[str, Any]) -> list[Any]:
    tgb = AWSTargetGroupBinding.model_validate(raw)
    ns = tgb.metadata.namespace or ""
    secrets = [cluster_secret(c, ns, labels) for c, labels in CLUSTER_LABELS.items()]
    clusters_of, used, failed, unnamed = select_clusters(ns, tgb.spec.targets, secrets)
    observed = {
        **failed,
        **{c: ObservedCluster(c, nodes(c)) for c in used},
        **{c: ObservedCluster(c, None, why) for c, why in unnamed.items()},
    }
    p = plan(tgb.spec.targets, clusters_of, observed, REGISTERED)
    out: list[Any] = [tgb.spec.target_group_arn, repr(p)]  # the group the calls go to
    if tgb.spec.target_group is not None:
        port = group_port(tgb.spec.targets)
        out.append(group_request(tgb.spec.target_group, port, "ns/walked"))
    return out


# -- AWSTargetGroupSet ---------------------------------------------------------------------

EKS_TAGS: dict[str, dict[str, str]] = {
    "web-1": {"role": "web", VERSION_KEY: "1.0.0", "walked": "walked"},
    "web-2": {"role": "web", VERSION_KEY: "2.0.0"},
    "api-1": {"role": "api"},
}
"""The EKS clusters (all ACTIVE, in a known VPC) and their tags."""
WITH_LBC = {"web-1", "api-1"}
"""The EKS clusters with the AWS Load Balancer Controller (its TargetGroupBinding kind);
every Argo CD cluster has it."""
SECRET_LABELS: dict[str, dict[str, str]] = {
    "argo-1": {"env": "prod"},
    "argo-2": {"env": "prod", "walked": "walked"},
    "argo-3": {"env": "dev"},
}
"""The Argo CD cluster Secrets of the namespace and their labels."""
LBC_BINDINGS: dict[str, dict[str, str]] = {"web": {"role": "web"}, "walked": {"walked": "walked"}}
"""The TargetGroupBindings (namespace apps) found in a cluster with the AWS Load Balancer
Controller, and their labels."""
TAGGED = (
    TaggedTargetGroup(
        ELB_ARN.replace("walked", "blue"),
        "web-blue",
        {"app": "web", "version": "1.0.0", "cluster": "web-1", "walked": "walked"},
    ),
    TaggedTargetGroup(
        ELB_ARN.replace("walked", "green"),
        "web-green",
        {"app": "web", "version": "2.0.0", "cluster": "web-2"},
    ),
    TaggedTargetGroup(ELB_ARN.replace("walked", "api"), "api", {"app": "api", "version": "3"}),
)
"""Every target group of the account, with its tags (what `tagged_target_groups` reads)."""

SET_SHAPES: dict[str, dict[str, Any]] = {
    "seed": SEED,
    "lbc-bindings": {
        "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}}],
        "bindingSelector": {"matchLabels": {"role": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}},
        "bindingTemplate": {"spec": {"targets": [{"name": "all", "ids": ["i-1"], "port": 80}]}},
    },
    "argocd-clusters": {
        "generators": [{"argocdClusters": {"selector": {"matchLabels": {"env": "prod"}}}}],
        "template": {"metadata": {"labels": {"app": "web"}}},
    },
    "tagged": {
        "generators": [
            {
                "awsTargetGroups": {
                    "targetGroupSelector": {"matchTags": {"app": "web"}},
                    "versionTag": "version",
                }
            }
        ],
        "template": {"metadata": {"labels": {"app": "web"}}},
    },
}
"""A set of each shape: seed 000's (one binding per EKS cluster that creates its group);
groups found through the TargetGroupBindings of EKS clusters with the AWS Load Balancer
Controller, with a binding beside each; through those of Argo CD clusters; and target groups
found by their AWS tags."""


def _bindings(spec: AWSTargetGroupSetSpec, lbc: bool) -> tuple[Binding, ...]:
    """The cluster's TargetGroupBindings the set's bindingSelector lists (the cluster's API
    server filters them by that label selector)."""
    if not lbc:
        return ()  # no AWS Load Balancer Controller: no TargetGroupBinding kind
    wanted = selector_from_dict(spec.binding_selector.model_dump(by_alias=True))
    return tuple(
        Binding("apps", name, ELB_ARN.replace("walked", name))
        for name, labels in LBC_BINDINGS.items()
        if wanted.matches(labels)
    )


def set_outputs(raw: dict[str, Any]) -> list[Any]:
    """The set's plan over the stand-in world: the Argo CD clusters its argocdClusters
    generators select, the EKS clusters its awseks generators select (with the AWS Load
    Balancer Controller or without), the account's tagged target groups."""
    tgs = AWSTargetGroupSet.model_validate(raw)
    spec, ns = tgs.spec, tgs.metadata.namespace or ""
    picked = [
        (name, labels)
        for name, labels in SECRET_LABELS.items()
        if any(all(labels.get(k) == v for k, v in m.items()) for m in cluster_selectors(raw))
    ]
    observed = [
        SetCluster(
            name,
            _bindings(spec, lbc=True),
            vars={"cluster": {"name": name, "server": f"https://{name}", "labels": labels}},
        )
        for name, labels in picked
    ]
    gens = [g.awseks for g in spec.generators if g.awseks is not None]
    for name, tags in EKS_TAGS.items():
        if not eks_selected(gens, tags):
            continue
        observed.append(
            SetCluster(
                name,
                _bindings(spec, lbc=name in WITH_LBC),
                vars={
                    "cluster": {"name": name, "server": f"https://{name}.eks"},
                    "awseks": {"cluster": {"name": name, "tags": tags}},
                },
                vpc_id="vpc-0abc",
                version=tags.get(VERSION_KEY),
            )
        )
    tagged = None
    if any(g.aws_target_groups is not None for g in spec.generators):
        tagged = ObservedTargetGroups(TAGGED, eks_tags=EKS_TAGS)
    p = target_group_set_plan("walked", "u-1", ns, spec, observed, [], [], tagged)
    # a generated binding is judged as a binding: by what its controller does with it
    bindings = [[_unhashed(b["metadata"]), *binding_outputs(b)] for b in p.apply_bindings]
    return [repr(dataclasses.replace(p, apply_bindings=())), bindings]


def _unhashed(metadata: dict[str, Any]) -> dict[str, Any]:
    """A generated object's metadata without the hash of its spec (which any change of the
    template's spec changes, read by okra or not)."""
    annotations = {k: v for k, v in metadata["annotations"].items() if k != HASH_ANNOTATION}
    return {**metadata, "annotations": annotations}
