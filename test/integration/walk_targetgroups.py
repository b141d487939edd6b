"""AWSTargetGroupBinding and AWSTargetGroupSet: shapes and judges for the field walk
(test_every_field_acts_more.py), over stand-in observations.

A binding is judged by what its controller does without AWS: the clusters each entry
names or selects among the namespace's Argo CD cluster Secrets (`select_clusters`), the
plan over those clusters' Nodes and the group's registered targets (`plan`), and, when it
creates its group, CreateTargetGroup's parameters (`group_request`). The stand-in world
has three clusters (one named and labelled as the walker writes: `walked`), each with a
Node of role web, one labelled `walked: walked`, and one named `walked`; a cluster no
Secret names is unreadable.
"""

from __future__ import annotations

from typing import Any

from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBinding
from okra_controllers.targetgroupbinding.controller import (
    group_port,
    group_request,
    select_clusters,
)
from okra_controllers.targetgroupbinding.plan import Node, ObservedCluster, plan
from okra_testkit.fieldwalk import ELB_ARN

CLUSTER_LABELS: dict[str, dict[str, str]] = {
    "c1": {"env": "prod"},
    "c2": {"env": "prod", "walked": "walked"},
    "walked": {"walked": "walked"},
}
"""The clusters of the namespace (their Argo CD Secrets' labels)."""
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
        node("web", {"role": "web"}),
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
