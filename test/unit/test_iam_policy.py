"""config/iam/policy.json allows every AWS action okra's manager can make, and nothing more.

The list of actions is read out of the code, not written down beside it, so a new AWS call
fails this test until the policy allows it:

- every `client("<service>")` names a service; every attribute call whose name is one of that
  service's operations in botocore's own model (`describe_rules` -> `DescribeRules`) is an
  action, under the service's IAM prefix (`elbv2` -> `elasticloadbalancing`);
- an operation called with `Tags=` also needs `<prefix>:AddTags` (AWS checks tag-on-create
  separately);
- `generate_presigned_url("<operation>")` is that operation (EKS tokens presign STS
  GetCallerIdentity, which AWS lets every principal call: no permission needed);
- `SigV4Auth(..., "aps", ...)` signs Amazon Managed Prometheus requests: each Prometheus HTTP
  API path in that module maps to its `aps:` action.

Every module of okra's package is scanned; the test harness (the moto seeder, the emulator, the
demos) is okra-testkit's, outside it. The reverse holds too: an action in the policy that no code
makes is an error (least privilege), and removing any one action from the policy makes the check
fail.
"""

from __future__ import annotations

import ast
import copy
import fnmatch
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

from iampolicy import as_list, load, missing, statements

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "okra_controllers"
"""The shipped package, every module of it: the test harness that talks to the AWS emulator
(seeders, the emulator, the demos) is another distribution, okra-testkit, outside `src/`."""

IAM_PREFIX = {
    "elbv2": "elasticloadbalancing",
    "eks": "eks",
    "sts": "sts",
    "cloudwatch": "cloudwatch",
    "route53": "route53",
    "ec2": "ec2",
}
"""botocore service name -> IAM action prefix (they differ: elbv2, and cloudwatch signs as
`monitoring`). A service missing here fails the test: add it and its actions to the policy."""

LOCAL_SERVICES = {"ec2"}
"""Services whose operation names overlap others' (EC2 has DescribeTags, as ELBv2 has): their
operations count only in the modules that make a client of theirs."""

AMP_ACTIONS = {
    "/api/v1/query": "aps:QueryMetrics",
    "/api/v1/query_range": "aps:QueryMetrics",
    "/api/v1/series": "aps:GetSeries",
    "/api/v1/labels": "aps:GetLabels",
    "/api/v1/metadata": "aps:GetMetricMetadata",
}
"""Prometheus HTTP API path -> Amazon Managed Prometheus IAM action."""


@cache
def _operations(service: str) -> dict[str, str]:
    """snake_case method name -> API operation name, from botocore's model of `service`."""
    model = botocore.session.get_session().get_service_model(service)
    return {xform_name(op): op for op in model.operation_names}


def _modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC).as_posix(), ast.parse(path.read_text(), filename=str(path))


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _func_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return None


@cache
def code_actions() -> dict[str, frozenset[str]]:
    """Every IAM action the manager's code can make -> the modules that make it."""
    calls: list[tuple[str, ast.Call]] = [
        (rel, node)
        for rel, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    ]
    services = {
        svc
        for _, c in calls
        if _func_name(c) in ("client", "create_client")
        and (svc := _literal(c.args[0] if c.args else None))
    }
    unknown = services - IAM_PREFIX.keys()
    assert not unknown, (
        f"okra calls AWS services this test does not know: {unknown}; map them in IAM_PREFIX"
    )
    found: dict[str, set[str]] = {}

    def add(action: str, rel: str) -> None:
        found.setdefault(action, set()).add(rel)

    made_in = {
        (rel, svc)
        for rel, c in calls
        if _func_name(c) in ("client", "create_client")
        and (svc := _literal(c.args[0] if c.args else None))
    }
    for rel, c in calls:
        name = _func_name(c)
        if name == "generate_presigned_url":
            name = _literal(c.args[0] if c.args else None)
        for svc in sorted(services):
            op = _operations(svc).get(name or "")
            if op is None or (svc in LOCAL_SERVICES and (rel, svc) not in made_in):
                continue
            add(f"{IAM_PREFIX[svc]}:{op}", rel)
            if any(k.arg == "Tags" for k in c.keywords):
                add(f"{IAM_PREFIX[svc]}:AddTags", rel)
        if name == "SigV4Auth" and len(c.args) > 1 and _literal(c.args[1]) == "aps":
            source = (SRC / rel).read_text()
            paths = set(re.findall(r"/api/v1/[a-z_]+", source))
            assert paths, f"{rel} signs for aps but names no Prometheus API path"
            for path in paths:
                assert path in AMP_ACTIONS, f"{rel} calls {path}: map it to its aps action"
                add(AMP_ACTIONS[path], rel)
    return {a: frozenset(m) for a, m in found.items()}


def _load() -> dict[str, Any]:
    return load()


def test_the_scan_finds_the_calls_okra_is_known_to_make() -> None:
    """A floor, so a scanner that finds nothing cannot pass: these calls are the product."""
    found = code_actions()
    for action in (
        "elasticloadbalancing:DescribeRules",
        "elasticloadbalancing:ModifyRule",
        "elasticloadbalancing:CreateRule",
        "elasticloadbalancing:AddTags",
        "eks:ListClusters",
        "eks:DescribeCluster",
        "cloudwatch:GetMetricData",
        "sts:GetCallerIdentity",
        "aps:QueryMetrics",
    ):
        assert action in found, action
    assert "ec2:CreateVpc" not in found, "the moto seeder is test machinery"


def test_policy_allows_every_action_the_code_makes() -> None:
    found = code_actions()
    gaps = missing(_load(), set(found))
    assert not gaps, "config/iam/policy.json lacks: " + ", ".join(
        f"{a} (called in {sorted(found[a])})" for a in sorted(gaps)
    )


def test_policy_allows_nothing_the_code_does_not_make() -> None:
    found = set(code_actions())
    extra = [
        pattern
        for s in statements(_load())
        for pattern in as_list(s["Action"])
        if not any(fnmatch.fnmatchcase(a.lower(), pattern.lower()) for a in found)
    ]
    assert not extra, f"the policy allows actions okra never makes: {extra}"
    wildcards = [p for s in statements(_load()) for p in as_list(s["Action"]) if "*" in p]
    assert not wildcards, f"name each action instead of {wildcards}"


def test_policy_is_well_formed_and_scoped() -> None:
    policy = _load()
    assert policy["Version"] == "2012-10-17"
    sids = [s["Sid"] for s in statements(policy)]
    assert len(sids) == len(set(sids)), "duplicate Sid"
    for s in statements(policy):
        assert s["Effect"] == "Allow", s["Sid"]
        assert set(s) <= {"Sid", "Effect", "Action", "Resource", "Condition"}, s["Sid"]
        resources = as_list(s["Resource"])
        assert all(r == "*" or r.startswith("arn:aws:") for r in resources), s["Sid"]
        if resources == ["*"]:
            # Only actions AWS cannot scope to a resource may use "*": reads and list calls.
            for action in as_list(s["Action"]):
                verb = action.split(":")[1]
                assert verb.startswith(("Describe", "List", "Get")), (s["Sid"], action)


def _without(policy: dict[str, Any], action: str) -> dict[str, Any]:
    out = copy.deepcopy(policy)
    for s in statements(out):
        s["Action"] = [a for a in as_list(s["Action"]) if a != action]
    return out


@pytest.mark.parametrize(
    "action", sorted({a for s in statements(_load()) for a in as_list(s["Action"])})
)
def test_removing_any_action_from_the_policy_is_caught(action: str) -> None:
    assert missing(_without(_load(), action), set(code_actions())) == {action}
