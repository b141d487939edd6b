"""`kubectl apply -k config/default` installs okra on a real API server, and the RBAC it
installs is what the controllers need and no more.

Proof that the RBAC is enough: `kubectl auth can-i` as the manager's ServiceAccount for what
the controllers do, and the real `okra-manager` run with a token of that ServiceAccount: its
caches sync, it takes the leader-election Lease and a Check gets its status and Event. Proof
that it is no more: `can-i` says no to what okra never does. No pod runs (the control plane
has no nodes), so the Deployment is checked as an object, not waited on.

The CRDs may be shared with other tests on the same control plane: cleanup deletes the
namespace and the RBAC, never the CRDs.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from installed import (
    assert_manager_works,
    clean_env,
    local_flags,
    running_manager,
    service_account_kubeconfig,
)
from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.rbac import CONTROLLER_RULES, LEADER_ELECTION_RULES, PolicyRule
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.process import wait_until

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"
NAMESPACE = "okra-system"
SERVICE_ACCOUNT = "okra-controller-manager"
SA_USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _crd_names() -> list[str]:
    return sorted(
        d["metadata"]["name"] for f in (CONFIG / "crd/bases").glob("*.yaml") for d in _docs(f)
    )


def _get(cp: ControlPlane, *args: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(cp.kubectl("get", *args, "-o", "json").stdout)
    return out


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane) -> Iterator[ControlPlane]:
    # Server-side apply, as for any install with CRDs: no last-applied annotation (which a CRD
    # outgrows at 256 KiB), and other tests apply the same CRDs server-side too.
    control_plane.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=okra-install-test",
        "-k",
        str(CONFIG / "default"),
    )
    try:
        yield control_plane
    finally:
        for part in ("rbac", "manager"):  # not crd: other tests may use the CRDs
            control_plane.kubectl(
                "delete", "--ignore-not-found", "--timeout=90s", "-k", str(CONFIG / part)
            )


# -- the tree itself (no server needed) -------------------------------------------------------


def test_crd_kustomization_lists_every_generated_crd() -> None:
    listed = yaml.safe_load((CONFIG / "crd/kustomization.yaml").read_text())["resources"]
    generated = sorted(f"bases/{p.name}" for p in (CONFIG / "crd/bases").glob("*.yaml"))
    assert sorted(listed) == generated


def test_samples_cover_every_kind_and_parse_with_the_models() -> None:
    listed = yaml.safe_load((CONFIG / "samples/kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in (CONFIG / "samples").glob("okra_*.yaml"))
    models = {m.model_fields["kind"].default: m for m in CRD_MODELS}
    kinds = []
    for name in listed:
        for doc in _docs(CONFIG / "samples" / name):
            kinds.append(doc["kind"])
            models[doc["kind"]].model_validate(doc)  # raises if the sample is not valid
    assert set(kinds) == set(models)  # every kind at least once (some, more than one way)


# -- install -----------------------------------------------------------------------------------


def test_every_crd_becomes_established(installed: ControlPlane) -> None:
    names = _crd_names()
    assert len(names) == len(CRD_MODELS)
    installed.kubectl(
        "wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{n}" for n in names]
    )


def test_manager_objects_exist(installed: ControlPlane) -> None:
    ns = ("-n", NAMESPACE)
    _get(installed, "namespace", NAMESPACE)
    _get(installed, "serviceaccount", SERVICE_ACCOUNT, *ns)
    _get(installed, "service", "okra-controller-manager-metrics", *ns)
    role = _get(installed, "clusterrole", "okra-manager-role")
    assert role["rules"], "the manager's ClusterRole grants nothing"
    binding = _get(installed, "clusterrolebinding", "okra-manager-rolebinding")
    assert binding["roleRef"]["name"] == "okra-manager-role"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": NAMESPACE}
    ]
    lease_role = _get(installed, "role", "okra-leader-election-role", *ns)
    assert [r["resources"] for r in lease_role["rules"]] == [["leases"]]
    lease_binding = _get(installed, "rolebinding", "okra-leader-election-rolebinding", *ns)
    assert lease_binding["roleRef"]["name"] == "okra-leader-election-role"
    assert lease_binding["subjects"][0]["name"] == SERVICE_ACCOUNT

    deploy = _get(installed, "deployment", "okra-controller-manager", *ns)
    pod = deploy["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == SERVICE_ACCOUNT
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["image"] == "okra-manager:latest"
    assert container["args"] == [
        "--leader-elect",
        "--metrics-bind-address=:8080",
        "--health-probe-bind-address=:8081",
        "--log-format=json",
    ]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080, "probes": 8081}
    assert container["livenessProbe"]["httpGet"]["port"] == "probes"
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert set(container["resources"]) == {"requests", "limits"}
    assert any(e["name"] == "AWS_REGION" for e in container["env"])


# -- RBAC: enough, and no more ---------------------------------------------------------------


def _can(cp: ControlPlane, verb: str, resource: str, *where: str) -> bool:
    """`kubectl auth can-i` as the manager; `resource` may be `plural.group/subresource`.

    can-i resolves the resource through discovery and says "no" for one the server does not
    serve (yet): Argo Rollouts' kinds, kinds of controllers still to come. For those the
    same question goes to the authorizer as a SubjectAccessReview."""
    name, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, name, f"--as={SA_USER}", *where]
    if sub:
        args.append(f"--subresource={sub}")
    out = cp.kubectl(*args, check=False)
    answer = out.stdout.strip()
    assert answer in ("yes", "no"), f"kubectl {' '.join(args)}: {out.stdout}{out.stderr}"
    if "doesn't have a resource type" not in out.stderr:
        return answer == "yes"
    plural, _, group = name.partition(".")
    namespace = where[1] if where[:1] == ("-n",) else ""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": SA_USER,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{NAMESPACE}",
                "system:authenticated",
            ],
            "resourceAttributes": {
                "namespace": namespace,
                "verb": verb,
                "group": group,
                "resource": plural,
                "subresource": sub,
            },
        },
    }
    result = cp.kubectl("create", "-o", "json", "-f", "-", input_text=json.dumps(review))
    return bool(json.loads(result.stdout)["status"].get("allowed"))


ALL = ("--all-namespaces",)
APPS = ("-n", "apps")
OKRA = ("-n", NAMESPACE)

ALLOWED = [
    # informers of the controllers, cluster-wide
    ("list", "analysisruns.okra.mumo.co", ALL),
    ("watch", "analysisruns.okra.mumo.co", ALL),
    ("list", "checks.okra.mumo.co", ALL),
    ("watch", "cells.okra.mumo.co", ALL),
    ("watch", "awstargetgroups.okra.mumo.co", ALL),
    ("watch", "awsapplicationloadbalancerconfigs.okra.mumo.co", ALL),
    ("watch", "awsnetworkloadbalancerconfigs.okra.mumo.co", ALL),
    ("watch", "pauses.okra.mumo.co", ALL),
    # status written by each controller
    ("update", "analysisruns.okra.mumo.co/status", APPS),
    ("update", "checks.okra.mumo.co/status", APPS),
    ("patch", "cells.okra.mumo.co/status", APPS),
    ("update", "awsapplicationloadbalancerconfigs.okra.mumo.co/status", APPS),
    ("patch", "awsnetworkloadbalancerconfigs.okra.mumo.co/status", APPS),
    ("update", "pauses.okra.mumo.co/status", APPS),
    # what a Cell creates and changes
    ("create", "analysisruns.okra.mumo.co", APPS),
    ("update", "analysisruns.okra.mumo.co", APPS),
    ("create", "awsapplicationloadbalancerconfigs.okra.mumo.co", APPS),
    ("patch", "awsapplicationloadbalancerconfigs.okra.mumo.co", APPS),
    ("create", "pauses.okra.mumo.co", APPS),
    ("create", "jobs.batch", APPS),  # prechecks and postchecks
    ("watch", "jobs.batch", ALL),
    ("update", "versionblocklists.okra.mumo.co", APPS),
    ("update", "cells.okra.mumo.co/finalizers", APPS),
    # what a system Cell makes and removes: its applications' Cells, their target groups
    # and Checks (seed 002)
    ("patch", "cells.okra.mumo.co", APPS),
    ("delete", "cells.okra.mumo.co", APPS),
    ("patch", "awstargetgroups.okra.mumo.co", APPS),
    ("delete", "awstargetgroups.okra.mumo.co", APPS),
    ("patch", "checks.okra.mumo.co", APPS),
    ("delete", "checks.okra.mumo.co", APPS),
    # templates, okra's and Argo Rollouts'
    ("get", "analysistemplates.okra.mumo.co", APPS),
    ("get", "clusteranalysistemplates.okra.mumo.co", ()),
    ("get", "analysistemplates.argoproj.io", APPS),
    ("get", "clusteranalysistemplates.argoproj.io", ()),
    # secrets for analysis arguments and provider credentials; Argo CD cluster secrets
    ("get", "secrets", APPS),
    ("list", "secrets", ALL),
    ("create", "secrets", ("-n", "argocd")),
    # events and the leader-election lease
    ("create", "events.events.k8s.io", APPS),
    ("patch", "events.events.k8s.io", APPS),
    ("get", "leases.coordination.k8s.io", OKRA),
    ("create", "leases.coordination.k8s.io", OKRA),
    ("update", "leases.coordination.k8s.io", OKRA),
]

DENIED = [
    ("delete", "namespaces", ()),
    ("create", "pods", APPS),
    ("create", "deployments.apps", APPS),
    ("list", "configmaps", ALL),
    ("list", "nodes", ()),
    ("create", "serviceaccounts/token", OKRA),
    ("deletecollection", "secrets", APPS),  # Cells patch cluster Secrets' labels, no more
    ("create", "events", APPS),  # core/v1 events: okra writes events.k8s.io only
    ("update", "leases.coordination.k8s.io", ("-n", "kube-system")),
    ("create", "leases.coordination.k8s.io", ("-n", "default")),
    ("delete", "leases.coordination.k8s.io", OKRA),
    ("create", "clusterroles.rbac.authorization.k8s.io", ()),
    ("bind", "clusterroles.rbac.authorization.k8s.io", ()),
    ("impersonate", "users", ()),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io", ()),
    ("create", "analysistemplates.okra.mumo.co", APPS),
    ("delete", "clustersets.okra.mumo.co", APPS),
    ("update", "analysistemplates.argoproj.io", APPS),
    ("create", "analysisruns.argoproj.io", APPS),  # okra never creates Argo's runs
    ("delete", "versionblocklists.okra.mumo.co", APPS),
    ("deletecollection", "analysisruns.okra.mumo.co", APPS),
    ("delete", "analysisruns.okra.mumo.co", APPS),  # garbage collection removes a Cell's runs
    ("delete", "pauses.okra.mumo.co", APPS),
    ("delete", "jobs.batch", APPS),  # a Cell's check Jobs go with it (garbage collection)
    ("update", "awsapplicationloadbalancerconfigs.okra.mumo.co/finalizers", APPS),
]


@pytest.mark.parametrize(("verb", "resource", "where"), ALLOWED)
def test_manager_may(
    installed: ControlPlane, verb: str, resource: str, where: tuple[str, ...]
) -> None:
    assert _can(installed, verb, resource, *where), f"okra-manager cannot {verb} {resource}"


@pytest.mark.parametrize(("verb", "resource", "where"), DENIED)
def test_manager_may_not(
    installed: ControlPlane, verb: str, resource: str, where: tuple[str, ...]
) -> None:
    assert not _can(installed, verb, resource, *where), f"okra-manager may {verb} {resource}"


def test_every_declared_rule_is_granted(installed: ControlPlane) -> None:
    """The installed roles grant each (group, resource, verb) a controller declares."""
    missing = []
    declared: list[tuple[PolicyRule, tuple[str, ...]]]
    declared = [(r, ALL) for rs in CONTROLLER_RULES.values() for r in rs]
    declared += [(r, OKRA) for r in LEADER_ELECTION_RULES]
    seen = set()
    for r, where in declared:
        for group in r.api_groups:
            for resource in r.resources:
                plural, _, sub = resource.partition("/")
                name = f"{plural}.{group}" if group else plural
                full = f"{name}/{sub}" if sub else name
                for verb in r.verbs:
                    if (verb, full) in seen:
                        continue
                    seen.add((verb, full))
                    if not _can(installed, verb, full, *where):
                        missing.append(f"{verb} {full}")
    assert not missing, f"declared but not granted: {missing}"


# -- the manager, as its ServiceAccount --------------------------------------------------------


def test_manager_runs_with_only_its_rbac(installed: ControlPlane, tmp_path: Path) -> None:
    """okra-manager with a token of its ServiceAccount: caches sync (list/watch granted), it
    leads through the Lease, and a Check's status and Event get written."""
    kubeconfig = service_account_kubeconfig(
        installed, SERVICE_ACCOUNT, NAMESPACE, tmp_path / "okra-manager.kubeconfig"
    )
    lease = f"okra-install-test-{uuid.uuid4().hex[:8]}"
    flags, probes = local_flags(
        [
            "--kubeconfig",
            str(kubeconfig),
            "--leader-elect",
            f"--leader-election-id={lease}",
            f"--okra-namespace={NAMESPACE}",
            "--log-format=json",
            "--aws-region=us-east-1",
        ]
    )
    command = [sys.executable, "-m", "okra_controllers.manager"]
    with running_manager(
        command, flags, probes, tmp_path / "okra-manager.log", clean_env()
    ) as manager:
        assert_manager_works(installed, manager, lease, NAMESPACE)


