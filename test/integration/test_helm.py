"""The Helm chart (charts/okra) installs the same okra as `kubectl apply -k config/default`.

- `helm lint --strict` passes.
- Rendered with its defaults, the chart has the same CRDs, the same RBAC rules and the same
  manager flags as the kustomize tree (the CRDs and rules are copies made by `make chart`;
  this checks what a user actually gets).
- Values do what they say (IRSA annotation, ServiceMonitor, namespace, AWS endpoint, leader
  election off).
- `helm install` on a real API server, then okra-manager run with the flags of the installed
  Deployment and a token of the installed ServiceAccount: it works (see `installed.py`).

helm comes from `$OKRA_HELM` or `hack/build-helm.sh` (built from the Go module proxy, cached).
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from installed import (
    assert_manager_works,
    clean_env,
    get,
    helm_binary,
    local_flags,
    running_manager,
    service_account_kubeconfig,
)
from okra_controllers.manager import default_provider
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.binaries import find_binaries

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "okra"


def helm(*args: str) -> str:
    out = subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, check=False, timeout=180
    )
    assert out.returncode == 0, f"helm {' '.join(args)}: {out.stdout}{out.stderr}"
    return out.stdout


@cache  # the documents are only read
def render(*values: str, namespace: str = "okra-system") -> list[dict[str, Any]]:
    text = helm("template", "okra", str(CHART), "-n", namespace, "--include-crds", *values)
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


@cache
def kustomize() -> list[dict[str, Any]]:
    kubectl = str(find_binaries().kubectl)
    text = subprocess.run(
        [kubectl, "kustomize", str(REPO / "config" / "default")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def _by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _one(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (doc,) = _by_kind(docs, kind)
    return doc


def _container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = _one(docs, "Deployment")["spec"]["template"]["spec"][
        "containers"
    ]
    (container,) = containers
    return container


def test_helm_lint_passes() -> None:
    helm("lint", "--strict", str(CHART))


def test_chart_crds_are_the_kustomize_crds() -> None:
    chart = {d["metadata"]["name"]: d for d in _by_kind(render(), "CustomResourceDefinition")}
    base = {d["metadata"]["name"]: d for d in _by_kind(kustomize(), "CustomResourceDefinition")}
    assert sorted(chart) == sorted(base)
    for name in base:
        assert chart[name] == base[name], name


def _manager_rules(docs: list[dict[str, Any]]) -> list[Any]:
    """The rules of the ClusterRole bound to the manager's ServiceAccount."""
    binding = next(
        d for d in _by_kind(docs, "ClusterRoleBinding") if "manager" in d["roleRef"]["name"]
    )
    role = next(
        d
        for d in _by_kind(docs, "ClusterRole")
        if d["metadata"]["name"] == binding["roleRef"]["name"]
    )
    rules: list[Any] = role["rules"]
    return rules


