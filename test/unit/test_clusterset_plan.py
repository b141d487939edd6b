"""The ClusterSet plan: which clusters count, what their Argo CD Secrets hold, and which
Secrets are created, updated, deleted or left alone."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from okra_controllers.api.v1alpha1.clusterset import ClusterSet, ClusterSetSpec
from okra_controllers.clusterset.plan import (
    CLUSTERSET_LABEL,
    SECRET_TYPE_LABEL,
    EksCluster,
    Owner,
    TemplateError,
    desired_secret,
    plan,
    render,
    secret_name,
    selects,
)

OWNER = Owner("cart", "argocd", "uid-cart")
CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n").decode()


def spec(match: dict[str, str] | None = None, **template: Any) -> ClusterSetSpec:
    return ClusterSetSpec.model_validate(
        {
            "generators": [
                {"awseks": {"clusterSelector": {"matchTags": match or {"role": "web"}}}}
            ],
            "template": {"metadata": template},
        }
    )


def eks(name: str, status: str = "ACTIVE", **tags: str) -> EksCluster:
    return EksCluster(
        name=name,
        status=status,
        endpoint=f"https://{name}.eks.example",
        ca_data=CA,
        tags={"role": "web", **tags},
    )


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


# -- selection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cluster", "selected"),
    [
        (eks("a"), True),
        (eks("a", env="prod"), True),  # extra tags do not matter
        (eks("a", status="CREATING"), False),
        (eks("a", status="DELETING"), False),
        (eks("a", status="UPDATING"), False),
        (EksCluster("a", "ACTIVE", "https://a", CA, {"role": "api"}), False),
        (EksCluster("a", "ACTIVE", "https://a", CA, {}), False),
    ],
)
def test_only_active_clusters_with_every_matched_tag_are_selected(
    cluster: EksCluster, selected: bool
) -> None:
    assert selects(spec(), cluster) is selected


def test_every_match_tag_must_match() -> None:
    s = spec({"role": "web", "env": "prod"})
    assert selects(s, eks("a", env="prod"))
    assert not selects(s, eks("a", env="staging"))
    assert not selects(s, eks("a"))


def test_any_generator_may_select_and_empty_match_tags_select_all_active() -> None:
    s = ClusterSetSpec.model_validate(
        {
            "generators": [
                {"awseks": {"clusterSelector": {"matchTags": {"role": "api"}}}},
                {"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}},
            ]
        }
    )
    assert selects(s, eks("a"))
    everything = ClusterSetSpec.model_validate({"generators": [{"awseks": {}}]})
    assert selects(everything, EksCluster("b", "ACTIVE", "https://b", CA, {}))
    assert not selects(everything, EksCluster("b", "FAILED", "https://b", CA, {}))


# -- template ---------------------------------------------------------------------------------


def test_render_substitutes_name_and_tags() -> None:
    c = eks("web-1", env="prod")
    assert render("{{.awseks.cluster.name}}", c) == "web-1"
    assert render("{{ .awseks.cluster.tags.env }}-x", c) == "prod-x"
    assert render("plain", c) == "plain"
    assert render("{{.awseks.cluster.name}}/{{.awseks.cluster.tags.role}}", c) == "web-1/web"


def test_render_of_a_missing_tag_is_an_error_naming_it() -> None:
    missing = (
        r"cluster web-1: template variable \{\{\.awseks\.cluster\.tags\.env\}\} is not defined"
    )
    with pytest.raises(TemplateError, match=missing):
        render("{{.awseks.cluster.tags.env}}", eks("web-1"))


def test_secret_is_in_argo_cd_format_with_template_labels() -> None:
    s = spec(
        labels={
            "role": "web",
            "cluster": "{{.awseks.cluster.name}}",
            "env": "{{.awseks.cluster.tags.env}}",
        },
        annotations={"note": "from {{.awseks.cluster.name}}"},
    )
    secret = desired_secret(OWNER, s, eks("web-1", env="prod"))
    meta = secret["metadata"]
    assert (secret["apiVersion"], secret["kind"], secret["type"]) == ("v1", "Secret", "Opaque")
    assert (meta["name"], meta["namespace"]) == ("cart-web-1", "argocd")
    assert meta["labels"] == {
        "role": "web",
        "cluster": "web-1",
        "env": "prod",
        SECRET_TYPE_LABEL: "cluster",
        CLUSTERSET_LABEL: "cart",
    }
    assert meta["annotations"] == {"note": "from web-1"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "ClusterSet",
            "name": "cart",
            "uid": "uid-cart",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    data = decoded(secret)
    assert data["name"] == "web-1"
    assert data["server"] == "https://web-1.eks.example"
    assert json.loads(data["config"]) == {
        "awsAuthConfig": {"clusterName": "web-1"},
        "tlsClientConfig": {"insecure": False, "caData": CA},
    }


def test_role_arn_of_the_selecting_generator_goes_into_aws_auth_config() -> None:
    s = ClusterSetSpec.model_validate(
        {
            "generators": [
                {
                    "awseks": {
                        "clusterSelector": {"matchTags": {"role": "web"}},
                        "roleARN": "arn:aws:iam::123456789012:role/argocd",
                    }
                }
            ]
        }
    )
    config = json.loads(decoded(desired_secret(OWNER, s, eks("web-1")))["config"])
    assert config["awsAuthConfig"] == {
        "clusterName": "web-1",
        "roleARN": "arn:aws:iam::123456789012:role/argocd",
    }


def test_an_invalid_rendered_label_value_is_an_error() -> None:
    s = spec(labels={"owner": "{{.awseks.cluster.tags.owner}}"})
    with pytest.raises(TemplateError, match="not a valid label value"):
        desired_secret(OWNER, s, eks("web-1", owner="Jane Doe"))


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [("web-1", "cart-web-1"), ("web1", "cart-web1")],
)
def test_secret_name_is_clusterset_dash_cluster(cluster: str, expected: str) -> None:
    assert secret_name("cart", cluster) == expected


def test_secret_name_is_dns_safe_and_distinct_for_names_that_would_collide() -> None:
    a, b = secret_name("cart", "Web_1"), secret_name("cart", "web-1")
    assert a != b
    assert a.startswith("cart-web-1-")
    long = secret_name("cart", "x" * 100)
    assert len(long) <= 253
    for name in (a, long, secret_name("cart", "A__B")):
        assert all(ch.islower() or ch.isdigit() or ch == "-" for ch in name), name
        assert name[0].isalnum()
        assert name[-1].isalnum()


# -- desired vs existing ----------------------------------------------------------------------


def existing(secret: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """As the server returns it: with uid, resourceVersion."""
    out: dict[str, Any] = json.loads(json.dumps(secret))
    out["metadata"].update({"uid": f"uid-{out['metadata']['name']}", "resourceVersion": "7"})
    out["metadata"].update(meta)
    return out


S = spec(labels={"env": "{{.awseks.cluster.tags.env}}"})


def test_new_clusters_get_secrets_created() -> None:
    p = plan(OWNER, S, [eks("b", env="prod"), eks("a", env="dev")], [])
    assert p.clusters == ["a", "b"]
    assert [s["metadata"]["name"] for s in p.create] == ["cart-a", "cart-b"]
    assert (p.update, p.delete, p.foreign, p.errors) == ([], [], [], [])


def test_nothing_is_written_when_in_sync() -> None:
    have = existing(desired_secret(OWNER, S, eks("a", env="dev")))
    p = plan(OWNER, S, [eks("a", env="dev")], [have])
    assert (p.create, p.update, p.delete) == ([], [], [])
    assert p.in_sync == ["cart-a"]


def test_the_app_labels_a_cell_put_on_a_secret_are_kept() -> None:
    """A Cell's Argo CD strategy labels the Secrets a ClusterSet writes: the ClusterSet
    neither removes them (a resync is no update) nor drops them when it updates."""
    from okra_controllers.api.v1alpha1.cell import CellArgoCD
    from okra_controllers.cell.argocd import label_patch

    have = existing(desired_secret(OWNER, S, eks("a", env="dev")))
    argo = CellArgoCD.model_validate({"clusterSecret": {"labels": {"myservice-role": "web"}}})
    patch = label_patch(argo, add=True)["metadata"]
    have["metadata"]["labels"].update(patch["labels"])
    have["metadata"].setdefault("annotations", {}).update(patch["annotations"])
    p = plan(OWNER, S, [eks("a", env="dev")], [have])
    assert (p.create, p.update) == ([], [])
    p = plan(OWNER, S, [eks("a", env="prod")], [have])
    (upd,) = p.update
    assert upd["metadata"]["labels"]["myservice-role"] == "web"
    assert upd["metadata"]["labels"]["env"] == "prod"
    assert upd["metadata"]["annotations"]["okra.mumo.co/cell-labels"] == "myservice-role"
    # A label the Cell does not name is the ClusterSet's to remove.
    have["metadata"]["labels"]["stray"] = "x"
    assert plan(OWNER, S, [eks("a", env="dev")], [have]).update


def test_a_tag_change_updates_labels_keeping_resource_version() -> None:
    have = existing(desired_secret(OWNER, S, eks("a", env="dev")))
    have["metadata"]["finalizers"] = ["keep/me"]
    p = plan(OWNER, S, [eks("a", env="prod")], [have])
    (upd,) = p.update
    assert upd["metadata"]["labels"]["env"] == "prod"
    assert upd["metadata"]["resourceVersion"] == "7"
    assert upd["metadata"]["finalizers"] == ["keep/me"]
    assert p.create == []
    assert p.in_sync == []


@pytest.mark.parametrize(
    "change",
    ["endpoint", "ca", "stray_label", "annotation", "string_data"],
)
def test_any_content_change_is_an_update(change: str) -> None:
    cluster = eks("a", env="dev")
    have = existing(desired_secret(OWNER, S, cluster))
    if change == "endpoint":
        cluster = EksCluster("a", "ACTIVE", "https://moved", CA, cluster.tags)
    elif change == "ca":
        cluster = EksCluster("a", "ACTIVE", cluster.endpoint, "bmV3", cluster.tags)
    elif change == "stray_label":
        have["metadata"]["labels"]["extra"] = "x"
    elif change == "annotation":
        have["metadata"]["annotations"] = {"edited": "by hand"}
    else:
        have["data"]["server"] = base64.b64encode(b"https://elsewhere").decode()
    p = plan(OWNER, S, [cluster], [have])
    assert len(p.update) == 1
    want = desired_secret(OWNER, S, cluster)
    assert p.update[0]["data"] == want["data"]
    assert p.update[0]["metadata"]["labels"] == want["metadata"]["labels"]
    assert "annotations" not in p.update[0]["metadata"]


def test_gone_inactive_or_deselected_clusters_lose_their_owned_secrets() -> None:
    secrets = [existing(desired_secret(OWNER, S, eks(n, env="dev"))) for n in ("a", "b", "c", "d")]
    clusters = [
        eks("a", env="dev"),
        eks("b", status="DELETING", env="dev"),
        EksCluster("c", "ACTIVE", "https://c", CA, {"role": "api", "env": "dev"}),
    ]  # d is gone
    p = plan(OWNER, S, clusters, secrets)
    assert sorted(s["metadata"]["name"] for s in p.delete) == ["cart-b", "cart-c", "cart-d"]
    assert p.in_sync == ["cart-a"]


def test_secrets_of_unknown_clusters_are_kept() -> None:
    have = existing(desired_secret(OWNER, S, eks("a", env="dev")))
    p = plan(OWNER, S, [], [have], unknown=["a"])
    assert (p.delete, p.update, p.create) == ([], [], [])


def test_a_secret_not_owned_is_left_alone_and_reported() -> None:
    by_hand = existing(desired_secret(OWNER, S, eks("x", env="dev")), ownerReferences=[])
    other_owner = existing(
        desired_secret(Owner("cart", "argocd", "uid-old"), S, eks("a", env="dev"))
    )
    p = plan(OWNER, S, [eks("a", env="prod")], [by_hand, other_owner])
    assert (p.create, p.update, p.delete) == ([], [], [])
    assert sorted(p.foreign) == ["cart-a", "cart-x"]
    assert p.blocked == ["cart-a"]  # the wanted name is taken: reported as an error
    assert len(p.errors) == 1
    assert "cart-a" in p.errors[0]
    assert "not owned" in p.errors[0]


def test_a_template_error_skips_that_cluster_only_and_keeps_its_secret() -> None:
    have = existing(desired_secret(OWNER, S, eks("a", env="dev")))
    p = plan(
        OWNER,
        S,
        [EksCluster("a", "ACTIVE", "https://a", CA, {"role": "web"}), eks("b", env="x")],
        [have],
    )
    assert [s["metadata"]["name"] for s in p.create] == ["cart-b"]
    assert p.delete == []
    assert p.update == []
    assert len(p.errors) == 1
    assert "{{.awseks.cluster.tags.env}} is not defined" in p.errors[0]


def test_the_original_okra_manifest_is_accepted() -> None:
    doc = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "ClusterSet",
        "metadata": {"name": "cart"},
        "spec": {
            "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}}],
            "template": {"metadata": {"labels": {"role": "{{.awseks.cluster.name}}"}}},
        },
    }
    cs = ClusterSet.model_validate(doc)
    secret = desired_secret(OWNER, cs.spec, eks("web1"))
    assert secret["metadata"]["name"] == "cart-web1"
    assert secret["metadata"]["labels"]["role"] == "web1"


def test_ca_data_never_appears_in_repr_of_a_cluster() -> None:
    assert CA not in repr(eks("a"))
