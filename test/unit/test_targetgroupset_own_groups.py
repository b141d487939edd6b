"""AWSTargetGroupSet planning of a cluster's own target group (pure): seed 000's
`bindingTemplate` on EKS clusters without the AWS Load Balancer Controller, one binding per
cluster that creates its group, and one AWSTargetGroup per cluster with the binding's ARN."""

from __future__ import annotations

from typing import Any

import pytest

from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBindingSpec
from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSetSpec
from okra_controllers.targetgroupset.plan import (
    BINDING_ANNOTATION,
    CLUSTER_ANNOTATION,
    GENERATED_BINDING_ANNOTATION,
    HASH_ANNOTATION,
    SET_LABEL,
    Binding,
    Existing,
    ObservedCluster,
    Plan,
    owns_group,
    plan,
    target_group_name,
)

ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{}/0123456789abcdef"
VPC = "vpc-0abc"

SEED: dict[str, Any] = {
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
        "metadata": {
            "name": 'web-"{{.awseks.cluster.name}}"',
            "labels": {"role": "{{.awseks.cluster.tags.role}}"},
        },
        "spec": {
            "targets": [
                {
                    "name": "specificnodeincluster",
                    "clusterName": "{{.awseks.cluster.name}}",
                    "nodeSelector": {"type": "node"},
                    "port": 8080,
                }
            ]
        },
    },
}
"""Seed 000's AWSTargetGroupSet spec, as the seed writes it."""


def spec_of(raw: dict[str, Any] = SEED, **template_spec: Any) -> AWSTargetGroupSetSpec:
    if template_spec:
        raw = {
            **raw,
            "bindingTemplate": {
                **raw["bindingTemplate"],
                "spec": {**raw["bindingTemplate"]["spec"], **template_spec},
            },
        }
    return AWSTargetGroupSetSpec.model_validate(raw)


def eks(
    name: str,
    *bindings: str,
    version: str | None = "1.0.0",
    vpc: str | None = VPC,
    vpc_message: str = "",
    role: str = "web",
) -> ObservedCluster:
    tags = {"role": role, **({"okra.mumo.co/version": version} if version else {})}
    return ObservedCluster(
        name,
        tuple(Binding("apps", b, ARN.format(b)) for b in bindings),
        vars={
            "cluster": {"name": name, "server": f"https://{name}"},
            "awseks": {"cluster": {"name": name, "tags": tags}},
        },
        vpc_id=vpc,
        vpc_message=vpc_message,
        version=version,
    )


def existing(objs: Any, arns: dict[str, str] | None = None) -> list[Existing]:
    return [
        Existing(
            o["metadata"]["name"],
            o["metadata"]["annotations"][CLUSTER_ANNOTATION],
            o["metadata"]["annotations"][HASH_ANNOTATION],
            arn=(arns or {}).get(o["metadata"]["name"], ""),
        )
        for o in objs
    ]


def settled(spec: AWSTargetGroupSetSpec, clusters: list[ObservedCluster]) -> Plan:
    """The plan once every generated binding reported an ARN (its group's name in it)."""
    first = plan("web", "u", "ns", spec, clusters, [])
    arns = {
        b["metadata"]["name"]: ARN.format(b["spec"]["targetGroup"]["name"])
        for b in first.apply_bindings
    }
    return plan("web", "u", "ns", spec, clusters, [], existing(first.apply_bindings, arns))


