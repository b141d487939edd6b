"""The RBAC okra's controllers need, declared per controller, and the manifests rendered from it.

Why: the ClusterRole the manager runs with must grant what the controllers do and nothing more.
Each controller states here the API requests it makes (kubebuilder states them as
`+kubebuilder:rbac` markers beside the reconciler); `config/rbac/role.yaml` and
`config/rbac/leader_election_role.yaml` are generated from these declarations, and a check in CI
fails when the committed files no longer match. No rule may use `*`.

A controller that writes status declares `<plural>/status`; one that sets
`blockOwnerDeletion` on the objects it owns declares `<plural>/finalizers` (needed where the
OwnerReferencesPermissionEnforcement admission plugin is on, as on OpenShift). Events go through
`events.k8s.io/v1` (see `okra_runtime.events`); the leader-election Lease lives in the manager's
own namespace, so it is granted by a namespaced Role, not by the ClusterRole.

People get roles too: `okra-viewer` (read every okra kind) and `okra-editor` (create, change
and delete the namespaced kinds, which is what `okra promote`, `abort`, `retry`, `set version`
and `run analysis` do) are aggregated into Kubernetes' built-in `view` and `edit` roles, so an
app team that may view or edit a namespace can watch and steer its rollouts without
cluster-admin. They are derived from the CRD models, so a new kind is covered by itself.
`okra-cluster-freezer` (make, change and lift ClusterFreezes) is aggregated into none: it
stops every namespace's rollouts, so it is bound cluster-wide to whoever may.

Generating: ``python -m okra_controllers.rbac --out config/rbac`` writes every file; with
``--check`` nothing is written and it exits 1 if any differs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from okra_controllers import actors
from okra_controllers.api.kinds import ARGO_GROUP
from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.api.v1alpha1.common import GROUP
from okra_runtime.crdgen import check_generated, crd_info

__all__ = [
    "CONTROLLER_RULES",
    "LEADER_ELECTION_RULES",
    "MANAGER_ROLE",
    "PolicyRule",
    "main",
    "merge_rules",
    "render_all",
    "render_leader_election_role",
    "render_role",
    "render_user_roles",
    "user_rules",
]

MANAGER_ROLE = "okra-manager-role"
VIEWER_ROLE = "okra-viewer"
EDITOR_ROLE = "okra-editor"
FREEZER_ROLE = "okra-cluster-freezer"
LEADER_ELECTION_ROLE = "okra-leader-election-role"
NAMESPACE = "okra-system"

"""Argo's group: Argo Rollouts' AnalysisTemplates are read, never written (see
analysis.templates); Argo CD's Applications get sync operations (progressiverollout)."""
CORE = ""
EVENTS_GROUP = "events.k8s.io"
COORDINATION = "coordination.k8s.io"

READ = ("get", "list", "watch")
KEEP = (*READ, "create", "update", "patch")
"""Create and keep up to date, never delete."""
OWN = (*KEEP, "delete")
"""What a controller does with objects it creates, keeps up to date and removes."""
STATUS = ("update", "patch")
EDIT = ("create", "update", "patch", "delete", "deletecollection")
"""What people with the `edit` role may do to okra's namespaced kinds (status excepted)."""

AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"

_VERB_ORDER = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True)
class PolicyRule:
    """One rbac.authorization.k8s.io/v1 PolicyRule (resource rules only).

    `reason` is not rendered: it says what uses a rule that okra's least-privilege audit
    (test/reliability/test_rbac_audit.py, one Cell rolled out as okra's ServiceAccount) does
    not exercise, and which test does. That audit fails on a granted rule it saw unused and that
    no rule granting it explains."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    reason: str = field(default="", compare=False)


def rule(group: str, *resources: str, verbs: Sequence[str], reason: str = "") -> PolicyRule:
    return PolicyRule((group,), tuple(resources), tuple(verbs), reason)


def _because(reason: str, *rules: PolicyRule) -> tuple[PolicyRule, ...]:
    """`rules`, each with `reason` (a controller the audited rollout does not run)."""
    return tuple(replace(r, reason=r.reason or reason) for r in rules)


STATUS_REASON = (
    "update or patch, whichever the controller's status write uses (okra_runtime's"
    " update_status or patch_status): the other is granted so that either may be used"
)
FINALIZERS_REASON = (
    "not a request: the OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift,"
    " off in the audited API server) checks it when the controller sets blockOwnerDeletion on"
    " the objects it owns"
)


def _primary(plural: str, *, verbs: Sequence[str] = READ, owner: bool = False) -> list[PolicyRule]:
    """The rules of a controller's primary kind: read it, write its status, and, if it owns
    other objects, set blockOwnerDeletion on them (`<plural>/finalizers`)."""
    rules = [
        rule(GROUP, plural, verbs=verbs),
        rule(GROUP, f"{plural}/status", verbs=STATUS, reason=STATUS_REASON),
    ]
    if owner:
        rules.append(
            rule(GROUP, f"{plural}/finalizers", verbs=("update",), reason=FINALIZERS_REASON)
        )
    return rules


EVENTS = rule(EVENTS_GROUP, "events", verbs=("create", "patch"))
"""Events are created, then patched as a series when they repeat (okra_runtime.events)."""

DRIFT_NOTICE = (
    rule(GROUP, "cells", verbs=("get",)),
    rule(GROUP, "cells/status", verbs=STATUS),
    rule(CORE, "configmaps", verbs=("get",)),
    rule(CORE, "secrets", verbs=("get",)),
    EVENTS,
)
"""What a config controller (ALB, NLB, Route 53) needs to notify the owning Cell of a
repaired drift: the Cell read and its status written (the outbox), the notification
ConfigMap and Secret read, and Events."""

ACTOR_POLICY = rule(
    "admissionregistration.k8s.io",
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    verbs=READ,
    reason="okra's actor policy (actors.PolicyWatch): the informers list and watch it; get is"
    " not requested today",
)
"""Whether okra's actor policy is in force: the record credits users only while it is."""

