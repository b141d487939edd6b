"""Least privilege, measured: the e2e rollout with okra-manager running as its
ServiceAccount (a token bound only to the generated roles in config/rbac), and the API
server's audit log recording every request that identity made.

Every (verb, group, resource/subresource) the manager used must be granted by
config/rbac (ClusterRole okra-manager-role, Role okra-leader-election-role in
okra-system): one that is not would be a 403 in a real cluster, and no request may have
been answered 403. Every granted rule must be used in the run, or explained: a rule the run
leaves unused needs a `reason` beside its declaration in okra_controllers.rbac, naming what uses
it (controllers this rollout does not run: ClusterSets, TargetGroupSets and Bindings, NLBs,
Checks, ProgressiveRollouts; Cell features it does not touch: Jobs, Argo CD ...) and the test
that covers it. Unused rules are printed with their reasons.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.conftest import (
    BLOCKLIST,
    REPO,
    VERSION_ARG,
    Metrics,
    cell_obj,
    error_rate_template,
    wait_status,
)
from installed import service_account_kubeconfig
from okra_controllers.rbac import CONTROLLER_RULES, LEADER_ELECTION_RULES
from okra_testkit.envtest import ControlPlane

from .harness import World
from .test_aws_faults import ANALYSIS

SA, SA_NS = "okra-controller-manager", "okra-system"
USER = f"system:serviceaccount:{SA_NS}:{SA}"
RBAC = REPO / "config" / "rbac"
Use = tuple[str, str, str, str]  # verb, group, resource[/subresource], namespace


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("audit")


@pytest.fixture(scope="module")
def control_plane(audit_dir: Path) -> Iterator[ControlPlane]:
    """A control plane of its own (overriding the session's for this module), auditing
    every request of okra's ServiceAccount to `audit_dir`/audit.log."""
    d = audit_dir
    policy = d / "policy.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "audit.k8s.io/v1",
                "kind": "Policy",
                "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata", "users": [USER]}, {"level": "None"}],
            }
        )
    )
    with ControlPlane(
        name="audit",
        apiserver_args=(
            f"--audit-policy-file={policy}",
            f"--audit-log-path={d / 'audit.log'}",
            "--audit-log-format=json",
        ),
    ) as cp:
        cp.kubectl("create", "namespace", SA_NS)
        cp.kubectl("apply", "-k", str(RBAC))
        yield cp


@pytest.fixture(scope="module")
def okra_crds(control_plane: ControlPlane) -> list[str]:
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])


def granted_rules() -> list[tuple[str | None, dict[str, Any]]]:
    """(namespace, rule) of every rule bound to okra's ServiceAccount in config/rbac
    (None: cluster-wide)."""
    out: list[tuple[str | None, dict[str, Any]]] = []
    for name, scoped in (("role.yaml", False), ("leader_election_role.yaml", True)):
        for doc in yaml.safe_load_all((RBAC / name).read_text()):
            if doc:
                ns = doc["metadata"].get("namespace") if scoped else None
                out += [(ns, r) for r in doc["rules"]]
    return out


def allows(rule: dict[str, Any], verb: str, group: str, resource: str) -> bool:
    return (
        (group in rule.get("apiGroups", []) or "*" in rule.get("apiGroups", []))
        and (resource in rule.get("resources", []) or "*" in rule.get("resources", []))
        and (verb in rule.get("verbs", []) or "*" in rule.get("verbs", []))
    )


def reasons(verb: str, group: str, resource: str) -> list[str]:
    """The reasons written in okra_controllers.rbac beside the rules granting this request."""
    declared = [*(r for rs in CONTROLLER_RULES.values() for r in rs), *LEADER_ELECTION_RULES]
    return sorted(
        {
            r.reason
            for r in declared
            if r.reason and group in r.api_groups and resource in r.resources and verb in r.verbs
        }
    )


def uses(audit_log: Path) -> tuple[set[Use], list[str]]:
    """What okra's ServiceAccount did (resource requests), and the requests answered 403."""
    used: set[Use] = set()
    denied: list[str] = []
    for line in audit_log.read_text().splitlines():
        ev = json.loads(line)
        ref = ev.get("objectRef")
        if ev.get("user", {}).get("username") != USER or not ref:
            continue
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        use = (ev["verb"], ref.get("apiGroup", ""), resource, ref.get("namespace", ""))
        used.add(use)
        if (ev.get("responseStatus") or {}).get("code") == 403:
            denied.append(f"{ev['verb']} {ev['requestURI']}")
    return used, denied


@pytest.mark.timeout(600)
async def test_every_request_of_the_rollout_is_granted_by_the_generated_rbac(
    world: World, metrics: Metrics, audit_dir: Path
) -> None:
    env, c, ns = world.env, world.client, world.ns
    okra = world.manager(
        kubeconfig=service_account_kubeconfig(world.cp, SA, SA_NS, world.tmp / "sa.kubeconfig"),
        args=["--okra-namespace", SA_NS, "--leader-elect"],
    )

    okra.start()
    try:
        await c.create(error_rate_template(ns, metrics.url))
        await env.target_group("web-a-v1", "v1")
        steps: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {"duration": "2s"}}, ANALYSIS]
        bg = {"templates": [{"templateName": "error-rate"}], "args": VERSION_ARG}
        await c.create(cell_obj(ns, env.alb.listener_arn, steps, background=bg))
        await wait_status(c, ns, lambda s: s.get("health") == "Healthy")
        await env.target_group("web-a-v2", "v2")
        await wait_status(
            c, ns, lambda s: s.get("health") == "Healthy" and s.get("stableVersion") == "v2"
        )
        metrics.rates["v3"] = 0.5
        await env.target_group("web-a-v3", "v3")
        await wait_status(c, ns, lambda s: s.get("health") == "Degraded")
        blocklist = await c.get(BLOCKLIST, "web", ns)
        assert [i["version"] for i in blocklist["spec"]["items"]] == ["v3"]
    finally:
        okra.stop()  # releases the Lease: its update is audited too

    used, denied = uses(audit_dir / "audit.log")
    rules = granted_rules()
    missing = sorted(
        u
        for u in used
        if not any(allows(r, u[0], u[1], u[2]) for rns, r in rules if rns is None or rns == u[3])
    )
    unused = sorted(
        (verb, group, resource)
        for _, r in rules
        for group in r.get("apiGroups", [])
        for resource in r.get("resources", [])
        for verb in r.get("verbs", [])
        if not any(u[0] == verb and u[1] == group and u[2] == resource for u in used)
    )
    explained = {u: reasons(*u) for u in unused}
    unexplained = [f"{v} {g or 'core'} {r}" for (v, g, r), why in explained.items() if not why]
    print(
        f"\nokra-manager as {USER}: {len(used)} distinct (verb, group, resource, namespace) "
        f"used; not granted: {missing or 'none'}; answered 403: {denied or 'none'}\n"
        f"granted but not used in this rollout: {len(unused)}, {len(unexplained)} without a "
        "reason in okra_controllers.rbac:\n  "
        + "\n  ".join(
            f"{v} {g or 'core'} {r}: {' | '.join(why) or 'NO REASON'}"
            for (v, g, r), why in explained.items()
        )
    )
    assert used, "the audit log recorded nothing of okra's ServiceAccount"
    assert not missing, f"used but not granted by config/rbac (403 in a cluster): {missing}"
    assert not denied, denied
    assert not unexplained, (
        "granted by config/rbac, not used by this rollout, and no reason beside the rule in "
        f"okra_controllers.rbac says what uses it: {unexplained}"
    )