def test_chart_rbac_is_the_kustomize_rbac() -> None:
    chart, base = render(), kustomize()
    assert _manager_rules(chart) == _manager_rules(base)
    assert _manager_rules(chart), "no rules at all"
    assert _one(chart, "Role")["rules"] == _one(base, "Role")["rules"]
    sa = _one(base, "ServiceAccount")["metadata"]
    bindings = _by_kind(chart, "ClusterRoleBinding") + _by_kind(chart, "RoleBinding")
    assert len(bindings) == 2
    for doc in bindings:
        assert doc["subjects"] == [
            {"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}
        ]
    assert _one(chart, "ServiceAccount")["metadata"]["name"] == sa["name"]


def test_chart_user_roles_are_the_kustomize_user_roles() -> None:
    chart, base = render(), kustomize()
    for role in ("viewer", "editor"):
        (c,) = [d for d in _by_kind(chart, "ClusterRole") if d["metadata"]["name"].endswith(role)]
        (b,) = [d for d in _by_kind(base, "ClusterRole") if d["metadata"]["name"].endswith(role)]
        assert c["rules"] == b["rules"], role
        assert b["metadata"]["labels"].items() <= c["metadata"]["labels"].items(), role
    off = render("--set", "userRoles.enabled=false")
    assert not [d for d in _by_kind(off, "ClusterRole") if "viewer" in d["metadata"]["name"]]


def test_chart_actor_policy_is_the_kustomize_one() -> None:
    """The ValidatingAdmissionPolicy okra-actor and its binding: the same names (okra-manager
    reads them by name) and specs as `config/rbac`'s; `actorPolicy.enabled=false` leaves
    them out."""
    chart, base = render(), kustomize()
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        c, b = _one(chart, kind), _one(base, kind)
        assert c["metadata"]["name"] == b["metadata"]["name"] == "okra-actor", kind
        assert c["spec"] == b["spec"], kind
    off = render("--set", "actorPolicy.enabled=false")
    assert not _by_kind(off, "ValidatingAdmissionPolicy")
    assert not _by_kind(off, "ValidatingAdmissionPolicyBinding")


def test_chart_runs_the_manager_as_kustomize_does() -> None:
    chart, base = _container(render()), _container(kustomize())
    assert set(base["args"]) <= set(chart["args"]), "the chart drops a flag kustomize sets"
    for key in ("ports", "livenessProbe", "readinessProbe", "securityContext", "resources"):
        assert chart[key] == base[key], key
    chart_pod = _one(render(), "Deployment")["spec"]["template"]["spec"]
    base_pod = _one(kustomize(), "Deployment")["spec"]["template"]["spec"]
    assert chart_pod["securityContext"] == base_pod["securityContext"]
    assert chart_pod["volumes"] == base_pod["volumes"]


def test_values_reach_the_manifests() -> None:
    role = "arn:aws:iam::123456789012:role/okra-manager"
    docs = render(
        "--set",
        f"serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn={role}",
        "--set",
        "metrics.serviceMonitor.enabled=true",
        "--set",
        "watchNamespace=apps",
        "--set",
        "aws.endpointURL=http://localstack:4566",
        "--set",
        "aws.region=eu-west-1",
        "--set",
        "logFormat=console",
        "--set",
        "image.tag=v9",
        namespace="platform",
    )
    sa = _one(docs, "ServiceAccount")["metadata"]
    assert sa["annotations"] == {"eks.amazonaws.com/role-arn": role}
    assert sa["namespace"] == "platform"
    monitor = _one(docs, "ServiceMonitor")
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    c = _container(docs)
    for flag in (
        "--namespace=apps",
        "--aws-endpoint-url=http://localstack:4566",
        "--aws-region=eu-west-1",
        "--log-format=console",
    ):
        assert flag in c["args"]
    assert c["image"] == "okra-manager:v9"

    lease = ("--leader-elect-lease-duration=15", "--leader-elect-renew-deadline=10")
    assert set(lease) <= set(c["args"]), "controller-runtime's lease timing by default"
    short = _container(render("--set", "leaderElection.leaseDuration=8"))["args"]
    assert "--leader-elect-lease-duration=8" in short
    off = render("--set", "leaderElection.enabled=false")
    assert not _by_kind(off, "Role")
    assert "--leader-elect" not in _container(off)["args"]
    assert not _by_kind(render(), "ServiceMonitor"), "ServiceMonitor is off by default"
    assert not [a for a in c["args"] if a.startswith("--default-metrics-provider")]
    address = "http://prometheus.monitoring:9090"
    flags = _container(render("--set", f"defaultMetricsProvider.prometheus.address={address}"))[
        "args"
    ]
    (flag,) = [a for a in flags if a.startswith("--default-metrics-provider=")]
    # the flag as okra-manager reads it: a provider object, in JSON
    provider = default_provider(flag.split("=", 1)[1])
    assert provider == {"prometheus": {"address": address}}


@pytest.fixture
def release(control_plane: ControlPlane) -> Iterator[tuple[str, str]]:
    name = f"okra-helm-{uuid.uuid4().hex[:6]}"
    kubeconfig = str(control_plane.kubeconfig())
    helm(
        "install",
        name,
        str(CHART),
        "--kubeconfig",
        kubeconfig,
        "-n",
        name,
        "--create-namespace",
        "--set",
        "aws.endpointURL=http://127.0.0.1:1",
    )
    try:
        yield name, name
    finally:
        helm("uninstall", name, "--kubeconfig", kubeconfig, "-n", name, "--wait")
        control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)


def test_helm_install_gives_a_working_manager(
    control_plane: ControlPlane, release: tuple[str, str], tmp_path: Path
) -> None:
    name, namespace = release
    cp = control_plane
    deploy = get(cp, "deployment", f"{name}-controller-manager", "-n", namespace)
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "--aws-endpoint-url=http://127.0.0.1:1" in container["args"]
    kubeconfig = service_account_kubeconfig(
        cp, pod["serviceAccountName"], namespace, tmp_path / "sa.kubeconfig"
    )
    flags, probes = local_flags(
        [*container["args"], "--kubeconfig", str(kubeconfig), f"--okra-namespace={namespace}"]
    )
    command = [sys.executable, "-m", "okra_controllers.manager"]
    with running_manager(command, flags, probes, tmp_path / "manager.log", clean_env()) as m:
        lease = next(a.split("=", 1)[1] for a in flags if a.startswith("--leader-election-id="))
        assert_manager_works(cp, m, lease, namespace)