def test_the_seed_set_makes_one_binding_per_cluster_that_creates_its_group() -> None:
    p = plan("web", "uid-1", "ns", spec_of(), [eks("c1"), eks("c2")], [])
    assert [b["metadata"]["name"] for b in p.apply_bindings] == ["web-c1", "web-c2"]
    b = p.apply_bindings[0]
    assert b["spec"] == {
        "targetGroup": {"name": "web-c1", "vpcID": VPC},
        "targets": [
            {
                "name": "specificnodeincluster",
                "clusterName": "c1",
                "nodeSelector": {"matchLabels": {"type": "node"}},
                "port": 8080,
            }
        ],
    }
    AWSTargetGroupBindingSpec.model_validate(b["spec"])  # what the binding controller reads
    assert b["metadata"]["labels"] == {"role": "web", SET_LABEL: "web"}
    assert b["metadata"]["annotations"][CLUSTER_ANNOTATION] == "c1"
    assert BINDING_ANNOTATION not in b["metadata"]["annotations"]
    owner = b["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("AWSTargetGroupSet", "web", "uid-1")
    # No ARN reported yet: no AWSTargetGroup, and the cluster says what it waits for.
    assert p.apply == ()
    assert [(c.name, c.reachable, c.target_groups) for c in p.clusters] == [
        ("c1", True, 0),
        ("c2", True, 0),
    ]
    assert "waiting for AWSTargetGroupBinding web-c1" in p.clusters[0].message


def test_the_reported_arn_makes_the_clusters_awstargetgroup_with_its_version() -> None:
    p = settled(spec_of(), [eks("c1", version="1.0.0"), eks("c2", version="v2")])
    assert p.apply_bindings == ()  # in sync
    groups = {g["metadata"]["name"]: g for g in p.apply}
    assert set(groups) == {"web-c1", "web-c2"}
    g = groups["web-c2"]
    assert g["spec"] == {"arn": ARN.format("web-c2")}
    assert g["metadata"]["labels"] == {
        "role": "web",
        "okra.mumo.co/version": "v2",
        SET_LABEL: "web",
    }
    assert g["metadata"]["annotations"][GENERATED_BINDING_ANNOTATION] == "web-c2"
    assert [(c.target_groups, c.message) for c in p.clusters] == [(1, ""), (1, "")]
    assert p.desired == 2


def test_an_idle_set_writes_nothing() -> None:
    spec, clusters = spec_of(), [eks("c1")]
    first = plan("web", "u", "ns", spec, clusters, [])
    arns = {"web-c1": ARN.format("web-c1")}
    have_b = existing(first.apply_bindings, arns)
    second = plan("web", "u", "ns", spec, clusters, [], have_b)
    again = plan("web", "u", "ns", spec, clusters, existing(second.apply), have_b)
    assert (again.apply, again.delete, again.apply_bindings, again.delete_bindings) == (
        (),
        (),
        (),
        (),
    )


def test_a_template_version_label_wins_and_an_invalid_tag_is_not_copied() -> None:
    raw = {
        **SEED,
        "template": {"metadata": {"labels": {"okra.mumo.co/version": "{{.awseks.cluster.name}}"}}},
    }
    p = settled(spec_of(raw), [eks("c1", version="3.0.0")])
    assert p.apply[0]["metadata"]["labels"]["okra.mumo.co/version"] == "c1"
    p = settled(spec_of(), [eks("c1", version="not a label value!")])
    assert "okra.mumo.co/version" not in p.apply[0]["metadata"]["labels"]
    p = settled(spec_of(), [eks("c1", version=None)])
    assert "okra.mumo.co/version" not in p.apply[0]["metadata"]["labels"]


def test_found_bindings_also_get_the_eks_version_tag() -> None:
    spec = AWSTargetGroupSetSpec.model_validate({**SEED, "bindingTemplate": None})
    p = plan("web", "u", "ns", spec, [eks("c1", "api", version="1.2.0")], [])
    assert p.apply[0]["metadata"]["labels"]["okra.mumo.co/version"] == "1.2.0"


def test_a_cluster_with_target_group_bindings_keeps_the_found_path() -> None:
    p = plan("web", "u", "ns", spec_of(), [eks("c1", "api")], [])
    assert [g["metadata"]["name"] for g in p.apply] == ["web-c1-apps-api"]
    (b,) = p.apply_bindings
    assert b["spec"]["targetGroupARN"] == ARN.format("api")
    assert "targetGroup" not in b["spec"]
    assert b["metadata"]["annotations"][BINDING_ANNOTATION] == "apps/api"


def test_a_cluster_that_is_not_eks_without_bindings_gets_nothing() -> None:
    argo = eks("c1", vpc=None)
    assert not owns_group(spec_of().binding_template, argo)
    p = plan("web", "u", "ns", spec_of(), [argo], [])
    assert (p.apply, p.apply_bindings, p.clusters[0].message) == ((), (), "")


def test_a_template_target_group_makes_every_cluster_own_its_group() -> None:
    group = {"name": "tg-{{.cluster.name}}", "vpcID": "vpc-given", "port": 80}
    spec = spec_of(targetGroup=group)
    argo = eks("c1", "api", vpc=None)  # bindings found, but the template names a group
    p = plan("web", "u", "ns", spec, [argo], [])
    (b,) = p.apply_bindings
    assert b["spec"]["targetGroup"] == {"name": "tg-c1", "vpcID": "vpc-given", "port": 80}
    assert "targetGroupARN" not in b["spec"]
    assert p.apply == ()
    # Without vpcID and no VPC known: a template error of that cluster, naming the field.
    spec = spec_of(targetGroup={"name": "tg"})
    p = plan("web", "u", "ns", spec, [argo], [])
    assert p.apply_bindings == ()
    assert "write bindingTemplate.spec.targetGroup.vpcID" in p.clusters[0].message
    assert p.clusters[0].message.startswith("template:")


def test_an_eks_cluster_whose_vpc_is_unknown_is_a_template_error_saying_why() -> None:
    c = eks("c1", vpc="", vpc_message="EC2 DescribeSubnets: AccessDenied")
    p = plan("web", "u", "ns", spec_of(), [c], [])
    assert p.apply_bindings == ()
    assert "AccessDenied" in p.clusters[0].message
    assert "bindingTemplate.spec.targetGroup.vpcID" in p.clusters[0].message


def test_a_cluster_that_leaves_loses_its_binding_and_group_an_unreachable_one_keeps_them() -> None:
    spec = spec_of()
    p = settled(spec, [eks("c1"), eks("c2")])
    have = existing(p.apply)
    first = plan("web", "u", "ns", spec, [eks("c1"), eks("c2")], [])
    have_b = existing(first.apply_bindings, {"web-c1": ARN.format("a"), "web-c2": ARN.format("b")})
    gone = plan("web", "u", "ns", spec, [eks("c1")], have, have_b)
    assert (gone.delete, gone.delete_bindings) == (("web-c2",), ("web-c2",))
    down = ObservedCluster("c2", None, "connection refused")
    kept = plan("web", "u", "ns", spec, [eks("c1"), down], have, have_b)
    assert (kept.delete, kept.delete_bindings, kept.apply_bindings) == ((), (), ())
    assert kept.clusters[1].target_groups == 1


def test_a_group_whose_binding_lost_its_arn_is_kept_as_it_is() -> None:
    spec = spec_of()
    have = existing(settled(spec, [eks("c1")]).apply)
    first = plan("web", "u", "ns", spec, [eks("c1")], [])
    p = plan("web", "u", "ns", spec, [eks("c1")], have, existing(first.apply_bindings))
    assert (p.apply, p.delete) == ((), ())
    assert p.clusters[0].target_groups == 1
    assert "waiting" in p.clusters[0].message


def test_a_changed_template_rewrites_the_bindings() -> None:
    spec = spec_of()
    first = plan("web", "u", "ns", spec, [eks("c1")], [])
    have_b = existing(first.apply_bindings, {"web-c1": ARN.format("web-c1")})
    raw = {**SEED, "bindingTemplate": {**SEED["bindingTemplate"], "spec": {"targets": []}}}
    p = plan("web", "u", "ns", spec_of(raw), [eks("c1")], [], have_b)
    assert [b["spec"].get("targets") for b in p.apply_bindings] == [[]]


def test_one_binding_name_for_two_clusters_is_a_template_error_of_the_second() -> None:
    raw = {**SEED, "bindingTemplate": {**SEED["bindingTemplate"], "metadata": {"name": "web"}}}
    p = plan("web", "u", "ns", spec_of(raw), [eks("c1"), eks("c2")], [])
    assert [b["metadata"]["name"] for b in p.apply_bindings] == ["web"]
    assert "generated twice" in p.clusters[1].message


def test_a_template_group_arn_keeps_the_found_path_even_without_bindings() -> None:
    p = plan("web", "u", "ns", spec_of(targetGroupARN=ARN.format("x")), [eks("c1")], [])
    assert p.apply_bindings == ()  # nothing found to generate beside


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("web-c1", "web-c1"),
        ("web.c1_x", "web-c1-x"),
        ("-a--b-", "a-b"),
        ("", "x"),
    ],
)
def test_target_group_names(name: str, want: str) -> None:
    assert target_group_name(name) == want