# -- RBAC for people: okra-viewer and okra-editor, aggregated into view and edit ---------------


@pytest.fixture(scope="module")
def people(installed: ControlPlane) -> Iterator[str]:
    """A namespace where user `vic` has the built-in `view` role and `jane` has `edit`, and
    `rita` is bound cluster-wide to okra-cluster-freezer."""
    ns = f"okra-people-{uuid.uuid4().hex[:6]}"
    installed.kubectl("create", "namespace", ns)
    installed.kubectl("create", "rolebinding", "vic", "--clusterrole=view", "--user=vic", "-n", ns)
    installed.kubectl(
        "create", "rolebinding", "jane", "--clusterrole=edit", "--user=jane", "-n", ns
    )
    rita = f"rita-{ns}"
    installed.kubectl(
        "create", "clusterrolebinding", rita, "--clusterrole=okra-cluster-freezer", "--user=rita"
    )
    try:
        yield ns
    finally:
        installed.kubectl("delete", "clusterrolebinding", rita, check=False)
        installed.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def _person_can(cp: ControlPlane, user: str, verb: str, resource: str, ns: str) -> bool:
    name, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, name, f"--as={user}", "-n", ns]
    if sub:
        args.append(f"--subresource={sub}")
    return cp.kubectl(*args, check=False).stdout.strip() == "yes"


