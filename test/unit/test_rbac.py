"""okra's RBAC: declared per controller, no wildcards, and the committed roles are exactly what
okra_controllers.rbac renders (`make rbac` regenerates them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_controllers import rbac
from okra_controllers.rbac import CONTROLLER_RULES, PolicyRule, merge_rules
from okra_controllers.registry import CONTROLLERS

RBAC_DIR = Path(__file__).resolve().parents[2] / "config" / "rbac"


def _rules_in(path: Path) -> list[dict[str, Any]]:
    return [r for d in yaml.safe_load_all(path.read_text()) if d for r in d.get("rules", [])]


def test_every_controller_of_the_manager_declares_its_rules() -> None:
    missing = sorted(set(CONTROLLERS) - set(CONTROLLER_RULES))
    assert not missing, f"controllers without RBAC in okra_controllers.rbac: {missing}"
    for name, rules in CONTROLLER_RULES.items():
        assert rules, f"{name} declares no rules"


@pytest.mark.parametrize("path", sorted(RBAC_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_no_wildcards(path: Path) -> None:
    for r in _rules_in(path):
        for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
            assert not any("*" in v for v in r.get(key, [])), f"{path.name}: {key} has * in {r}"


def test_declarations_have_no_wildcards() -> None:
    for rules in CONTROLLER_RULES.values():
        for r in (*rules, *rbac.LEADER_ELECTION_RULES):
            assert not any("*" in t for t in (*r.api_groups, *r.resources, *r.verbs)), r


def test_committed_roles_match_what_rbac_renders() -> None:
    for name, text in rbac.render_all().items():
        assert (RBAC_DIR / name).read_text() == text, f"config/rbac/{name} is stale: make rbac"
    assert rbac.main(["--check", "--out", str(RBAC_DIR)]) == 0


def test_check_reports_a_stale_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rbac.main(["--check", "--out", str(tmp_path)]) == 1
    assert "missing" in capsys.readouterr().err
    assert rbac.main(["--out", str(tmp_path)]) == 0
    assert rbac.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "role.yaml").write_text("# edited by hand\n")
    assert rbac.main(["--check", "--out", str(tmp_path)]) == 1


def test_role_grants_exactly_the_union_of_declared_rules() -> None:
    def grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
        return {
            (g, res, v)
            for r in rules
            for g in r["apiGroups"]
            for res in r["resources"]
            for v in r["verbs"]
        }

    declared = {
        (g, res, v)
        for rules in CONTROLLER_RULES.values()
        for r in rules
        for g in r.api_groups
        for res in r.resources
        for v in r.verbs
    }
    assert grants(_rules_in(RBAC_DIR / "role.yaml")) == declared


def test_role_is_a_cluster_role_and_leases_are_only_namespaced() -> None:
    (role,) = [d for d in yaml.safe_load_all((RBAC_DIR / "role.yaml").read_text()) if d]
    assert role["kind"] == "ClusterRole"
    assert role["metadata"]["name"] == rbac.MANAGER_ROLE
    assert all("leases" not in r["resources"] for r in role["rules"])
    (lease,) = [
        d for d in yaml.safe_load_all((RBAC_DIR / "leader_election_role.yaml").read_text()) if d
    ]
    assert lease["kind"] == "Role"
    assert lease["metadata"]["namespace"] == "okra-system"
    assert [r["resources"] for r in lease["rules"]] == [["leases"]]


def test_merge_unions_verbs_and_orders_deterministically() -> None:
    rules = [
        PolicyRule(("b.io",), ("zs",), ("get",)),
        PolicyRule(("a.io",), ("ys", "xs"), ("watch", "get")),
        PolicyRule(("b.io",), ("zs",), ("list", "get")),
        PolicyRule(("a.io",), ("xs",), ("list",)),
    ]
    merged = merge_rules(rules)
    assert merged == [
        PolicyRule(("a.io",), ("xs",), ("get", "list", "watch")),
        PolicyRule(("a.io",), ("ys",), ("get", "watch")),
        PolicyRule(("b.io",), ("zs",), ("get", "list")),
    ]
    assert merge_rules(reversed(rules)) == merged


def test_merge_rejects_a_wildcard() -> None:
    with pytest.raises(ValueError, match="wildcard"):
        merge_rules([PolicyRule(("",), ("secrets",), ("*",))])
