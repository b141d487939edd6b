"""AWSTargetGroupSet planning and Argo CD cluster Secret parsing (pure)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.api.v1alpha1.targetgroupbinding import AWSTargetGroupBinding
from okra_controllers.api.v1alpha1.targetgroupset import (
    AWSTargetGroupSetSpec,
    TargetGroupBindingTemplate,
    spelling_warnings,
)
from okra_controllers.clusters.connect import (
    ClusterSecretError,
    parse_cluster_secret,
)
from okra_controllers.targetgroupset.plan import (
    BINDING_ANNOTATION,
    CLUSTER_ANNOTATION,
    HASH_ANNOTATION,
    SET_LABEL,
    Binding,
    Existing,
    ObservedCluster,
    dns_name,
    plan,
)
from okra_testkit.envtest.certs import make_pki

ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{}/0123456789abcdef"
SPEC = AWSTargetGroupSetSpec.model_validate(
    {
        "generators": [{"argocdClusters": {"selector": {"matchLabels": {"env": "prod"}}}}],
        "bindingSelector": {"matchLabels": {"role": "web"}},
        "template": {
            "metadata": {
                "labels": {
                    "role": "web",
                    "okra.mumo.co/version": "{{.cluster.labels.version}}",
                    "cluster": "{{.cluster.name}}",
                }
            }
        },
    }
)


def cluster(name: str, version: str, *bindings: str) -> ObservedCluster:
    return ObservedCluster(
        name,
        tuple(Binding("apps", b, ARN.format(b)) for b in bindings),
        vars={"cluster": {"name": name, "labels": {"version": version}}},
    )


def existing_of(objs: Any) -> list[Existing]:
    return [
        Existing(
            o["metadata"]["name"],
            o["metadata"]["annotations"][CLUSTER_ANNOTATION],
            o["metadata"]["annotations"][HASH_ANNOTATION],
        )
        for o in objs
    ]


def test_one_group_per_binding_with_template_labels_and_owner() -> None:
    p = plan("web", "uid-1", "ns", SPEC, [cluster("c1", "1.2.0", "web", "api")], [])
    assert [o["metadata"]["name"] for o in p.apply] == ["web-c1-apps-api", "web-c1-apps-web"]
    o = p.apply[1]
    assert o["spec"] == {"arn": ARN.format("web")}
    assert o["metadata"]["labels"] == {
        "role": "web",
        "okra.mumo.co/version": "1.2.0",
        "cluster": "c1",
        SET_LABEL: "web",
    }
    assert o["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert o["metadata"]["ownerReferences"][0]["controller"] is True
    assert p.clusters[0].reachable
    assert p.clusters[0].target_groups == 2
    assert p.delete == ()


def test_in_sync_makes_no_writes_and_a_changed_label_rewrites() -> None:
    first = plan("web", "u", "ns", SPEC, [cluster("c1", "1.2.0", "web")], [])
    again = plan("web", "u", "ns", SPEC, [cluster("c1", "1.2.0", "web")], existing_of(first.apply))
    assert again.apply == ()
    assert again.delete == ()
    bumped = plan("web", "u", "ns", SPEC, [cluster("c1", "1.3.0", "web")], existing_of(first.apply))
    assert [o["metadata"]["labels"]["okra.mumo.co/version"] for o in bumped.apply] == ["1.3.0"]


def test_gone_binding_is_pruned_but_unreachable_cluster_keeps_its_groups() -> None:
    both = [cluster("c1", "1", "a", "b"), cluster("c2", "2", "x")]
    have = existing_of(plan("s", "u", "ns", SPEC, both, []).apply)
    p = plan(
        "s",
        "u",
        "ns",
        SPEC,
        [cluster("c1", "1", "a"), ObservedCluster("c2", None, "connection refused")],
        have,
    )
    assert p.delete == ("s-c1-apps-b",)
    assert p.apply == ()
    c2 = next(c for c in p.clusters if c.name == "c2")
    assert (c2.reachable, c2.message, c2.target_groups) == (False, "connection refused", 1)


def test_a_cluster_no_longer_selected_is_pruned() -> None:
    have = existing_of(plan("s", "u", "ns", SPEC, [cluster("c2", "2", "x")], []).apply)
    assert plan("s", "u", "ns", SPEC, [], have).delete == ("s-c2-apps-x",)


def test_template_error_is_reported_and_keeps_that_clusters_groups() -> None:
    have = existing_of(plan("s", "u", "ns", SPEC, [cluster("c1", "1", "a")], []).apply)
    broken = ObservedCluster("c1", (Binding("apps", "a", ARN.format("a")),), vars={})
    p = plan("s", "u", "ns", SPEC, [broken], have)
    assert p.delete == ()
    assert p.apply == ()
    assert "cluster.labels.version" in p.clusters[0].message


def test_bindings_without_arn_are_skipped_with_a_message() -> None:
    c = ObservedCluster("c1", (Binding("apps", "a", ""),), vars={"cluster": {"labels": {}}})
    spec = AWSTargetGroupSetSpec.model_validate({"generators": [{"argocdClusters": {}}]})
    p = plan("s", "u", "ns", spec, [c], [])
    assert p.apply == ()
    assert "skipped" in p.clusters[0].message


BINDING_TEMPLATE = {
    "metadata": {
        "name": "web-{{.cluster.name}}",
        "labels": {"role": "web", "version": "{{.cluster.labels.version}}"},
        "annotations": {"note": "from {{.cluster.name}}"},
    },
    "spec": {
        "targets": [
            {
                "name": "nodes",
                "clusterName": "{{.cluster.name}}",
                "nodeSelector": {"type": "node"},
                "port": 8080,
            }
        ]
    },
}


def with_binding_template(template: dict[str, Any] = BINDING_TEMPLATE) -> AWSTargetGroupSetSpec:
    return SPEC.model_copy(
        update={"binding_template": TargetGroupBindingTemplate.model_validate(template)}
    )


def test_the_seed_binding_template_is_accepted() -> None:
    spec = AWSTargetGroupSetSpec.model_validate(
        {
            "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}}],
            "bindingTemplate": {
                "metadata": {
                    "name": "web-{{.awseks.cluster.name}}",
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
    )
    eks = ObservedCluster(
        "eks1",
        (Binding("apps", "web", ARN.format("web")),),
        vars={
            "cluster": {"name": "eks1"},
            "awseks": {"cluster": {"name": "eks1", "tags": {"role": "web"}}},
        },
    )
    p = plan("web", "u", "ns", spec, [eks], [])
    (b,) = p.apply_bindings
    assert b["metadata"]["name"] == "web-eks1"
    assert b["metadata"]["labels"] == {"role": "web", SET_LABEL: "web"}
    assert b["spec"]["targets"][0]["clusterName"] == "eks1"


def test_binding_template_generates_a_binding_beside_each_group() -> None:
    p = plan("web", "uid-1", "ns", with_binding_template(), [cluster("c1", "1.2.0", "web")], [])
    assert [o["kind"] for o in p.apply] == ["AWSTargetGroup"]
    (b,) = p.apply_bindings
    assert (p.desired, p.desired_bindings) == (1, 1)
    assert b["apiVersion"] == "okra.mumo.co/v1alpha1"
    assert b["kind"] == "AWSTargetGroupBinding"
    assert b["metadata"]["name"] == "web-c1"
    assert b["metadata"]["namespace"] == "ns"
    assert b["metadata"]["labels"] == {"role": "web", "version": "1.2.0", SET_LABEL: "web"}
    ann = b["metadata"]["annotations"]
    assert ann["note"] == "from c1"
    assert (ann[CLUSTER_ANNOTATION], ann[BINDING_ANNOTATION]) == ("c1", "apps/web")
    assert ann[HASH_ANNOTATION]
    owner = b["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "AWSTargetGroupSet",
        "web",
        "uid-1",
        True,
    )
    assert b["spec"] == {
        "targetGroupARN": ARN.format("web"),
        "targets": [
            {
                "name": "nodes",
                "clusterName": "c1",
                "nodeSelector": {"matchLabels": {"type": "node"}},
                "port": 8080,
            }
        ],
    }
    # What is generated is a valid AWSTargetGroupBinding.
    AWSTargetGroupBinding.model_validate(b)


def test_no_binding_template_no_bindings() -> None:
    p = plan("web", "u", "ns", SPEC, [cluster("c1", "1", "web")], [])
    assert (p.apply_bindings, p.delete_bindings, p.desired_bindings) == ((), (), 0)


def test_binding_name_defaults_to_the_group_name_and_template_arn_wins() -> None:
    template = {
        "metadata": {"labels": {"cluster": "{{.cluster.name}}"}},
        "spec": {
            "targetGroupARN": ARN.format("fixed-{{.cluster.name}}"),
            "targets": [{"name": "ips", "ids": ["10.0.0.1"], "port": 80}],
        },
    }
    p = plan("web", "u", "ns", with_binding_template(template), [cluster("c1", "1", "a")], [])
    (g,) = p.apply
    (b,) = p.apply_bindings
    assert b["metadata"]["name"] == g["metadata"]["name"] == "web-c1-apps-a"
    assert b["spec"]["targetGroupARN"] == ARN.format("fixed-c1")


def test_binding_template_strings_are_substituted_everywhere() -> None:
    template = {
        "spec": {
            "targets": [
                {
                    "name": "n-{{.cluster.name}}",
                    "clusterName": "{{.cluster.name}}",
                    "nodeName": "node-{{.cluster.labels.version}}",
                    "port": 80,
                },
                {"name": "ips", "ids": ["{{.cluster.labels.version}}"], "port": 80},
            ],
        },
    }
    p = plan("web", "u", "ns", with_binding_template(template), [cluster("c1", "7", "a")], [])
    spec = p.apply_bindings[0]["spec"]
    assert "targetGroup" not in spec  # refused in a bindingTemplate: the ARN below wins
    assert spec["targets"][0] == {
        "name": "n-c1",
        "clusterName": "c1",
        "nodeName": "node-7",
        "port": 80,
    }
    assert spec["targets"][1]["ids"] == ["7"]
    assert spec["targetGroupARN"] == ARN.format("a")


def test_bindings_follow_the_groups_rules_for_sync_and_pruning() -> None:
    spec = with_binding_template()
    both = [cluster("c1", "1", "web"), cluster("c2", "2", "web")]
    first = plan("s", "u", "ns", spec, both, [])
    have, have_b = existing_of(first.apply), existing_of(first.apply_bindings)
    assert [b["metadata"]["name"] for b in first.apply_bindings] == ["web-c1", "web-c2"]

    # In sync: no writes.
    again = plan("s", "u", "ns", spec, both, have, have_b)
    assert (again.apply, again.apply_bindings, again.delete, again.delete_bindings) == (
        (),
        (),
        (),
        (),
    )

    # A changed variable rewrites the binding.
    bumped = plan("s", "u", "ns", spec, [both[0], cluster("c2", "3", "web")], have, have_b)
    assert [b["metadata"]["labels"]["version"] for b in bumped.apply_bindings] == ["3"]

    # c1's binding gone, c2 unreachable: c1's binding pruned, c2's kept.
    p = plan(
        "s",
        "u",
        "ns",
        spec,
        [cluster("c1", "1"), ObservedCluster("c2", None, "connection refused")],
        have,
        have_b,
    )
    assert p.delete_bindings == ("web-c1",)
    assert p.delete == ("s-c1-apps-web",)
    assert p.apply_bindings == ()

    # c2 no longer selected: pruned.
    assert plan("s", "u", "ns", spec, [both[0]], have, have_b).delete_bindings == ("web-c2",)

    # bindingTemplate removed: every generated binding is pruned, the groups stay.
    dropped = plan("s", "u", "ns", SPEC, both, have, have_b)
    assert dropped.delete_bindings == ("web-c1", "web-c2")
    assert (dropped.apply, dropped.delete) == ((), ())


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ({"metadata": {"name": "Web_{{.cluster.name}}"}}, "not a valid object name"),
        ({"metadata": {"name": "web"}}, "generated twice"),
        ({"metadata": {"labels": {"v": "{{.cluster.labels.nope}}"}}}, "cluster.labels.nope"),
        (
            {"spec": {"targetGroup": {"name": "{{.cluster.name}}_x", "vpcID": "v"}}},
            "targetGroup.name",
        ),
    ],
)
def test_binding_template_errors_keep_the_clusters_objects(
    template: dict[str, Any], message: str
) -> None:
    # Named after their groups by default: one binding per TargetGroupBinding.
    clusters = [cluster("c1", "1", "a", "b")]
    good_template = {"spec": BINDING_TEMPLATE["spec"]}
    good = plan("s", "u", "ns", with_binding_template(good_template), clusters, [])
    have, have_b = existing_of(good.apply), existing_of(good.apply_bindings)
    assert (len(have), len(have_b)) == (2, 2)
    # A broken bindingTemplate leaves the cluster's groups and bindings as they are.
    p = plan("s", "u", "ns", with_binding_template(template), clusters, have, have_b)
    assert (p.apply, p.delete, p.apply_bindings, p.delete_bindings) == ((), (), (), ())
    assert p.clusters[0].reachable
    assert p.clusters[0].message.startswith("template: ")
    assert message in p.clusters[0].message


def test_a_binding_name_taken_by_another_cluster_is_an_error_of_the_later_one() -> None:
    template = {"metadata": {"name": "web"}}
    p = plan(
        "s",
        "u",
        "ns",
        with_binding_template(template),
        [cluster("c2", "1", "a"), cluster("c1", "1", "a")],
        [],
    )
    assert [b["metadata"]["annotations"][CLUSTER_ANNOTATION] for b in p.apply_bindings] == ["c1"]
    c2 = next(c for c in p.clusters if c.name == "c2")
    assert "also for cluster c1" in c2.message
    # c1 unreachable and holding the name: c2 still may not take it.
    have_b = existing_of(p.apply_bindings)
    p2 = plan(
        "s",
        "u",
        "ns",
        with_binding_template(template),
        [ObservedCluster("c1", None, "down"), cluster("c2", "1", "a")],
        existing_of(p.apply),
        have_b,
    )
    assert (p2.apply_bindings, p2.delete_bindings) == ((), ())


@pytest.mark.parametrize(
    "parts",
    [
        ("web", "in-cluster", "default", "web"),
        ("Set_A", "https://1.2.3.4:6443", "ns", "b.c"),
        ("s" * 40, "cluster" * 10, "namespace" * 5, "binding" * 5),
    ],
)
def test_names_are_dns_labels(parts: tuple[str, ...]) -> None:
    import re

    n = dns_name(*parts)
    assert len(n) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n)


def test_long_names_stay_unique() -> None:
    long = "x" * 70
    assert dns_name("s", long, "a") != dns_name("s", long, "b")
    assert dns_name("s", long, "a") == dns_name("s", long, "a")


def _b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def secret(config: dict[str, Any], server: str = "https://k8s.example:6443") -> dict[str, Any]:
    return {
        "metadata": {"name": "c1", "namespace": "argocd", "uid": "u1", "labels": {"env": "p"}},
        "data": {
            "name": _b64("cluster-1"),
            "server": _b64(server),
            "config": _b64(json.dumps(config)),
        },
    }


def test_parse_bearer_secret_and_hide_credentials() -> None:
    ca = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    c = parse_cluster_secret(
        secret(
            {
                "bearerToken": "sekrit-token",
                "tlsClientConfig": {
                    "caData": base64.b64encode(ca).decode(),
                    "serverName": "kubernetes",
                },
            }
        )
    )
    assert (c.name, c.server, c.bearer_token, c.ca_data, c.server_name) == (
        "cluster-1",
        "https://k8s.example:6443",
        "sekrit-token",
        ca,
        "kubernetes",
    )
    assert c.labels == {"env": "p"}
    assert "sekrit" not in repr(c)
    assert "CERTIFICATE" not in repr(c)


def test_parse_eks_secret() -> None:
    c = parse_cluster_secret(
        secret({"awsAuthConfig": {"clusterName": "eks-1", "roleARN": "arn:aws:iam::1:role/r"}})
    )
    assert c.aws_auth is not None
    assert (c.aws_auth.cluster_name, c.aws_auth.role_arn) == ("eks-1", "arn:aws:iam::1:role/r")
    assert c.bearer_token is None


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s["data"].pop("server"), "data.server is missing"),
        (lambda s: s["data"].update(config=_b64("{nope")), "not JSON"),
        (lambda s: s["data"].update(config=_b64("{}")), "neither bearerToken"),
        (lambda s: s["data"].update(server="***"), "not base64"),
    ],
)
def test_bad_secrets_say_what_to_fix(mutate: Any, message: str) -> None:
    s = secret({"bearerToken": "t"})
    mutate(s)
    with pytest.raises(ClusterSecretError, match=message):
        parse_cluster_secret(s)


async def test_connections_are_cached_per_secret_and_rebuilt_when_it_changes() -> None:
    from okra_controllers.clusters.connect import ClusterConnections

    ca = base64.b64encode(make_pki().ca_cert_pem).decode()
    s = secret({"bearerToken": "t", "tlsClientConfig": {"caData": ca}})
    s["metadata"]["resourceVersion"] = "1"
    conns = ClusterConnections()
    try:
        first = await conns.client_for(s)
        assert await conns.client_for(s) is first
        assert first.api.configuration.host == "https://k8s.example:6443"
        ca_file = Path(str(first.api.configuration.ssl_ca_cert))
        assert ca_file.read_bytes().startswith(b"-----BEGIN CERTIFICATE")  # noqa: ASYNC240
        s["metadata"]["resourceVersion"] = "2"
        second = await conns.client_for(s)
        assert second is not first
        assert first.api.rest_client.pool_manager.closed
        assert not ca_file.exists()  # noqa: ASYNC240
        assert len(conns) == 1
        await conns.retain(lambda key: False)
        assert len(conns) == 0
        assert second.api.rest_client.pool_manager.closed
    finally:
        await conns.close()


async def test_a_ca_that_is_not_pem_is_a_secret_error_and_leaves_no_file() -> None:
    from okra_controllers.clusters.connect import ClusterConnections

    s = secret({"bearerToken": "t", "tlsClientConfig": {"caData": _b64("not a cert")}})
    conns = ClusterConnections()
    try:
        with pytest.raises(ClusterSecretError, match="not a PEM CA certificate"):
            await conns.client_for(s)
        assert len(conns) == 0
    finally:
        await conns.close()


def test_the_seeds_quoted_binding_name_is_read_as_meant_with_a_warning() -> None:
    """Seed 000 writes `name: web-"{{.awseks.cluster.name}}"` (quotes inside the value, which
    would render to a name the API server refuses): read as web-{{.awseks.cluster.name}}."""
    seed_name = 'web-"{{.awseks.cluster.name}}"'
    template = {**BINDING_TEMPLATE, "metadata": {"name": seed_name}}
    c = ObservedCluster(
        "c1",
        (Binding("apps", "web", ARN.format("web")),),
        vars={
            "cluster": {"name": "c1", "labels": {"version": "1"}},
            "awseks": {"cluster": {"name": "c1", "tags": {}}},
        },
    )
    p = plan("web", "u", "ns", with_binding_template(template), [c], [])
    assert [b["metadata"]["name"] for b in p.apply_bindings] == ["web-c1"]
    raw = {"generators": [], "bindingTemplate": {"metadata": {"name": seed_name}}}
    assert spelling_warnings(raw) == [
        "spec.bindingTemplate.metadata.name: write web-{{.awseks.cluster.name}} (the quotes "
        "around a placeholder are not part of a name; read without them)"
    ]
