"""AWSTargetGroupSet's `awsTargetGroups` generator: target groups found by their AWS tags
(pure planning), and the batched read that finds them (against a stand-in ELBv2 client that
answers as AWS does, limits included)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from botocore.exceptions import ClientError
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.targetgroupset import AWSTargetGroupSetSpec
from okra_controllers.aws.elbv2 import (
    TAGS_BATCH,
    TaggedTargetGroup,
    batches,
    tagged_target_groups,
)
from okra_controllers.targetgroupset.plan import (
    CLUSTER_ANNOTATION,
    HASH_ANNOTATION,
    MAX_PROBLEMS,
    SET_LABEL,
    TARGET_GROUP_ANNOTATION,
    Binding,
    Existing,
    ObservedCluster,
    ObservedTargetGroups,
    Plan,
    plan,
    version_problem,
)

ARN = "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/{}/0123456789abcdef"
VERSION = "okra.mumo.co/version"


def spec(*generators: Mapping[str, Any], **extra: Any) -> AWSTargetGroupSetSpec:
    return AWSTargetGroupSetSpec.model_validate(
        {"generators": [{"awsTargetGroups": g} for g in generators], **extra}
    )


WEB = {"targetGroupSelector": {"matchTags": {"app": "web", "env": "prod"}}}
SPEC = spec(WEB, template={"metadata": {"labels": {"role": "web"}}})


def tg(name: str, /, **tags: str) -> TaggedTargetGroup:
    return TaggedTargetGroup(ARN.format(name), name, tags)


def web(name: str, version: str | None = "1.0.0", /, **tags: str) -> TaggedTargetGroup:
    """A target group as Terraform would tag it for the web app."""
    base = {"app": "web", "env": "prod", **tags}
    if version is not None:
        base[VERSION] = version
    return tg(name, **base)


def seen(*groups: TaggedTargetGroup, **kw: Any) -> ObservedTargetGroups:
    return ObservedTargetGroups(tuple(groups), **kw)


def run(
    observed: ObservedTargetGroups | None,
    existing: Sequence[Existing] = (),
    s: AWSTargetGroupSetSpec = SPEC,
    clusters: Sequence[ObservedCluster] = (),
) -> Plan:
    return plan("web", "uid-1", "ns", s, clusters, existing, (), observed)


def existing_of(objs: Any) -> list[Existing]:
    return [
        Existing(
            o["metadata"]["name"],
            o["metadata"]["annotations"].get(CLUSTER_ANNOTATION, ""),
            o["metadata"]["annotations"][HASH_ANNOTATION],
            o["metadata"]["annotations"].get(TARGET_GROUP_ANNOTATION, ""),
        )
        for o in objs
    ]


def names(objs: Any) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


# --- matching ----------------------------------------------------------------------------


def test_a_target_group_matches_when_it_carries_every_selected_tag_with_that_value() -> None:
    p = run(
        seen(
            web("web-v1", team="a"),  # extra tags are fine
            tg("api-v1", app="api", env="prod", **{VERSION: "1.0.0"}),
            tg("web-stg", app="web", env="staging", **{VERSION: "1.0.0"}),
            tg("web-half", app="web", **{VERSION: "1.0.0"}),  # env missing
            tg("web-case", app="Web", env="prod", **{VERSION: "1.0.0"}),  # values are exact
        )
    )
    assert names(p.apply) == ["web-web-v1"]
    assert p.tagged is not None
    assert (p.tagged.read, p.tagged.matched, p.tagged.target_groups) == (True, 1, 1)
    assert p.desired == 1


def test_the_group_carries_its_arn_version_template_labels_set_label_and_owner() -> None:
    p = run(seen(web("web-v1", "1.2.0")))
    (o,) = p.apply
    assert o["kind"] == "AWSTargetGroup"
    assert o["spec"] == {"arn": ARN.format("web-v1")}
    assert o["metadata"]["namespace"] == "ns"
    assert o["metadata"]["labels"] == {"role": "web", VERSION: "1.2.0", SET_LABEL: "web"}
    assert o["metadata"]["annotations"][TARGET_GROUP_ANNOTATION] == "web-v1"
    assert CLUSTER_ANNOTATION not in o["metadata"]["annotations"]
    owner = o["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "AWSTargetGroupSet",
        "web",
        "uid-1",
        True,
    )


def test_the_first_generator_a_group_matches_labels_it() -> None:
    s = spec(
        {"targetGroupSelector": {"matchTags": {"app": "web"}}, "versionTag": "release"},
        {"targetGroupSelector": {"matchTags": {"env": "prod"}}, "versionTag": "build"},
    )
    p = run(
        seen(
            tg("both", app="web", env="prod", release="2.0.0", build="9.9.9"),
            tg("second", app="api", env="prod", build="3.0.0"),
        ),
        s=s,
    )
    got = {o["metadata"]["name"]: o["metadata"]["labels"][VERSION] for o in p.apply}
    assert got == {"web-both": "2.0.0", "web-second": "3.0.0"}


def test_an_empty_tag_selector_is_refused_by_the_api() -> None:
    with pytest.raises(ValidationError, match="matchTags"):
        spec({"targetGroupSelector": {"matchTags": {}}})
    with pytest.raises(ValidationError, match="targetGroupSelector"):
        spec({"versionTag": "version"})


def test_a_version_label_that_is_not_a_label_key_is_refused_by_the_api() -> None:
    with pytest.raises(ValidationError, match="versionLabel"):
        spec({**WEB, "versionLabel": "not a label"})


# --- versions ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1.2.3", "v1.2.3", "V2", "1.2", "2.0.0-rc.1", "10.0.1"])
def test_versions_a_cell_reads_are_accepted_as_written(value: str) -> None:
    assert version_problem(value, "version", "target group") is None
    (o,) = run(seen(web("web-v1", value))).apply
    assert o["metadata"]["labels"][VERSION] == value


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (None, "target group has no tag 'okra.mumo.co/version'"),
        ("banana", "'banana' is not a version"),
        ("", "'' is not a version"),
        ("1.2.3.4", "is not a version"),
        ("latest", "is not a version"),
        ("1.2.3+build.7", "not a valid label value"),
    ],
)
def test_a_missing_or_invalid_version_is_reported_never_guessed(
    value: str | None, says: str
) -> None:
    p = run(seen(web("web-v1", value), web("web-v2", "2.0.0")))
    assert names(p.apply) == ["web-web-v2"]
    assert p.tagged is not None
    assert p.tagged.matched == 2
    assert p.tagged.target_groups == 1
    ((name, why),) = p.tagged.problems
    assert name == "web-v1"
    assert says in why


def test_the_version_comes_from_the_tag_the_user_names_into_the_label_they_name() -> None:
    s = spec({**WEB, "versionTag": "Version", "versionLabel": "example.com/release"})
    (o,) = run(
        seen(tg("web-v1", app="web", env="prod", Version="v3.1", **{VERSION: "9"})), s=s
    ).apply
    assert o["metadata"]["labels"]["example.com/release"] == "v3.1"
    assert VERSION not in o["metadata"]["labels"]


def test_the_generated_version_wins_over_a_template_label_of_the_same_key() -> None:
    s = spec(WEB, template={"metadata": {"labels": {VERSION: "0.0.1"}}})
    (o,) = run(seen(web("web-v1", "1.5.0")), s=s).apply
    assert o["metadata"]["labels"][VERSION] == "1.5.0"


def test_an_existing_group_whose_version_turns_invalid_is_kept_as_it_is() -> None:
    have = existing_of(run(seen(web("web-v1", "1.0.0"))).apply)
    p = run(seen(web("web-v1", "oops")), have)
    assert p.apply == ()
    assert p.delete == ()
    assert p.tagged is not None
    assert p.tagged.target_groups == 1
    assert [n for n, _ in p.tagged.problems] == ["web-v1"]


# --- the EKS cluster's version tag ----------------------------------------------------------

EKS = spec(
    {**WEB, "versionTag": "version", "eksClusterTag": "eks-cluster"},
    template={"metadata": {"labels": {"cluster": "{{.cluster.name}}"}}},
)


def test_with_eks_cluster_tag_the_version_is_the_named_clusters_tag() -> None:
    observed = seen(
        web("web-blue", None, **{"eks-cluster": "blue", "version": "9.9.9"}),
        eks_tags={"blue": {"version": "1.29.0"}, "green": {"version": "1.30.0"}},
    )
    (o,) = run(observed, s=EKS).apply
    assert o["metadata"]["labels"][VERSION] == "1.29.0"
    assert o["metadata"]["labels"]["cluster"] == "blue"
    assert o["metadata"]["annotations"][CLUSTER_ANNOTATION] == "blue"


@pytest.mark.parametrize(
    ("tags", "eks_tags", "says"),
    [
        ({}, {"blue": {"version": "1.0.0"}}, "no tag 'eks-cluster' naming its EKS cluster"),
        ({"eks-cluster": "gone"}, {"blue": {"version": "1.0.0"}}, "'gone' (tag eks-cluster)"),
        ({"eks-cluster": "blue"}, {"blue": {}}, "EKS cluster blue has no tag 'version'"),
        ({"eks-cluster": "blue"}, {"blue": {"version": "x"}}, "EKS cluster blue tag version="),
        ({"eks-cluster": "blue"}, None, "EKS cluster blue not read: ListClusters failed"),
    ],
)
def test_eks_cluster_problems_are_reported(
    tags: dict[str, str], eks_tags: dict[str, dict[str, str]] | None, says: str
) -> None:
    observed = seen(
        web("web-blue", None, **tags), eks_tags=eks_tags, eks_message="ListClusters failed"
    )
    p = run(observed, s=EKS)
    assert p.apply == ()
    assert p.tagged is not None
    ((_, why),) = p.tagged.problems
    assert says in why


def test_eks_unreadable_keeps_groups_labelled_from_it() -> None:
    first = seen(
        web("web-blue", None, **{"eks-cluster": "blue"}), eks_tags={"blue": {"version": "1"}}
    )
    have = existing_of(run(first, s=EKS).apply)
    p = run(seen(web("web-blue", None, **{"eks-cluster": "blue"}), eks_message="denied"), have, EKS)
    assert (p.apply, p.delete) == ((), ())


# --- templates ---------------------------------------------------------------------------


def test_template_variables_are_the_target_groups_name_arn_and_tags() -> None:
    s = spec(
        WEB,
        template={
            "metadata": {
                "labels": {
                    "tg": "{{.awsTargetGroup.name}}",
                    "team": "{{.awsTargetGroup.tags.team}}",
                },
                "annotations": {"arn": "{{.awsTargetGroup.arn}}"},
            }
        },
    )
    (o,) = run(seen(web("web-v1", team="payments")), s=s).apply
    assert o["metadata"]["labels"]["tg"] == "web-v1"
    assert o["metadata"]["labels"]["team"] == "payments"
    assert o["metadata"]["annotations"]["arn"] == ARN.format("web-v1")


def test_a_template_that_cannot_be_rendered_is_a_problem_of_that_group() -> None:
    s = spec(WEB, template={"metadata": {"labels": {"v": "{{.cluster.labels.version}}"}}})
    p = run(seen(web("web-v1")), s=s)
    assert p.apply == ()
    assert p.tagged is not None
    ((name, why),) = p.tagged.problems
    assert name == "web-v1"
    assert why.startswith("template:")
    assert "cluster" in why


# --- sync and pruning ------------------------------------------------------------------------


def test_in_sync_makes_no_writes_and_a_new_version_tag_rewrites_the_label() -> None:
    have = existing_of(run(seen(web("web-v1", "1.0.0"))).apply)
    again = run(seen(web("web-v1", "1.0.0")), have)
    assert (again.apply, again.delete) == ((), ())
    bumped = run(seen(web("web-v1", "1.1.0")), have)
    assert [o["metadata"]["labels"][VERSION] for o in bumped.apply] == ["1.1.0"]
    assert bumped.delete == ()


def test_a_target_group_gone_from_aws_is_pruned() -> None:
    have = existing_of(run(seen(web("web-v1"), web("web-v2", "2.0.0"))).apply)
    p = run(seen(web("web-v2", "2.0.0")), have)
    assert p.delete == ("web-web-v1",)
    assert p.apply == ()


def test_a_target_group_that_stops_matching_is_pruned() -> None:
    have = existing_of(run(seen(web("web-v1"))).apply)
    retagged = tg("web-v1", app="web", env="staging", **{VERSION: "1.0.0"})
    assert run(seen(retagged), have).delete == ("web-web-v1",)


def test_removing_the_generator_prunes_its_groups() -> None:
    have = existing_of(run(seen(web("web-v1"))).apply)
    other = AWSTargetGroupSetSpec.model_validate({"generators": [{"argocdClusters": {}}]})
    p = run(None, have, other)
    assert p.delete == ("web-web-v1",)
    assert p.tagged is None


def test_when_aws_cannot_be_read_nothing_found_by_tags_changes() -> None:
    have = existing_of(run(seen(web("web-v1"), web("web-v2", "2.0.0"))).apply)
    p = run(ObservedTargetGroups(None, "AccessDenied"), have)
    assert (p.apply, p.delete) == ((), ())
    assert p.tagged is not None
    assert (p.tagged.read, p.tagged.message, p.tagged.target_groups) == (False, "AccessDenied", 2)


def test_groups_of_bindings_and_groups_of_tags_never_prune_each_other() -> None:
    mixed = AWSTargetGroupSetSpec.model_validate(
        {"generators": [{"argocdClusters": {}}, {"awsTargetGroups": WEB}]}
    )
    c1 = ObservedCluster("c1", (Binding("apps", "svc", ARN.format("svc")),))
    first = run(seen(web("web-v1")), s=mixed, clusters=[c1])
    assert sorted(names(first.apply)) == ["web-c1-apps-svc", "web-web-v1"]
    have = existing_of(first.apply)
    # AWS unreadable: the cluster's groups still follow the cluster
    p = run(ObservedTargetGroups(None, "throttled"), have, mixed, [ObservedCluster("c1", ())])
    assert p.delete == ("web-c1-apps-svc",)
    # the cluster unreachable: the tag groups still follow AWS
    p = run(seen(), have, mixed, [ObservedCluster("c1", None, "down")])
    assert p.delete == ("web-web-v1",)


def test_a_name_another_generator_already_has_is_a_problem_of_the_tagged_group() -> None:
    mixed = AWSTargetGroupSetSpec.model_validate(
        {"generators": [{"argocdClusters": {}}, {"awsTargetGroups": WEB}]}
    )
    c = ObservedCluster("c1", (Binding("apps", "x", ARN.format("x")),))
    p = run(seen(web("c1-apps-x")), s=mixed, clusters=[c])
    assert names(p.apply) == ["web-c1-apps-x"]
    assert p.apply[0]["spec"]["arn"] == ARN.format("x")
    assert p.tagged is not None
    assert "generated for another" in p.tagged.problems[0][1]


def test_many_target_groups_and_problems_are_counted_but_at_most_twenty_listed() -> None:
    good = [web(f"web-{i:03}", f"1.{i}.0") for i in range(45)]
    bad = [web(f"bad-{i:03}", "nope") for i in range(30)]
    p = run(seen(*good, *bad, *(tg(f"other-{i}", app="api") for i in range(50))))
    assert len(p.apply) == 45
    assert p.tagged is not None
    assert (p.tagged.matched, p.tagged.target_groups) == (75, 45)
    assert len(p.tagged.problems) == MAX_PROBLEMS
    assert p.tagged.problem_count == 30


@given(
    st.lists(
        st.tuples(
            st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True),
            st.booleans(),
            st.sampled_from(["1.0.0", "v2", "bad", None]),
        ),
        max_size=30,
        unique_by=lambda t: t[0],
    ),
    st.lists(st.booleans(), max_size=30),
)
def test_after_applying_a_plan_the_next_plan_is_idle_and_prunes_only_what_left(
    groups: list[tuple[str, bool, str | None]], keep: list[bool]
) -> None:
    """Any mix of matching, non-matching and unversioned groups: applying the plan and planning
    again writes nothing; then dropping some groups from AWS deletes exactly theirs."""
    observed = [
        web(n, v) if matching else tg(n, app="other", **({VERSION: v} if v else {}))
        for n, matching, v in groups
    ]
    first = run(seen(*observed))
    have = existing_of(first.apply)
    again = run(seen(*observed), have)
    assert (again.apply, again.delete) == ((), ())
    kept = [g for i, g in enumerate(observed) if i < len(keep) and keep[i]]
    later = run(seen(*kept), have)
    kept_names = set(names(run(seen(*kept)).apply))  # as the plan names them ("a--0": "web-a-0")
    assert set(later.delete) == {e.name for e in have} - kept_names
    assert later.apply == ()


# --- the batched read ------------------------------------------------------------------------


def _error(code: str, op: str, status: int = 400) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": code},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, op)


class FakeElb:
    """Answers DescribeTargetGroups in pages and DescribeTags as ELBv2 does: at most 20 ARNs,
    and the whole call refused when one of them does not exist."""

    def __init__(self, groups: Sequence[TaggedTargetGroup], page: int = 7) -> None:
        self.groups = {g.arn: g for g in groups}
        self.page = page
        self.calls: list[tuple[str, Any]] = []
        self.deleted_after_listing: set[str] = set()
        self.tags_error: ClientError | None = None

    async def describe_target_groups(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("DescribeTargetGroups", kw.get("Marker")))
        arns = sorted(self.groups)
        start = int(kw.get("Marker") or 0)
        size = min(kw.get("PageSize", 400), self.page)
        out: dict[str, Any] = {
            "TargetGroups": [
                {"TargetGroupArn": a, "TargetGroupName": self.groups[a].name}
                for a in arns[start : start + size]
            ]
        }
        if start + size < len(arns):
            out["NextMarker"] = str(start + size)
        return out

    async def describe_tags(self, ResourceArns: list[str]) -> dict[str, Any]:  # noqa: N803
        self.calls.append(("DescribeTags", list(ResourceArns)))
        if self.tags_error is not None:
            raise self.tags_error
        if len(ResourceArns) > 20:
            raise _error("ValidationError", "DescribeTags")
        if any(a not in self.groups or a in self.deleted_after_listing for a in ResourceArns):
            raise _error("TargetGroupNotFound", "DescribeTags")
        return {
            "TagDescriptions": [
                {
                    "ResourceArn": a,
                    "Tags": [{"Key": k, "Value": v} for k, v in self.groups[a].tags.items()],
                }
                for a in ResourceArns
            ]
        }


@given(st.lists(st.text(max_size=3), max_size=70), st.integers(1, 25))
def test_batches_keep_order_and_never_exceed_the_size(items: list[str], size: int) -> None:
    out = batches(items, size)
    assert [x for b in out for x in b] == items
    assert all(0 < len(b) <= size for b in out)


async def test_many_target_groups_are_read_page_by_page_with_tags_in_batches_of_twenty() -> None:
    groups = [web(f"web-{i:03}", f"1.{i}.0") for i in range(45)]
    elb = FakeElb(groups)
    got = await tagged_target_groups(elb)
    assert got == sorted(groups, key=lambda g: g.arn)
    pages = [c for c in elb.calls if c[0] == "DescribeTargetGroups"]
    assert len(pages) == 7  # 45 groups, 7 a page
    tag_calls = [c[1] for c in elb.calls if c[0] == "DescribeTags"]
    assert sorted(len(b) for b in tag_calls) == [5, 20, 20]
    assert TAGS_BATCH == 20
    assert sorted(a for b in tag_calls for a in b) == sorted(g.arn for g in groups)


async def test_no_target_groups_no_tags_call() -> None:
    elb = FakeElb([])
    assert await tagged_target_groups(elb) == []
    assert [c[0] for c in elb.calls] == ["DescribeTargetGroups"]


async def test_a_group_deleted_between_listing_and_tags_is_left_out_not_an_error() -> None:
    groups = [web(f"web-{i:02}") for i in range(25)]
    elb = FakeElb(groups)
    gone = groups[3].arn
    elb.deleted_after_listing.add(gone)
    got = await tagged_target_groups(elb)
    assert {g.arn for g in got} == {g.arn for g in groups} - {gone}
    # the batch with it was asked again one ARN at a time; the other batch once
    singles = [c for c in elb.calls if c[0] == "DescribeTags" and len(c[1]) == 1]
    assert len(singles) == 20


@pytest.mark.parametrize("code", ["AccessDenied", "Throttling"])
async def test_any_other_error_is_raised_so_that_nothing_is_changed(code: str) -> None:
    elb = FakeElb([web("web-v1")])
    elb.tags_error = _error(code, "DescribeTags")
    with pytest.raises(ClientError, match=code):
        await tagged_target_groups(elb)