PEOPLE_ALLOWED = [
    ("vic", "get", "cells.okra.mumo.co"),
    ("vic", "watch", "cells.okra.mumo.co"),
    ("vic", "list", "analysisruns.okra.mumo.co"),
    ("vic", "list", "versionblocklists.okra.mumo.co"),
    ("jane", "get", "cells.okra.mumo.co"),
    ("jane", "patch", "cells.okra.mumo.co"),  # okra promote / abort / retry / set version
    ("jane", "patch", "pauses.okra.mumo.co"),  # okra promote at a pause
    ("jane", "update", "versionblocklists.okra.mumo.co"),  # okra retry
    ("jane", "create", "analysisruns.okra.mumo.co"),  # okra run analysis
    ("jane", "create", "analysistemplates.okra.mumo.co"),
    ("jane", "create", "freezes.okra.mumo.co"),  # okra freeze in the namespace
    ("jane", "delete", "freezes.okra.mumo.co"),  # okra unfreeze
    ("rita", "create", "clusterfreezes.okra.mumo.co"),  # okra freeze --cluster-wide
    ("rita", "delete", "clusterfreezes.okra.mumo.co"),
]
PEOPLE_DENIED = [
    ("vic", "patch", "cells.okra.mumo.co"),
    ("vic", "create", "analysisruns.okra.mumo.co"),
    ("vic", "list", "secrets"),
    ("jane", "update", "cells.okra.mumo.co/status"),  # status is the controllers'
    ("jane", "patch", "analysisruns.okra.mumo.co/status"),
    # a namespace's editors may not stop every namespace's rollouts, nor lift such a stop
    ("jane", "create", "clusterfreezes.okra.mumo.co"),
    ("jane", "delete", "clusterfreezes.okra.mumo.co"),
    ("vic", "delete", "clusterfreezes.okra.mumo.co"),
    ("rita", "create", "freezes.okra.mumo.co"),  # the role is ClusterFreezes only
]


def test_people_roles_are_aggregated(installed: ControlPlane, people: str) -> None:
    """The clusterrole-aggregation controller copies okra's rules into view and edit."""
    for user, verb, resource in PEOPLE_ALLOWED:

        def allowed(u: str = user, v: str = verb, r: str = resource) -> bool:
            return _person_can(installed, u, v, r, people)

        wait_until(allowed, 30, f"{user} may {verb} {resource}")
    for user, verb, resource in PEOPLE_DENIED:
        assert not _person_can(installed, user, verb, resource, people), (user, verb, resource)