CONTROLLER_RULES: Mapping[str, tuple[PolicyRule, ...]] = {
    # Measures AnalysisRuns. Reads the owning Cell for `fieldRef` arguments and Secrets for
    # `secretKeyRef` arguments and provider credentials (the Datadog Secret), one by name.
    "analysisrun": (
        *_primary("analysisruns"),
        rule(GROUP, "cells", verbs=("get",)),
        rule(CORE, "secrets", verbs=("get",)),
        EVENTS,
    ),
    # Runs Checks on their schedule; Secrets as for analysis runs.
    "check": _because(
        "the Check controller (analysis/check_controller.py), not run by the audited rollout;"
        " covered by test/integration/analysis/test_check.py",
        *_primary("checks"),
        rule(CORE, "secrets", verbs=("get",)),
        EVENTS,
    ),
    # Walks a Cell's canary steps (held while a Freeze of its namespace or a ClusterFreeze
    # applies; Namespaces are watched for their labels, which a ClusterFreeze's
    # namespaceSelector matches): watches its
    # target groups, writes the ALB or NLB config
    # (server-side apply: patch), starts AnalysisRuns from okra's or Argo Rollouts' templates
    # and terminates them, creates Pauses and blocks versions. What it owns goes with the Cell
    # (ownerReferences, garbage collection): it deletes nothing itself. Prechecks and
    # postchecks are Jobs it creates (one per rollout and check) and reads back; the Pod of a
    # failed one is listed once, for why it failed.
    # Notifications: reads the ConfigMap and Secret `okra-notifications` of the Cell's
    # namespace (services, their URLs and tokens).
    "cell": (
        *_primary("cells", owner=True),
        rule(GROUP, "awstargetgroups", verbs=READ),
        rule(GROUP, "freezes", "clusterfreezes", verbs=READ),
        rule(CORE, "namespaces", verbs=READ),
        rule(
            GROUP,
            "awsapplicationloadbalancerconfigs",
            verbs=KEEP,
            reason="the Cell controller writes its ALB config by server-side apply (patch, which"
            " also creates it); get, create and update are not requested today (KEEP grants them)",
        ),
        rule(
            GROUP,
            "awsnetworkloadbalancerconfigs",
            verbs=KEEP,
            reason="the Cell controller's NLB Cells (server-side apply: patch), not in the"
            " audited ALB rollout; covered by test/e2e/test_cell_nlb.py; get, create and update"
            " are not requested today (KEEP grants them)",
        ),
        rule(
            GROUP,
            "awsroute53recordsetconfigs",
            verbs=KEEP,
            reason="the Cell controller's Route 53 Cells (server-side apply: patch), not in the"
            " audited ALB rollout; covered by test/e2e/test_cell_route53.py; get, create and"
            " update are not requested today (KEEP grants them)",
        ),
        rule(
            "batch",
            "jobs",
            verbs=(*READ, "create"),
            reason="the Cell controller's prechecks and postchecks (Jobs it creates and watches),"
            " not in the audited rollout; covered by test/e2e/test_cell_checks.py; get is not"
            " requested today (the informer lists and watches)",
        ),
        rule(
            CORE,
            "pods",
            verbs=("list",),
            reason="the Cell controller reads the Pod of a failed check Job once, for its exit"
            " code and last log line (cell/checkjobs.py `PodFailures`), not in the audited"
            " rollout; covered by test/e2e/test_cell_checks.py"
            " test_a_failed_check_job_says_what_its_pod_said and test/node/test_install.py",
        ),
        rule(GROUP, "analysisruns", verbs=KEEP),
        rule(
            GROUP,
            "pauses",
            verbs=KEEP,
            reason="patch: the Cell controller cancels a Pause when its rollout ends before the"
            " Pause does (promote, abort, a new version mid-pause: cell/act.py `Actor._stop`),"
            " not in the audited rollout; get and update are not requested today (KEEP grants"
            " them)",
        ),
        rule(
            GROUP,
            "versionblocklists",
            verbs=KEEP,
            reason="update: the Cell controller adds a second blocked version to an existing"
            " VersionBlocklist (the audited rollout blocks one); patch is not requested today"
            " (KEEP grants it)",
        ),
        PolicyRule((GROUP, ARGO_GROUP), ("analysistemplates", "clusteranalysistemplates"), READ),
        rule(CORE, "configmaps", verbs=("get",)),
        # Argo CD cluster Secret strategies: the app labels on cluster Secrets (merge patch),
        # Applications read to wait for Synced/Healthy.
        rule(
            CORE,
            "secrets",
            verbs=(*READ, "patch"),
            reason="patch: the Cell controller's Argo CD cluster Secret strategies label cluster"
            " Secrets, not in the audited rollout; covered by test/e2e/test_cell_argocd.py",
        ),
        rule(ARGO_GROUP, "applications", verbs=READ),
        ACTOR_POLICY,
        EVENTS,
    ),
    # A system Cell: makes and owns a Cell per application, an AWSTargetGroup per
    # cluster and version, the applications' Checks (server-side apply: patch; deleted when
    # no longer wanted); labels Argo CD cluster Secrets (merge patch); reads Applications.
    # Workload clusters are reached with their Argo CD Secret's or EKS's credentials.
    "systemcell": _because(
        "the system Cell controller (cell/system/controller.py), not run by the audited"
        " rollout; covered by test/integration/test_system_cell.py",
        *_primary("cells", verbs=(*READ, "create", "update", "patch", "delete"), owner=True),
        rule(GROUP, "awstargetgroups", verbs=OWN),
        rule(GROUP, "checks", verbs=OWN),
        rule(CORE, "secrets", verbs=(*READ, "patch")),
        rule(ARGO_GROUP, "applications", verbs=READ),
        EVENTS,
    ),
    # Makes an ALB listener rule match its config; its finalizer (set with an update of the
    # object) removes the rule on delete. A repaired drift is a notification of the Cell that
    # owns the config: read the Cell, add to its status (outbox), send it (ConfigMap, Secret).
    "albconfig": (
        *_primary("awsapplicationloadbalancerconfigs", verbs=(*READ, "update", "patch")),
        *DRIFT_NOTICE,
    ),
    # Makes an NLB listener's default action match its config (no finalizer: deleting the
    # config leaves the listener forwarding as it last did). A repaired drift is notified
    # to the owning Cell, as for ALB configs.
    "nlbconfig": _because(
        "the NLB config controller (nlbconfig/controller.py), not run by the audited rollout"
        " (an ALB Cell); covered by test/integration/test_nlbconfig.py, test/e2e/test_cell_nlb.py",
        *_primary("awsnetworkloadbalancerconfigs"),
        *DRIFT_NOTICE,
    ),
    # Makes one name's weighted records in a Route 53 zone match its config (no finalizer:
    # deleting the config leaves the records answering). A repaired drift is notified to
    # the owning Cell, as for ALB configs.
    "route53config": _because(
        "the Route 53 config controller (route53config/controller.py), not run by the audited"
        " rollout; covered by test/e2e/test_cell_route53.py",
        *_primary("awsroute53recordsetconfigs"),
        *DRIFT_NOTICE,
    ),
    # Ends timed Pauses and reports cancelled ones (status only, no Events).
    "pause": (*_primary("pauses"),),
    # Discovers EKS clusters and writes Argo CD cluster Secrets owned by the ClusterSet.
    "clusterset": _because(
        "the ClusterSet controller (clusterset/controller.py), not run by the audited"
        " rollout; covered by test/integration/test_clusterset.py",
        *_primary("clustersets", owner=True),
        rule(CORE, "secrets", verbs=(*READ, "create", "update", "delete")),
        EVENTS,
    ),
    # Looks into each cluster (through its Argo CD cluster Secret) for TargetGroupBindings and
    # registers their target groups as AWSTargetGroups, optionally with AWSTargetGroupBindings.
    "targetgroupset": _because(
        "the AWSTargetGroupSet controller (targetgroupset/controller.py), not run by the"
        " audited rollout; covered by test/integration/test_targetgroupset.py",
        *_primary("awstargetgroupsets", owner=True),
        rule(GROUP, "awstargetgroups", verbs=OWN),
        rule(GROUP, "awstargetgroupbindings", verbs=OWN),
        rule(CORE, "secrets", verbs=READ),
        EVENTS,
    ),
    # Registers node or IP targets of many clusters (reached through their Argo CD cluster
    # Secrets) into one target group; a finalizer deregisters them on delete.
    "targetgroupbinding": _because(
        "the AWSTargetGroupBinding controller (targetgroupbinding/controller.py), not run"
        " by the audited rollout; covered by test/integration/test_targetgroupbinding.py",
        *_primary("awstargetgroupbindings", verbs=(*READ, "update", "patch")),
        rule(CORE, "secrets", verbs=READ),
        EVENTS,
    ),
    # Rolls an ApplicationSet's Applications out: reads the ApplicationSet, its Applications,
    # their AppProjects (sync windows, destinations) and the Argo CD cluster Secrets (labels),
    # writes `operation` on Applications (a merge patch; a json patch removes okra's unstarted
    # ones when a rollout is deleted, hence its finalizer), and starts AnalysisRuns from okra's
    # or Argo Rollouts' templates.
    # Notifications: the ConfigMap `okra-notifications` (services) and its Secret.
    "progressiverollout": _because(
        "the ProgressiveRollout controller (progressiverollout/controller.py), not run by"
        " the audited rollout; covered by test/integration/progressiverollout/ and"
        " test/e2e/test_progressiverollout.py",
        *_primary("progressiverollouts", verbs=(*READ, "update", "patch"), owner=True),
        rule(ARGO_GROUP, "applications", verbs=(*READ, "patch")),
        rule(ARGO_GROUP, "applicationsets", verbs=READ),
        rule(ARGO_GROUP, "appprojects", verbs=READ),
        rule(CORE, "secrets", verbs=READ),
        rule(GROUP, "analysisruns", verbs=KEEP),
        PolicyRule((GROUP, ARGO_GROUP), ("analysistemplates", "clusteranalysistemplates"), READ),
        rule(CORE, "configmaps", verbs=("get",)),
        rule(GROUP, "freezes", "clusterfreezes", verbs=READ),
        rule(CORE, "namespaces", verbs=READ),
        ACTOR_POLICY,
        EVENTS,
    ),
}
"""The API requests of each controller, keyed by its name in `okra-manager --controllers`.
Controllers not written yet are declared from the design, so installing okra once is enough."""