def test_a_long_target_group_name_is_cut_with_a_hash_and_stays_unique() -> None:
    a = target_group_name("web-" + "a" * 40)
    b = target_group_name("web-" + "a" * 39 + "b")
    assert len(a) == len(b) == 32
    assert a != b
    assert a[:23] == ("web-" + "a" * 40)[:23]
    assert not a.endswith("-")
    assert not a.startswith("-")


def test_a_long_binding_name_gives_a_valid_group_name() -> None:
    long = "c" * 60
    p = plan("web", "u", "ns", spec_of(), [eks(long)], [])
    name = p.apply_bindings[0]["spec"]["targetGroup"]["name"]
    assert len(name) <= 32
    AWSTargetGroupBindingSpec.model_validate(p.apply_bindings[0]["spec"])


def test_a_waiting_cluster_says_what_its_binding_reports() -> None:
    spec = spec_of()
    first = plan("web", "u", "ns", spec, [eks("c1")], [])
    (b,) = first.apply_bindings
    refused = Existing(
        "web-c1",
        "c1",
        b["metadata"]["annotations"][HASH_ANNOTATION],
        problem="CreateTargetGroup: AccessDenied",
    )
    p = plan("web", "u", "ns", spec, [eks("c1")], [], [refused])
    assert p.clusters[0].message == (
        "waiting for AWSTargetGroupBinding web-c1 to report its target group "
        "(it says: CreateTargetGroup: AccessDenied)"
    )
    assert (p.apply, p.apply_bindings) == ((), ())
    assert p.clusters[0].binding_problem
    assert not first.clusters[0].binding_problem  # waiting, with nothing wrong said yet
