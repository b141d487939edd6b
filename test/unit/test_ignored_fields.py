"""Fields the API server used to accept and okra then ignored (issue 41, §1): each is now
refused by a validation rule of the CRD that names it and says what to write instead
(`okra lint` evaluates the same rules: checked here; the API server: in
test/integration/test_refused_fields.py, from the same table), warned about, or acts."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from okra_controllers.api.v1alpha1.warnings import spec_warnings
from okra_controllers.cli.lint import lint_texts
from unit.test_cell_system_plan import app, job, prometheus_check, rolled_out

LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/web/1/2"
NLB_LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/net/tcp/1/2"
TG = "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/web/1"
ALB = {"listenerARN": LISTENER, "targetGroupSelector": {"matchLabels": {"app": "web"}}}
NLB = {"listenerARN": NLB_LISTENER, "targetGroupSelector": {"matchLabels": {"app": "web"}}}
ROUTE53 = {"hostedZoneID": "Z1", "recordName": "web.example.com"}
SYSTEM: dict[str, Any] = {
    "clusters": [{"name": "web-1", "eks": {}, "labels": {"role": "web"}}],
    "applications": [
        {
            "name": "web",
            "alb": {
                "listenerARN": LISTENER,
                "forwardConfig": {"priority": 10, "targetGroup": {"arn": TG}},
            },
        }
    ],
}
SYSTEM_NLB = {"listenerARN": NLB_LISTENER, "targetGroup": {"arn": TG}}


def system_app(**fields: Any) -> dict[str, Any]:
    """SYSTEM with its application's `alb` replaced by `fields`."""
    web = {"name": "web", **fields}
    return {**SYSTEM, "applications": [web]}


TAGGED = [{"awsTargetGroups": {"targetGroupSelector": {"matchTags": {"app": "web"}}}}]
TARGETS = [{"name": "n", "clusterName": "c1", "port": 8080}]

REFUSED: list[tuple[str, str, dict[str, Any], str]] = [
    ("system-version", "Cell", {**SYSTEM, "version": "v9"}, "remove spec.version"),
    ("system-replicas", "Cell", {**SYSTEM, "replicas": 3}, "remove spec.replicas"),
    (
        "system-versioned-by",
        "Cell",
        {**SYSTEM, "versionedBy": {"label": "v"}},
        "spec.versionedBy and spec.versionLabels",
    ),
    (
        "system-version-labels",
        "Cell",
        {**SYSTEM, "versionLabels": ["v"]},
        "spec.versionedBy and spec.versionLabels",
    ),
    (
        "system-update-strategy",
        "Cell",
        {**SYSTEM, "updateStrategy": {"type": "Canary"}},
        "spec.applications[].alb.updateStrategy",
    ),
    (
        "system-nlb-beside-alb",
        "Cell",
        system_app(alb=SYSTEM["applications"][0]["alb"], nlb=SYSTEM_NLB),
        "one of alb, nlb, route53: write only one",
    ),
    (
        "system-nlb-traffic-confirmation",
        "Cell",
        system_app(nlb=SYSTEM_NLB, trafficConfirmation={"window": "1m"}),
        "trafficConfirmation needs alb or route53",
    ),
    (
        "system-nlb-delete-before-create",
        "Cell",
        system_app(
            nlb=SYSTEM_NLB,
            argocd={
                "clusterSecret": {"labels": {"app": "web"}},
                "updateStrategy": {"type": "DeleteBeforeCreate"},
            },
        ),
        "remove alb, nlb or route53",
    ),
    (
        "canary-beside-blue-green",
        "Cell",
        {
            "ingress": {"type": "AWSNetworkLoadBalancer", "awsNetworkLoadBalancer": NLB},
            "updateStrategy": {"type": "BlueGreen", "canary": {"steps": [{"setWeight": 10}]}},
        },
        "updateStrategy.canary is read only with type Canary",
    ),
    (
        "blue-green-beside-canary",
        "Cell",
        {
            "ingress": {"awsApplicationLoadBalancer": ALB},
            "updateStrategy": {"blueGreen": {"steps": [{"promote": {}}]}},
        },
        "updateStrategy.blueGreen is read only with type BlueGreen",
    ),
    (
        "promote-with-fields",
        "Cell",
        {
            "ingress": {"type": "AWSNetworkLoadBalancer", "awsNetworkLoadBalancer": NLB},
            "updateStrategy": {
                "type": "BlueGreen",
                "blueGreen": {"steps": [{"promote": {"full": True}}]},
            },
        },
        "promote.full",
    ),
    (
        "alb-beside-route53",
        "Cell",
        {
            "ingress": {
                "type": "AWSRoute53",
                "awsRoute53": ROUTE53,
                "awsApplicationLoadBalancer": ALB,
            }
        },
        "remove ingress.awsApplicationLoadBalancer",
    ),
    (
        "alb-beside-nlb",
        "Cell",
        {
            "ingress": {
                "type": "AWSNetworkLoadBalancer",
                "awsNetworkLoadBalancer": NLB,
                "awsApplicationLoadBalancer": ALB,
            }
        },
        "remove ingress.awsApplicationLoadBalancer",
    ),
    (
        "binding-group-beside-arn",
        "AWSTargetGroupBinding",
        {
            "targetGroupARN": TG,
            "targetGroup": {"name": "web", "vpcID": "vpc-1"},
            "targets": TARGETS,
        },
        "remove one of spec.targetGroup, spec.targetGroupARN",
    ),
    (
        "binding-node-selector-beside-ids",
        "AWSTargetGroupBinding",
        {
            "targetGroupARN": TG,
            "targets": [
                {
                    "name": "a",
                    "ids": ["i-1"],
                    "nodeSelector": {"matchLabels": {"r": "w"}},
                    "port": 80,
                }
            ],
        },
        "is not read beside ids: remove nodeSelector",
    ),
    (
        "set-binding-template-group",
        "AWSTargetGroupSet",
        {
            "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}}],
            "bindingTemplate": {
                "spec": {
                    "targetGroupARN": TG,
                    "targetGroup": {"name": "web", "vpcID": "vpc-1"},
                    "targets": TARGETS,
                }
            },
        },
        "bindingTemplate.spec.targetGroup (a group each binding creates) is not read beside",
    ),
    (
        "set-binding-selector-tags-only",
        "AWSTargetGroupSet",
        {"generators": TAGGED, "bindingSelector": {"matchLabels": {"role": "web"}}},
        "remove spec.bindingSelector",
    ),
    (
        "set-binding-template-tags-only",
        "AWSTargetGroupSet",
        {"generators": TAGGED, "bindingTemplate": {"spec": {"targets": TARGETS}}},
        "remove spec.bindingTemplate",
    ),
]
"""(case, kind, spec, what the refusal says): each spec sets one field okra would not read."""


