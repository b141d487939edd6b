"""AWSTargetGroupSet planning and Argo CD cluster Secret parsing (pure)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSetSpec
from okra_controllers.clusters.connect import (
    ClusterSecretError,
    parse_cluster_secret,
)
from okra_controllers.targetgroupset.plan import (
    CLUSTER_ANNOTATION,
    HASH_ANNOTATION,
    SET_LABEL,
    Binding,
    Existing,
    ObservedCluster,
    TemplateError,
    dns_name,
    plan,
    render,
)
from okra_runtime.envtest.certs import make_pki

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


def test_render_substitutes_and_rejects_unknown() -> None:
    v = {"awseks": {"cluster": {"name": "eks1", "tags": {"version": "v2"}}}}
    assert render("{{.awseks.cluster.name}}-{{ .awseks.cluster.tags.version }}", v) == "eks1-v2"
    with pytest.raises(TemplateError, match=r"tags\.nope"):
        render("{{.awseks.cluster.tags.nope}}", v)


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
