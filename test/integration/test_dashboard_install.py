"""okra dashboard in the cluster: `config/dashboard` (kustomize) and the chart's
`dashboard.enabled` run `okra dashboard --read-only` from the manager's image with a
ServiceAccount of its own that reads okra's kinds (the viewer role) and Events, and nothing
else: no Secret, no write. The chart leaves it out unless asked."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_testkit.envtest.binaries import find_binaries

from .test_helm import render

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
READ = ["get", "list", "watch"]


def kustomize() -> list[dict[str, Any]]:
    text = subprocess.run(
        [str(find_binaries().kubectl), "kustomize", str(REPO / "config" / "dashboard")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def one(docs: list[dict[str, Any]], kind: str, component: str = "dashboard") -> dict[str, Any]:
    (doc,) = [
        d
        for d in docs
        if d["kind"] == kind
        and d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == component
    ]
    return doc


def assert_runs_read_only(docs: list[dict[str, Any]]) -> None:
    deployment = one(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"][:2] == ["/opt/okra/bin/okra", "dashboard"]
    assert "--read-only" in container["command"]
    assert "--address=0.0.0.0" in container["command"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    sa = one(docs, "ServiceAccount")["metadata"]["name"]
    assert pod["serviceAccountName"] == sa
    service = one(docs, "Service")
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    bindings = [
        b
        for b in docs
        if b["kind"] == "ClusterRoleBinding"
        and any(s.get("name") == sa for s in b.get("subjects") or [])
    ]
    assert bindings


def rules_of(docs: list[dict[str, Any]], bound: list[str]) -> list[dict[str, Any]]:
    return [
        r
        for d in docs
        if d["kind"] == "ClusterRole" and d["metadata"]["name"] in bound
        for r in d["rules"]
    ]


def assert_only_reads(rules: list[dict[str, Any]]) -> None:
    assert rules
    for rule in rules:
        assert rule["verbs"] == READ, rule
        assert "secrets" not in rule["resources"], rule
        assert rule["apiGroups"] in (["okra.mumo.co"], ["events.k8s.io"]), rule


def test_config_dashboard_runs_it_read_only_as_a_viewer() -> None:
    docs = kustomize()
    assert_runs_read_only(docs)
    roles = [b["roleRef"]["name"] for b in docs if b["kind"] == "ClusterRoleBinding"]
    assert "okra-viewer" in roles  # config/rbac's role for people
    viewer = yaml.safe_load((REPO / "config" / "rbac" / "viewer_role.yaml").read_text())
    assert_only_reads(viewer["rules"] + rules_of(docs, roles))
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] != "ClusterRole"} <= {
        "okra-system",
        None,
    }


def test_the_chart_runs_it_only_when_enabled_read_only_with_its_own_role() -> None:
    assert not [
        d
        for d in render()
        if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "dashboard"
    ]
    docs = render("--set", "dashboard.enabled=true", "--set", "watchNamespace=apps")
    assert_runs_read_only(docs)
    (container,) = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--namespace=apps" in container["command"]
    role = one(docs, "ClusterRole")
    assert_only_reads(role["rules"])
    assert any("cells" in r["resources"] for r in role["rules"])