def manifest(kind: str, spec: dict[str, Any], name: str = "x") -> dict[str, Any]:
    return {"apiVersion": "okra.mumo.co/v1alpha1", "kind": kind, "metadata": {"name": name}}


def lint_errors(kind: str, spec: dict[str, Any]) -> list[str]:
    doc = {**manifest(kind, spec), "spec": spec}
    linter = lint_texts([("x.yaml", yaml.safe_dump(doc))])
    return [f"{p.path}: {p.message}" for p in linter.errors]


@pytest.mark.parametrize(("case", "kind", "spec", "said"), REFUSED, ids=[r[0] for r in REFUSED])
def test_okra_lint_refuses_each_field_okra_would_not_read(
    case: str, kind: str, spec: dict[str, Any], said: str
) -> None:
    errors = lint_errors(kind, spec)
    assert any(said in e for e in errors), errors


def test_without_the_ignored_field_the_same_objects_pass_lint() -> None:
    """The refusals are about the one field: the objects without it are fine."""
    assert lint_errors("Cell", SYSTEM) == []
    assert lint_errors("Cell", {"ingress": {"type": "AWSRoute53", "awsRoute53": ROUTE53}}) == []
    assert lint_errors("AWSTargetGroupSet", {"generators": TAGGED}) == []
    both = {"generators": [*TAGGED, {"awseks": {}}], "bindingSelector": {"matchLabels": {}}}
    assert lint_errors("AWSTargetGroupSet", both) == []
    blue_green = {
        "ingress": {"type": "AWSNetworkLoadBalancer", "awsNetworkLoadBalancer": NLB},
        "updateStrategy": {"type": "BlueGreen", "blueGreen": {"steps": [{"promote": {}}]}},
    }
    assert lint_errors("Cell", blue_green) == []


def test_an_experiment_analysis_name_and_required_for_completion_warn() -> None:
    """The original okra's experiment step: accepted (refusing would break its manifests),
    each unread field named in a Warning Event and by `okra lint`."""
    spec = {
        "ingress": {"awsApplicationLoadBalancer": ALB},
        "updateStrategy": {
            "canary": {
                "steps": [
                    {
                        "experiment": {
                            "analyses": [
                                {
                                    "name": "smoke",
                                    "templateName": "smoke",
                                    "requiredForCompletion": False,
                                }
                            ]
                        }
                    }
                ]
            }
        },
    }
    where = "spec.updateStrategy.canary.steps[0].experiment.analyses[0]"
    said = spec_warnings("Cell", spec)
    assert [w.split(":")[0] for w in said[1:]] == [
        f"{where}.name",
        f"{where}.requiredForCompletion",
    ]
    doc = {**manifest("Cell", spec), "spec": spec}
    problems = lint_texts([("x.yaml", yaml.safe_dump(doc))]).problems
    assert [(p.level, p.path) for p in problems if p.path.startswith(where)] == [
        ("warning", f"{where}.name"),
        ("warning", f"{where}.requiredForCompletion"),
    ]


