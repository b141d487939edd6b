"""Every field the API server accepts acts, is refused, or warns (the contract, issue 41).

For each walked kind and each shape it has (a valid object of each), every optional field
of its CRD schema is set, one at a time, to a valid value other than its default
(`okra_testkit.fieldwalk`). Each variant must then be
- refused by the API server (dry run, strict field validation) with a message of one of
  the CRD's validation rules that names the field (or, for a field of an object that takes
  none, as an unknown field), or
- warned about: the kind's Warning Events (`spec_warnings`, which `okra lint` reports
  too) differ from the base object's, or
- acted on: what the pure plan does over a few scripted worlds (a rollout that goes
  right, one whose analyses, checks and Jobs fail, one whose load balancer refuses the
  weights) differs from what it does for the base object. What the plan returns is
  compared together with what the controller derives from it without looking at
  anything else: the load balancer config's spec, the check Jobs' manifests, the labels
  put on Argo CD cluster Secrets. A variant okra's own validation refuses (the
  controller's InvalidSpec) counts as acted on, and is counted apart.
The variant is judged as the API server stores it (its defaults filled in), from the
dry run's answer, as the controller would read it.

A field that does none of these fails the test with its path. `ALLOWED` lists the
fields the test lets pass, each with why.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from integration.walk_analysis import (
    RUN_SHAPES,
    TEMPLATE_SHAPES,
    run_outputs,
    template_outputs,
)
from integration.walk_check import CHECK_SHAPES, check_outputs
from integration.walk_lb import (
    ALB_SHAPES,
    NLB_SHAPES,
    R53_SHAPES,
    alb_outputs,
    nlb_outputs,
    route53_outputs,
)
from integration.walk_small import (
    BLOCKLIST_SHAPES,
    CLUSTERSET_SHAPES,
    PAUSE_SHAPES,
    blocklist_outputs,
    clusterset_outputs,
    pause_outputs,
)
from okra_controllers.api.v1alpha1.cell import Cell, CellRoute53, CellSpec
from okra_controllers.api.v1alpha1.warnings import spec_warnings
from okra_controllers.cell.argocd import ClusterView, observe_clusters
from okra_controllers.cell.checkjobs import check_job
from okra_controllers.cell.configspec import listener_spec, route53_spec
from okra_controllers.cell.plan import Plan
from okra_controllers.cell.versions import Grouped, group_target_groups
from okra_testkit.envtest import ControlPlane
from okra_testkit.fieldwalk import Variant, variants
from unit.test_cell_plan_argocd import APP_LABELS, ArgoWorld
from unit.test_cell_system_backends import nlb_app, route53_app
from unit.test_cell_system_plan import (
    LISTENER as SYSTEM_LISTENER,
)
from unit.test_cell_system_plan import (
    V1,
    V2,
    SystemWorld,
    job,
    prometheus_check,
)

REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "config" / "crd" / "bases"
LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/web/1/2"
NLB_LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/net/tcp/1/2"
SELECTOR = {"matchLabels": {"role": "web"}}
STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "2s"}},
    {"analysis": {"templates": [{"templateName": "rate"}]}},
    {"stepWeight": 30},
]
CHECK = {"name": "smoke", "job": {"template": {"spec": {"image": "busybox", "command": ["true"]}}}}
ARGOCD = {
    "clusterSecret": {"selector": SELECTOR, "labels": APP_LABELS},
    "applicationSet": {"name": "web"},
}

CELL_SHAPES: dict[str, dict[str, Any]] = {
    "alb-canary": {
        "ingress": {
            "type": "AWSApplicationLoadBalancer",
            "awsApplicationLoadBalancer": {
                "listenerARN": LISTENER,
                "targetGroupSelector": SELECTOR,
            },
        },
        "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
        "prechecks": [CHECK],
        "postchecks": [{**CHECK, "name": "after"}],
        "rollbackDelaySeconds": 3,
        "progressDeadlineSeconds": 8,
    },
    "nlb-blue-green": {
        "ingress": {
            "type": "AWSNetworkLoadBalancer",
            "awsNetworkLoadBalancer": {
                "listenerARN": NLB_LISTENER,
                "targetGroupSelector": SELECTOR,
            },
        },
        "updateStrategy": {
            "type": "BlueGreen",
            "blueGreen": {"steps": [{"analysis": STEPS[2]["analysis"]}, {"promote": {}}]},
        },
        "postchecks": [{**CHECK, "name": "after"}],
        "progressDeadlineSeconds": 8,
    },
    "route53": {
        "ingress": {
            "type": "AWSRoute53",
            "awsRoute53": {
                "hostedZoneID": "Z1",
                "recordName": "web.example.com",
                "targetGroupSelector": SELECTOR,
            },
        },
        "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS}},
        "postchecks": [{**CHECK, "name": "after"}],
        "progressDeadlineSeconds": 8,
    },
    "alb-argocd": {
        "ingress": {
            "type": "AWSApplicationLoadBalancer",
            "awsApplicationLoadBalancer": {
                "listenerARN": LISTENER,
                "targetGroupSelector": SELECTOR,
            },
        },
        "argocd": ARGOCD,
        "updateStrategy": {"type": "Canary", "canary": {"steps": STEPS[:1]}},
        "postchecks": [CHECK],
    },
    "argocd-only": {
        "argocd": {**ARGOCD, "updateStrategy": {"type": "DeleteBeforeCreate"}},
        "prechecks": [CHECK],
        "postchecks": [{**CHECK, "name": "after"}],
        "progressDeadlineSeconds": 8,
    },
}
"""A single-application Cell (seed 000's shape) of each traffic backend."""


def _system_app(name: str, role: str, step: int, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": role}},
        "alb": {
            "listenerARN": SYSTEM_LISTENER,
            "forwardConfig": {"priority": 10, "targetGroup": {"arnFromLabel": "targetGroupARN"}},
            "updateStrategy": {"stepWeight": step, "totalWeight": 100},
        },
        **kw,
    }


SYSTEM_SHAPE: dict[str, Any] = {
    "clusters": V2,
    "applications": [
        _system_app("web", "web", 50, checks=[prometheus_check()]),
        _system_app("api", "api", 100, prechecks=[job("run-test")]),
    ],
    "rollbackDelaySeconds": 3,
}
"""A system Cell (seed 002's shape): a web pair with checks moving, api with a precheck."""

SYSTEM_BACKEND_SHAPES: dict[str, dict[str, Any]] = {
    f"system-{name}": {
        **SYSTEM_SHAPE,
        "applications": [first, SYSTEM_SHAPE["applications"][1]],
    }
    for name, first in (
        ("nlb", nlb_app("web", "web", 50, checks=True)),
        ("route53", route53_app("web", "web", 50, checks=True)),
    )
}
"""The system with its first application (the one whose fields the walk sets) behind an
NLB, and behind Route 53."""

ALLOWED: dict[str, str] = {}
"""Fields the walk lets pass although they neither act on the plan nor are refused nor
warn, each with why. Empty: every walked field acts, warns or is refused."""

NOT_WALKED: dict[str, str] = {
    "AWSTargetGroup": "no optional spec field (spec.arn is required)",
}
"""Kinds this walk does not cover yet, each with why."""

WALKED_APART: dict[str, str] = {
    "ProgressiveRollout": "test_every_field_acts_progressive.py",
    "Freeze": "test_every_field_acts_more.py",
    "ClusterFreeze": "test_every_field_acts_more.py",
    "AWSTargetGroupBinding": "test_every_field_acts_more.py",
    "AWSTargetGroupSet": "test_every_field_acts_more.py",
}
"""Kinds walked by `walk` in a module of their own (their judge needs its own worlds)."""


# -- the worlds the plan is judged in -------------------------------------------------


@dataclasses.dataclass
class SpecWorld(ArgoWorld):
    """A Cell's world in which target groups are selected and versioned as the Cell's spec
    says (its selector's labels, its version labels), as the controller observes them."""

    def grouped(self) -> Grouped:
        if self.spec.ingress is None:
            labels = self.spec.labels_for_version()
            secrets = ((n, "", lab) for n, lab in self.secrets.items())
            return group_target_groups(secrets, labels)
        lb = self.spec.ingress.listener()
        wanted = lb.target_group_selector.match_labels if lb is not None else {}
        tgs = [t for t in self.tgs if all(t[2].get(k) == v for k, v in wanted.items())]
        return group_target_groups(tgs, self.spec.labels_for_version())

    def clusters(self) -> ClusterView | None:
        if self.spec.argocd is None:
            return None
        secrets, apps = self.objects()
        labels = self.spec.labels_for_version()
        return observe_clusters(self.spec.argocd, labels, secrets, apps)


def cell_outputs(raw: dict[str, Any], cell: Cell, history: list[Plan]) -> list[Any]:
    """What the Cell controller does with each plan, without looking at anything else."""
    out: list[Any] = []
    spec = cell.spec
    for p in history:
        out.append(repr(dataclasses.replace(p, create_jobs=[])))
        out += [check_job(raw, j) for j in p.create_jobs]
        if p.forward is not None and spec.ingress is not None:
            lb = spec.ingress.listener()
            assert lb is not None
            if isinstance(lb, CellRoute53):
                out.append(route53_spec(lb, p.forward))
            else:
                out.append(listener_spec(cell, lb, p.forward))
        if (p.label or p.unlabel) and spec.argocd is not None:
            out.append(spec.argocd.cluster_secret.labels)
    return out


def single_cell(raw: dict[str, Any]) -> list[Any]:
    """A Cell serving v1 (two target groups, or two Argo CD clusters) when v2 appears,
    in four worlds: everything goes right; analyses and check Jobs fail; only postcheck
    Jobs fail; the load balancer refuses the weights and Argo CD never gets the app
    Healthy on the new clusters (the progress deadline passes)."""
    cell = Cell.model_validate(raw)
    out: list[Any] = []
    for world in ("right", "failing", "postcheck-failing", "stuck"):
        w = SpecWorld(cell.spec)
        for n in ("a", "b"):
            w.add_tg(f"web-{n}-v1", "v1")
            w.add_cluster(f"c{n}-v1", "v1", labelled=True)
        w.run(6)
        if world == "failing":
            w.outcome = lambda name: "Failed"
            w.job_outcome = lambda name: ("Failed", "exit code 1")
        if world == "postcheck-failing":
            w.job_outcome = lambda name: (
                ("Failed", "exit code 1") if "-post-" in name else ("Succeeded", "")
            )
        for n in ("a", "b"):  # one a tick: a version is complete when `replicas` are there
            w.add_tg(f"web-{n}-v2", "v2")
            w.add_cluster(f"c{n}-v2", "v2")
            w.tick()
        if world == "stuck":
            w.refusal = "AccessDenied: not allowed"
            w.broken = {"ca-v2", "cb-v2"}  # Argo CD never gets the app Healthy there
        w.run(20)
        out += [world, *cell_outputs(raw, cell, w.history)]
    return out


def system_cell(raw: dict[str, Any]) -> list[Any]:
    """The system on its v1 clusters, then given the v2 pair (the variant's own spec), in
    three worlds: every check passes; every check and Job fails; one new cluster is late
    (up after 12 seconds)."""
    spec = CellSpec.model_validate(raw["spec"])
    first = CellSpec.model_validate({**raw["spec"], "clusters": V1})
    out: list[Any] = []
    for world in ("right", "failing", "late"):
        w = SystemWorld(first)
        w.run(12)
        late = (spec.clusters or [])[0].name if world == "late" else None
        for c in spec.clusters or []:
            if c.name != late:
                w.up(c.name, c.labels.get("role", ""))
        w.spec = spec
        w.history.clear()
        if world == "failing":
            w.check_passes = lambda name: False
            for child in w.children.values():
                child.job_outcome = lambda name: ("Failed", "exit code 1")
        w.run(12)
        if late is not None:
            w.up(late, "web")
        w.run(18)
        out.append(world)
        out += [repr(p) for p in w.history]
        out += [repr(p) for c in sorted(w.children) for p in w.children[c].history]
    return out


Judge = Callable[[dict[str, Any]], list[Any] | Awaitable[list[Any]]]
SHAPES: list[tuple[str, str, dict[str, Any], Judge]] = [
    *(("Cell", name, spec, single_cell) for name, spec in CELL_SHAPES.items()),
    ("Cell", "system", SYSTEM_SHAPE, system_cell),
    *(("Cell", name, spec, system_cell) for name, spec in SYSTEM_BACKEND_SHAPES.items()),
    *(("Check", name, spec, check_outputs) for name, spec in CHECK_SHAPES.items()),
    *(("AnalysisRun", name, spec, run_outputs) for name, spec in RUN_SHAPES.items()),
    *(("AnalysisTemplate", n, spec, template_outputs) for n, spec in TEMPLATE_SHAPES.items()),
    *(
        ("ClusterAnalysisTemplate", n, spec, template_outputs)
        for n, spec in TEMPLATE_SHAPES.items()
    ),
    *(("AWSApplicationLoadBalancerConfig", n, s, alb_outputs) for n, s in ALB_SHAPES.items()),
    *(("AWSNetworkLoadBalancerConfig", n, s, nlb_outputs) for n, s in NLB_SHAPES.items()),
    *(("AWSRoute53RecordSetConfig", n, s, route53_outputs) for n, s in R53_SHAPES.items()),
    *(("ClusterSet", n, s, clusterset_outputs) for n, s in CLUSTERSET_SHAPES.items()),
    *(("Pause", name, spec, pause_outputs) for name, spec in PAUSE_SHAPES.items()),
    *(("VersionBlocklist", n, spec, blocklist_outputs) for n, spec in BLOCKLIST_SHAPES.items()),
]


# -- the walk ---------------------------------------------------------------------------


@dataclasses.dataclass
class Verdict:
    refused: list[str] = dataclasses.field(default_factory=list)
    warned: list[str] = dataclasses.field(default_factory=list)
    acted: list[str] = dataclasses.field(default_factory=list)
    invalid: list[str] = dataclasses.field(default_factory=list)  # okra's InvalidSpec
    nothing: list[str] = dataclasses.field(default_factory=list)


def crd_of(kind: str) -> dict[str, Any]:
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        if crd["spec"]["names"]["kind"] == kind:
            return dict(crd)
    raise KeyError(kind)


def rule_messages(schema: Any) -> set[str]:
    """Every validation rule's message in a schema."""
    out: set[str] = set()
    if isinstance(schema, dict):
        for rule in schema.get("x-kubernetes-validations") or []:
            out.add(str(rule.get("message") or rule["rule"]))
        for v in schema.values():
            out |= rule_messages(v)
    elif isinstance(schema, list):
        for v in schema:
            out |= rule_messages(v)
    return out


async def stored(
    kube: client.ApiClient, crd: dict[str, Any], namespace: str, obj: dict[str, Any]
) -> tuple[dict[str, Any] | None, str]:
    """The object as the API server would store it, or why it refuses it."""
    body = copy.deepcopy(obj)
    api = client.CustomObjectsApi(kube)
    group, plural = crd["spec"]["group"], crd["spec"]["names"]["plural"]
    try:
        if crd["spec"]["scope"] == "Cluster":
            out = await api.create_cluster_custom_object(
                group, "v1alpha1", plural, body, dry_run="All", field_validation="Strict"
            )
        else:
            body["metadata"]["namespace"] = namespace
            out = await api.create_namespaced_custom_object(
                group,
                "v1alpha1",
                namespace,
                plural,
                body,
                dry_run="All",
                field_validation="Strict",
            )
    except ApiException as e:
        return None, str(json.loads(e.body or b"{}").get("message") or e)
    return dict(out), ""


def _names_field(path: str, said: str) -> bool:
    """The refusal names the field, or the object it was set in (a field of an object the
    kind refuses in this shape is refused with it)."""
    return any(part.removesuffix("[]") in said for part in path.split(".")[1:])


async def _judged(judge: Judge, obj: dict[str, Any]) -> list[Any]:
    out = judge(obj)
    return await out if inspect.isawaitable(out) else out


def assert_every_field_acts(
    title: str, verdict: Verdict, broken: list[str], allowed: Callable[[str], bool]
) -> None:
    """Print what a walk found (`-s` shows it: the figures of the issue) and fail on any
    field that does nothing and is not `allowed` (each allowed one with its reason), or on
    a walk that could not run."""
    print(
        f"\n{title}: {len(verdict.acted)} act, {len(verdict.refused)} refused, "
        f"{len(verdict.warned)} warn, {len(verdict.invalid)} refused by okra (InvalidSpec), "
        f"{len(verdict.nothing)} do nothing"
    )
    for path in verdict.nothing:
        print(f"  does nothing: {path}{' (ALLOWED)' if allowed(path) else ''}")
    assert broken == []
    assert [p for p in verdict.nothing if not allowed(p)] == []
    assert verdict.acted


async def walk(
    kube: client.ApiClient, namespace: str, kind: str, shape: dict[str, Any], judge: Judge
) -> tuple[Verdict, list[str]]:
    crd = crd_of(kind)
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    messages = rule_messages(schema)
    base = {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": kind,
        "metadata": {"name": "walked", "uid": "u-1", "generation": 1},
        "spec": shape,
    }
    base_stored, why = await stored(kube, crd, namespace, base)
    assert base_stored is not None, f"the base {kind} is refused: {why}"
    base_stored["metadata"] |= {"uid": "u-1", "generation": 1}
    base_out = await _judged(judge, base_stored)
    base_warnings = spec_warnings(kind, shape)
    verdict, broken = Verdict(), []
    for v in variants(schema, base):
        obj, said = await stored(kube, crd, namespace, v.obj)
        if obj is None:
            ruled = any(m in said for m in messages) or "unknown field" in said
            if ruled and _names_field(v.path, said):
                verdict.refused.append(v.path)
            else:
                broken.append(f"{v.path}: the walker's value is refused: {said}")
            continue
        obj["metadata"] |= {"uid": "u-1", "generation": 1}
        if spec_warnings(kind, v.obj["spec"]) != base_warnings:
            verdict.warned.append(v.path)
            continue
        try:
            acted = await _judged(judge, obj) != base_out
        except ValidationError:
            verdict.invalid.append(v.path)
            continue
        (verdict.acted if acted else verdict.nothing).append(v.path)
    return verdict, broken


def _variants_named(shape: dict[str, Any], kind: str) -> list[Variant]:
    schema = crd_of(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return list(variants(schema, {"metadata": {"name": "x"}, "spec": shape}))


def test_every_kind_is_walked_or_says_why_not() -> None:
    kinds = {yaml.safe_load(p.read_text())["spec"]["names"]["kind"] for p in CRDS.glob("*.yaml")}
    walked = {k for k, _, _, _ in SHAPES} | set(WALKED_APART)
    assert kinds - walked == set(NOT_WALKED)


def test_the_walk_sets_the_fields_of_section_one() -> None:
    """The walk reaches the fields issue 41 found by reading the code (so a walk that
    silently skipped them could not pass)."""
    system = {v.path for v in _variants_named(SYSTEM_SHAPE, "Cell")}
    assert {
        "spec.version",
        "spec.replicas",
        "spec.versionedBy",
        "spec.versionLabels",
        "spec.updateStrategy.type",
        "spec.rollbackDelaySeconds",
        "spec.progressDeadlineAbort",
    } <= system
    nlb = {v.path for v in _variants_named(CELL_SHAPES["nlb-blue-green"], "Cell")}
    assert "spec.updateStrategy.canary.steps[].setWeight" in nlb
    assert "spec.ingress.awsApplicationLoadBalancer" in nlb
    assert "spec.updateStrategy.blueGreen.steps[].promote" in nlb


def _shape_param(kind: str, name: str, shape: dict[str, Any], judge: Judge) -> Any:
    # A judged template's walk runs the judge over every variant in simulated worlds: 55 s of
    # one core alone, and past the suite's 300 s hang guard beside make test-stress's CPU hog
    # (both judged shapes timed out there at 300 s with the walk still judging).
    marks = [pytest.mark.timeout(900)] if name == "judged" else []
    return pytest.param(kind, shape, judge, id=f"{kind}-{name}", marks=marks)


@pytest.mark.parametrize(("kind", "shape", "judge"), [_shape_param(*x) for x in SHAPES])
async def test_every_field_acts_is_refused_or_warns(
    control_plane: ControlPlane,
    kube: client.ApiClient,
    namespace: str,
    kind: str,
    shape: dict[str, Any],
    judge: Judge,
) -> None:
    control_plane.install_crds([CRDS])
    verdict, broken = await walk(kube, namespace, kind, shape, judge)
    assert_every_field_acts(kind, verdict, broken, lambda path: path in ALLOWED)
    schema = crd_of(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert verdict.refused or not rule_messages(schema)  # a kind with rules had one tried
