"""The Route 53 config's pure parts: `desired` (the spec's records in the API's shape,
target groups resolved to their load balancers), `plan` (the one change batch, or none),
`applied` (status in the spec's shape), `effective_at` (INSYNC + TTL), the spec's rules,
and the Cell's Route 53 config spec and limits."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.cell import CellRoute53
from okra_controllers.api.v1alpha1.route53 import AWSRoute53RecordSetConfigSpec
from okra_controllers.aws.route53 import LoadBalancer, fqdn, zone_id
from okra_controllers.cell.configspec import route53_spec
from okra_controllers.cell.plan import Forward
from okra_controllers.route53config.plan import (
    applied,
    desired,
    effective_at,
    in_sync,
    plan,
    same,
    weight_for_share,
    weights_note,
)

TG = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{}/0123"
LBS = {
    TG.format("a"): LoadBalancer("lb-a", "a-1.us-east-1.elb.amazonaws.com", "Z35SXDOTRQ7X7K"),
    TG.format("b"): LoadBalancer("lb-b", "b-2.us-east-1.elb.amazonaws.com", "Z35SXDOTRQ7X7K"),
}


def spec(records: list[dict[str, Any]], **kw: Any) -> AWSRoute53RecordSetConfigSpec:
    return AWSRoute53RecordSetConfigSpec.model_validate(
        {
            "hostedZoneID": "/hostedzone/Z1",
            "recordName": "App.Example.com",
            "records": records,
            **kw,
        }
    )


def tg_records(**weights: int) -> list[dict[str, Any]]:
    return [
        {"setIdentifier": n, "weight": w, "targetGroupARN": TG.format(n)}
        for n, w in weights.items()
    ]


def listed(s: AWSRoute53RecordSetConfigSpec) -> list[dict[str, Any]]:
    """What ListResourceRecordSets shows after the spec was written as planned (names
    as Route 53 spells them)."""
    out = []
    for r in desired(s, LBS).records:
        r = dict(r)
        if "AliasTarget" in r:
            r["AliasTarget"] = {**r["AliasTarget"], "DNSName": r["AliasTarget"]["DNSName"] + "."}
        out.append(r)
    return out


def test_target_group_records_become_aliases_to_their_load_balancers() -> None:
    d = desired(spec(tg_records(a=80, b=20)), LBS)
    assert d.problems == ()
    assert d.records == (
        {
            "Name": "app.example.com.",
            "Type": "A",
            "SetIdentifier": "a",
            "Weight": 80,
            "AliasTarget": {
                "HostedZoneId": "Z35SXDOTRQ7X7K",
                "DNSName": "a-1.us-east-1.elb.amazonaws.com",
                "EvaluateTargetHealth": False,
            },
        },
        {
            "Name": "app.example.com.",
            "Type": "A",
            "SetIdentifier": "b",
            "Weight": 20,
            "AliasTarget": {
                "HostedZoneId": "Z35SXDOTRQ7X7K",
                "DNSName": "b-2.us-east-1.elb.amazonaws.com",
                "EvaluateTargetHealth": False,
            },
        },
    )


def test_cname_records_carry_the_load_balancer_name_with_the_ttl() -> None:
    d = desired(spec(tg_records(a=100), recordType="CNAME", ttl=30), LBS)
    assert d.records[0]["TTL"] == 30
    assert d.records[0]["ResourceRecords"] == [{"Value": "a-1.us-east-1.elb.amazonaws.com"}]
    assert "AliasTarget" not in d.records[0]


def test_plain_values_and_given_aliases_are_written_as_given() -> None:
    s = spec(
        [
            {"setIdentifier": "x", "weight": 1, "values": ["10.0.0.1", "10.0.0.2"]},
            {
                "setIdentifier": "y",
                "weight": 2,
                "aliasTarget": {"dnsName": "y.elb", "hostedZoneID": "/hostedzone/ZY"},
            },
        ],
        ttl=5,
    )
    x, y = desired(s, {}).records
    assert x["ResourceRecords"] == [{"Value": "10.0.0.1"}, {"Value": "10.0.0.2"}]
    assert x["TTL"] == 5
    assert y["AliasTarget"] == {
        "HostedZoneId": "ZY",
        "DNSName": "y.elb",
        "EvaluateTargetHealth": False,
    }


def test_a_target_group_without_a_load_balancer_is_a_problem_naming_the_field() -> None:
    d = desired(spec(tg_records(a=50, c=50)), LBS)
    assert [r["SetIdentifier"] for r in d.records] == ["a"]
    assert len(d.problems) == 1
    assert d.problems[0].startswith("spec.records[1].targetGroupARN:")


def test_nothing_to_write_when_route53_already_answers_as_planned() -> None:
    s = spec(tg_records(a=80, b=20))
    p = plan(desired(s, LBS).records, listed(s))
    assert p.nothing
    assert p.changes == ()
    assert in_sync(desired(s, LBS).records, listed(s))


def test_missing_records_are_created_in_one_batch() -> None:
    s = spec(tg_records(a=80, b=20))
    p = plan(desired(s, LBS).records, [])
    assert [c["Action"] for c in p.changes] == ["UPSERT", "UPSERT"]
    assert p.created == ("a", "b")
    assert (p.updated, p.deleted) == ((), ())


def test_a_changed_weight_is_one_upsert_of_that_record() -> None:
    now = listed(spec(tg_records(a=100, b=0)))
    p = plan(desired(spec(tg_records(a=80, b=20)), LBS).records, now)
    assert [(c["Action"], c["ResourceRecordSet"]["SetIdentifier"]) for c in p.changes] == [
        ("UPSERT", "a"),
        ("UPSERT", "b"),
    ]
    assert p.updated == ("a", "b")
    p = plan(desired(spec(tg_records(a=80, b=0)), LBS).records, now)
    assert [c["ResourceRecordSet"]["SetIdentifier"] for c in p.changes] == ["a"]


def test_records_the_spec_no_longer_lists_are_deleted_first_with_their_exact_values() -> None:
    now = listed(spec(tg_records(a=50, b=50)))
    p = plan(desired(spec(tg_records(b=100)), LBS).records, now)
    assert [c["Action"] for c in p.changes] == ["DELETE", "UPSERT"]
    assert p.changes[0]["ResourceRecordSet"] == now[0]
    assert p.deleted == ("a",)


def test_a_plain_record_of_the_same_name_and_type_is_deleted() -> None:
    plain = {
        "Name": "app.example.com.",
        "Type": "A",
        "TTL": 300,
        "ResourceRecords": [{"Value": "1.2.3.4"}],
    }
    p = plan(desired(spec(tg_records(a=100)), LBS).records, [plain])
    assert p.changes[0] == {"Action": "DELETE", "ResourceRecordSet": plain}
    assert p.deleted == ("app.example.com. A (plain)",)


def test_drift_of_a_hand_edited_record_is_planned_back() -> None:
    s = spec(tg_records(a=80, b=20))
    edited = listed(s)
    edited[1] = {**edited[1], "Weight": 200}
    p = plan(desired(s, LBS).records, edited)
    assert [(c["Action"], c["ResourceRecordSet"]["Weight"]) for c in p.changes] == [("UPSERT", 20)]
    retargeted = listed(s)
    retargeted[0] = {
        **retargeted[0],
        "AliasTarget": {**retargeted[0]["AliasTarget"], "DNSName": "evil."},
    }
    assert not plan(desired(s, LBS).records, retargeted).nothing
    health_checked = listed(s)
    health_checked[0] = {**health_checked[0], "HealthCheckId": "hc-1"}
    assert not plan(desired(s, LBS).records, health_checked).nothing


def test_records_compare_by_meaning() -> None:
    a = {
        "SetIdentifier": "x",
        "Weight": 1,
        "TTL": 60,
        "ResourceRecords": [{"Value": "1.1.1.1"}, {"Value": "2.2.2.2"}],
    }
    assert same(a, {**a, "ResourceRecords": [{"Value": "2.2.2.2"}, {"Value": "1.1.1.1"}]})
    assert not same(a, {**a, "TTL": 61})
    alias: dict[str, Any] = {
        "SetIdentifier": "y",
        "Weight": 1,
        "AliasTarget": {"HostedZoneId": "Z", "DNSName": "A.elb", "EvaluateTargetHealth": False},
    }
    assert same(
        alias,
        {
            **alias,
            "AliasTarget": {
                "HostedZoneId": "/hostedzone/Z",
                "DNSName": "a.elb.",
                "EvaluateTargetHealth": False,
            },
        },
    )
    assert not same(
        alias, {**alias, "AliasTarget": {**alias["AliasTarget"], "EvaluateTargetHealth": True}}
    )


@given(
    before=st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 255), max_size=6),
    after=st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 255), min_size=1, max_size=6),
)
def test_applying_the_plan_gives_the_spec_and_a_second_plan_is_empty(
    before: dict[str, int], after: dict[str, int]
) -> None:
    """Applying the batch as Route 53 does (DELETE removes, UPSERT replaces by identifier)
    leaves exactly the desired records: the next plan writes nothing."""
    values = {
        n: {"setIdentifier": n, "weight": w, "values": [f"10.0.0.{ord(n)}"]}
        for n, w in before.items()
    }
    now = list(desired(spec(list(values.values())), {}).records) if values else []
    want = desired(
        spec(
            [
                {"setIdentifier": n, "weight": w, "values": [f"10.0.0.{ord(n)}"]}
                for n, w in after.items()
            ]
        ),
        {},
    ).records
    p = plan(want, now)
    records = {r["SetIdentifier"]: r for r in now}
    for c in p.changes:
        sid = c["ResourceRecordSet"]["SetIdentifier"]
        if c["Action"] == "DELETE":
            assert records.pop(sid) == c["ResourceRecordSet"]
        else:
            records[sid] = c["ResourceRecordSet"]
    assert plan(want, list(records.values())).nothing
    assert {r["SetIdentifier"] for r in records.values()} == set(after)
    assert p.nothing == (sorted(before.items()) == sorted(after.items()))


def test_applied_reads_back_in_the_spec_order() -> None:
    s = spec(tg_records(b=20, a=80))
    got = applied(s, list(reversed(listed(s))))
    assert got.record_name == "app.example.com."
    assert [(r.set_identifier, r.weight) for r in got.records] == [("b", 20), ("a", 80)]
    assert got.records[0].alias_target is not None
    assert weights_note(listed(s)) == "b=20, a=80"


def test_weights_are_in_effect_a_ttl_after_insync_to_the_second_up() -> None:
    t = datetime.datetime(2026, 1, 1, 12, 0, 0, 300000, tzinfo=datetime.UTC)
    assert effective_at(t, 60) == datetime.datetime(2026, 1, 1, 12, 1, 1, tzinfo=datetime.UTC)
    whole = t.replace(microsecond=0)
    assert effective_at(whole, 0) == whole


def test_shares_are_route53_weights() -> None:
    assert [weight_for_share(s) for s in (0, 20, 50, 100)] == [0, 20, 50, 100]


@pytest.mark.parametrize(
    "bad",
    [
        {"records": []},
        {"records": [{"setIdentifier": "a", "weight": 256, "values": ["x"]}]},
        {"records": [{"setIdentifier": "a", "weight": 1}]},
        {
            "records": [
                {
                    "setIdentifier": "a",
                    "weight": 1,
                    "values": ["x"],
                    "targetGroupARN": TG.format("a"),
                }
            ]
        },
        {
            "records": [
                {"setIdentifier": "a", "weight": 1, "values": ["x"]},
                {"setIdentifier": "a", "weight": 1, "values": ["y"]},
            ]
        },
        {"recordType": "MX", "records": [{"setIdentifier": "a", "weight": 1, "values": ["x"]}]},
        {
            "roleARN": "arn:aws:iam::12:role/x",
            "records": [{"setIdentifier": "a", "weight": 1, "values": ["x"]}],
        },
    ],
)
def test_the_spec_rules(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        AWSRoute53RecordSetConfigSpec.model_validate(
            {"hostedZoneID": "Z1", "recordName": "a.example.com", **bad}
        )


def test_the_cells_route53_config_spec_names_each_record_by_its_target_group() -> None:
    lb = CellRoute53.model_validate(
        {
            "hostedZoneID": "Z1",
            "recordName": "app.example.com",
            "ttl": 5,
            "roleARN": "arn:aws:iam::222222222222:role/okra-dns",
            "targetGroupSelector": {"matchLabels": {"role": "web"}},
        }
    )
    forward = (
        Forward("web-b", TG.format("b"), 20, "v2"),
        Forward("web-a", TG.format("a"), 80, "v1"),
    )
    got = route53_spec(lb, forward)
    assert got == {
        "hostedZoneID": "Z1",
        "recordName": "app.example.com",
        "recordType": "A",
        "ttl": 5,
        "roleARN": "arn:aws:iam::222222222222:role/okra-dns",
        "records": [
            {"setIdentifier": "web-a", "weight": 80, "targetGroupARN": TG.format("a")},
            {"setIdentifier": "web-b", "weight": 20, "targetGroupARN": TG.format("b")},
        ],
    }
    AWSRoute53RecordSetConfigSpec.model_validate(got)  # a valid config


def test_names_and_zone_ids_as_route53_keeps_them() -> None:
    assert fqdn("App.Example.com") == "app.example.com."
    assert fqdn("app.example.com.") == "app.example.com."
    assert zone_id("/hostedzone/Z1") == "Z1"