LEADER_ELECTION_RULES: tuple[PolicyRule, ...] = (
    rule(COORDINATION, "leases", verbs=("get", "create", "update")),
)
"""What `okra_runtime.leaderelection` does with its Lease, in the manager's namespace."""


# -- merging and rendering -------------------------------------------------------------------


def _verb_key(verb: str) -> tuple[int, str]:
    return (_VERB_ORDER.index(verb) if verb in _VERB_ORDER else len(_VERB_ORDER), verb)


def merge_rules(rules: Iterable[PolicyRule]) -> list[PolicyRule]:
    """One rule per API group and set of verbs, listing every resource granted exactly those
    verbs: the union of what the rules grant, in a stable order (group, then resources)."""
    verbs: dict[tuple[str, str], set[str]] = {}
    for r in rules:
        for token in (*r.api_groups, *r.resources, *r.verbs):
            if "*" in token:
                raise ValueError(f"wildcard in {r}: okra declares every resource and verb")
        for group in r.api_groups:
            for resource in r.resources:
                verbs.setdefault((group, resource), set()).update(r.verbs)
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, resource), vs in verbs.items():
        key = (group, tuple(sorted(vs, key=_verb_key)))
        grouped.setdefault(key, []).append(resource)
    merged = [
        PolicyRule((group,), tuple(sorted(resources)), vs)
        for (group, vs), resources in grouped.items()
    ]
    return sorted(merged, key=lambda r: (r.api_groups, r.resources))