# -- a system Cell's own fields that now act ------------------------------------------


def test_a_system_cells_rollback_delay_is_each_applications_default_wait() -> None:
    apps = [app("web", "web", 50, checks=True), app("api", "api", 100)]
    w = rolled_out(apps, rollbackDelaySeconds=5, progressDeadlineAbort=True)
    w.check_passes = lambda name: False
    w.run(30)
    said = {a.message for p in w.history for a in p.status.applications or [] if a.name == "web"}
    assert any("Waiting 5 seconds before starting a rollback" in m for m in said), said
    assert w.app("web").phase == "Reverted"
    cells = {c["metadata"]["name"]: c["spec"] for c in w.objects["cells"]}
    assert {
        n: (s["rollbackDelaySeconds"], s["progressDeadlineAbort"]) for n, s in cells.items()
    } == {
        "sys-web": (5, True),
        "sys-api": (5, True),
    }


def test_each_applications_weight_is_written_as_its_cell_reports_it() -> None:
    w = rolled_out([app("web", "web", 50), app("api", "api", 100)])
    seen: list[int | None] = []
    for _ in range(30):
        w.tick()
        weight = w.app("web").weight
        if not seen or seen[-1] != weight:
            seen.append(weight)
    assert seen[0] in (None, 0)
    assert [s for s in seen if s] == [50, 100]
    assert w.app("api").weight == 100
    prechecked = rolled_out([app("web", "web", 50, prechecks=[job("t")])])
    assert all(a.weight is None for a in prechecked.status.applications or [] if not a.version)


def test_a_rollback_that_cannot_apply_is_failed_reverting_until_it_does() -> None:
    apps = [app("web", "web", 50, checks=True, failurePolicy={"delaySeconds": 2})]
    w = rolled_out(apps)
    w.check_passes = lambda name: False
    for _ in range(60):  # until the rollback starts
        w.tick()
        at = w.app("web").rollback_at
        if at is not None and w.now >= at:
            break
    w.children["web"].refusal = "AccessDenied: not allowed to modify the rule"
    w.run(10)
    assert w.app("web").phase == "FailedReverting"
    assert "rolling back failed" in w.app("web").message
    assert "AccessDenied" in w.app("web").message
    assert (w.status.phase, w.status.health) == ("FailedReverting", "Degraded")
    w.children["web"].refusal = ""
    w.run(10)
    assert w.app("web").phase == "Reverted"
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    assert w.status.phase == "Failed"


# -- seed 002's "run all the checks with retries" ---------------------------------------


def _check_runs(w: Any, results: list[bool]) -> Any:
    """Each Check's runs while web's Cell waits at a check step: `results` in order, then
    passing (runs before the step pass)."""
    runs: dict[str, int] = {}

    def passes(name: str) -> bool:
        child = w.children.get("web")
        if child is None or child.status.health != "Paused":
            return True
        n = runs[name] = runs.get(name, 0) + 1
        return results[n - 1] if n <= len(results) else True

    return passes


def test_a_check_that_fails_fewer_times_than_its_retries_lets_the_step_pass() -> None:
    w = rolled_out([app("web", "web", 100, checks=True)])
    w.check_passes = _check_runs(w, [False, False])  # two failed tries; retries 2 by default
    w.run(30)
    assert w.app("web").phase == "Synced"
    said = [a.message for p in w.history for a in p.status.applications or [] if a.name == "web"]
    assert any("retrying: sys-web-errors-web-1-v2 failed 1 of 3 tries" in m for m in said), said
    assert any("retrying: sys-web-errors-web-1-v2 failed 2 of 3 tries" in m for m in said), said
    assert w.app("web").check_tries is None  # cleared once the check passed


def test_a_check_that_fails_past_its_retries_fails_the_step_saying_how_many_tries() -> None:
    checks = [{**prometheus_check(), "retries": 1}]
    w = rolled_out(
        [
            app("web", "web", 100, checks=False, failurePolicy={"delaySeconds": 2})
            | {"checks": checks}
        ]
    )
    w.check_passes = _check_runs(w, [False, False, False, False])
    w.run(30)
    said = {a.message for p in w.history for a in p.status.applications or [] if a.name == "web"}
    assert any(
        m.startswith(
            "check sys-web-errors-web-1-v2 failed 2 tries in a row (retries: 1). Waiting 2"
        )
        for m in said
    ), said
    assert w.app("web").phase == "Reverted"


def test_a_check_with_no_retries_fails_the_step_at_its_first_failed_run() -> None:
    checks = [{**prometheus_check(), "retries": 0}]
    w = rolled_out([app("web", "web", 100, failurePolicy={"type": "Stop"}) | {"checks": checks}])
    w.check_passes = _check_runs(w, [False])
    w.run(20)
    assert w.app("web").phase == "Stopped"
    assert "failed 1 tries in a row (retries: 0)" in w.app("web").message