def _rule_dict(r: PolicyRule) -> dict[str, Any]:
    return {"apiGroups": list(r.api_groups), "resources": list(r.resources), "verbs": list(r.verbs)}


def _dump(obj: Mapping[str, Any]) -> str:
    body = yaml.safe_dump(dict(obj), sort_keys=False, default_flow_style=False)
    return f"# Generated from {__name__} by `python -m {__name__}`. DO NOT EDIT.\n---\n{body}"


def render_role(
    controllers: Mapping[str, Iterable[PolicyRule]] = CONTROLLER_RULES, name: str = MANAGER_ROLE
) -> str:
    """The ClusterRole granting every controller's rules, merged."""
    rules = merge_rules(r for rs in controllers.values() for r in rs)
    return _dump(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [_rule_dict(r) for r in rules],
        }
    )


def render_leader_election_role(
    rules: Iterable[PolicyRule] = LEADER_ELECTION_RULES,
    name: str = LEADER_ELECTION_ROLE,
    namespace: str = NAMESPACE,
) -> str:
    """The namespaced Role for the leader-election Lease (kustomize may move its namespace)."""
    return _dump(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace},
            "rules": [_rule_dict(r) for r in merge_rules(rules)],
        }
    )


def user_rules() -> tuple[list[PolicyRule], list[PolicyRule]]:
    """(viewer rules, editor rules), from the CRD models: every kind readable, every
    namespaced kind editable. Status stays the controllers' to write."""
    infos = [crd_info(m) for m in CRD_MODELS]
    every = tuple(sorted(i.plural for i in infos))
    namespaced = tuple(sorted(i.plural for i in infos if i.scope == "Namespaced"))
    return [PolicyRule((GROUP,), every, READ)], [PolicyRule((GROUP,), namespaced, EDIT)]


def _user_role(name: str, aggregate_to: Sequence[str], rules: Iterable[PolicyRule]) -> str:
    return _dump(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": name,
                **(
                    {"labels": {f"{AGGREGATE}{role}": "true" for role in aggregate_to}}
                    if aggregate_to
                    else {}
                ),
            },
            "rules": [_rule_dict(r) for r in merge_rules(rules)],
        }
    )


def freezer_rules() -> list[PolicyRule]:
    """Stop the line across the fleet: make, change and lift ClusterFreezes. Aggregated into
    no built-in role (a namespace's `edit` or `admin` must not freeze other teams'
    namespaces): bound by a ClusterRoleBinding to whoever may."""
    verbs = tuple(sorted({*READ, *EDIT}, key=_verb_key))
    return [PolicyRule((GROUP,), ("clusterfreezes",), verbs)]


def render_user_roles() -> dict[str, str]:
    """okra-viewer (aggregated into view, edit, admin), okra-editor (into edit, admin) and
    okra-cluster-freezer (into none)."""
    viewer, editor = user_rules()
    return {
        "viewer_role.yaml": _user_role(VIEWER_ROLE, ("view", "edit", "admin"), viewer),
        "editor_role.yaml": _user_role(EDITOR_ROLE, ("edit", "admin"), editor),
        "cluster_freezer_role.yaml": _user_role(FREEZER_ROLE, (), freezer_rules()),
    }


def render_actor_policy() -> str:
    """okra's ValidatingAdmissionPolicy and its binding (`okra_controllers.actors`): an actor
    annotation on a Cell or ProgressiveRollout names the user who wrote it."""
    body = yaml.safe_dump_all(
        [actors.policy(), actors.binding()], sort_keys=False, default_flow_style=False, width=100
    )
    return f"# Generated from {__name__} by `python -m {__name__}`. DO NOT EDIT.\n---\n{body}"


def render_all() -> dict[str, str]:
    """File name (in config/rbac) -> content."""
    return {
        "role.yaml": render_role(),
        "leader_election_role.yaml": render_leader_election_role(),
        **render_user_roles(),
        "actor_policy.yaml": render_actor_policy(),
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m okra_controllers.rbac --out DIR [--check]`."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {__name__}",
        description="Generate okra's RBAC roles from what its controllers declare.",
    )
    parser.add_argument("--out", required=True, type=Path, help="directory, e.g. config/rbac")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if DIR is out of date"
    )
    args = parser.parse_args(argv)
    out_dir: Path = args.out
    try:
        rendered = render_all()
    except ValueError as err:
        print(f"rbac: {err}", file=sys.stderr)
        return 1
    if not args.check:
        out_dir.mkdir(parents=True, exist_ok=True)
        for file_name, text in rendered.items():
            path = out_dir / file_name
            path.write_text(text, encoding="utf-8")
            print(path)
        return 0
    return check_generated(
        rendered,
        out_dir,
        "rbac: roles are out of date with okra_controllers.rbac",
        "run `make rbac` to regenerate them.",
    )


if __name__ == "__main__":
    # Run the imported module's main so its __name__ (in the header) is the package path.
    from okra_controllers.rbac import main as _main

    raise SystemExit(_main())
