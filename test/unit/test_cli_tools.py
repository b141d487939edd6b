"""`okra lint`, the CEL subset it evaluates, completion, `okra status`'s verdict,
the analysis run view, and the CLI's start-up imports."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.api.v1alpha1.cell import Cell
from okra_controllers.cli.completion import bash, tree
from okra_controllers.cli.lint import cel_to_expr, lint_texts
from okra_controllers.cli.parser import build_parser
from okra_controllers.cli.render import render_analysis_run
from okra_controllers.cli.status import verdict
from okra_runtime.crdgen import openapi_schema

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted((REPO / "config" / "samples").glob("okra_*.yaml"))

BROKEN = """\
apiVersion: okra.mumo.co/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service
  metrics:
  - name: rate
    successCondition: result[0] >= 0.95 &&
    provider:
      prometheus:
        address: http://prometheus:9090
        query: x{svc="{{args.service}}", ns="{{args.namespace}}"}
---
apiVersion: okra.mumo.co/v1alpha1
kind: Cell
metadata:
  name: web
spec:
  ingress:
    awsApplicationLoadBalancer:
      listenerARN: arn:aws:elasticloadbalancing:us-east-1:1:listener/app/x/1/2
      listenerRule:
        priority: 10
  version: banana
  updateStrategy:
    canary:
      steps:
      - setWeight: 120
      - setWeight: 10
        pause: {}
      - pause: {duration: 5 minutes}
      - analysis:
          templates:
          - templateName: success-rate
          args:
          - name: servce
            value: web
      - stepWeigth: 10
---
apiVersion: okra.mumo.co/v1alpha1
kind: AWSApplicationLoadBalancerConfig
metadata:
  name: web
spec:
  listenerARN: arn:aws:elasticloadbalancing:us-east-1:1:listener/app/x/1/2
  forwardTargetGroups:
""" + "".join(
    f'  - {{name: {n}, arn: "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{n}/1", '
    f"weight: {1000 if n == 'a' else 1}}}\n"
    for n in "abcdef"
)


def test_every_sample_is_clean() -> None:
    assert SAMPLES
    linter = lint_texts([(str(p), p.read_text()) for p in SAMPLES])
    assert [str(p) for p in linter.problems] == []
    assert len(linter.docs) == len(SAMPLES)


def test_a_broken_file_names_each_error_with_its_line() -> None:
    linter = lint_texts([("broken.yaml", BROKEN)])
    got = [(p.line, p.obj, p.path, p.message.split(" (")[0]) for p in linter.problems]
    step = "spec.updateStrategy.canary.steps"
    assert got == [
        (
            9,
            "AnalysisTemplate/success-rate",
            "spec.metrics[0]",
            "{{args.namespace}} is used but spec.args declares no 'namespace'",
        ),
        (
            10,
            "AnalysisTemplate/success-rate",
            "spec.metrics[0].successCondition",
            'could not evaluate successCondition "result[0] >= 0.95 &&": '
            "unexpected end of condition at column 21 in 'result[0] >= 0.95 &&'",
        ),
        (
            24,
            "Cell/web",
            "spec.ingress.awsApplicationLoadBalancer.listenerRule",
            "a listener rule other than the default needs at least one condition",
        ),
        (26, "Cell/web", "spec.version", "'banana' is not a version"),
        (30, "Cell/web", f"{step}[0].setWeight", "Input should be less than or equal to 100"),
        (
            31,
            "Cell/web",
            f"{step}[1]",
            "a step has exactly one of setWeight, stepWeight, pause, analysis",
        ),
        (
            33,
            "Cell/web",
            f"{step}[2].pause.duration",
            "invalid duration '5 minutes': use a number and a unit",
        ),
        (
            36,
            "Cell/web",
            f"{step}[3].analysis.templates[0]",
            "AnalysisTemplate success-rate needs argument 'service'",
        ),
        (
            38,
            "Cell/web",
            f"{step}[3].analysis.args[0]",
            "argument 'servce' is declared by none of the templates",
        ),
        (
            40,
            "Cell/web",
            f"{step}[4].stepWeigth",
            "unknown field",
        ),
        (
            40,
            "Cell/web",
            f"{step}[4]",
            "a step has exactly one of setWeight, stepWeight, pause, analysis",
        ),
        (
            48,
            "AWSApplicationLoadBalancerConfig/web",
            "spec.forwardTargetGroups",
            "6 target groups: an ALB forward action holds at most 5",
        ),
        (
            49,
            "AWSApplicationLoadBalancerConfig/web",
            "spec.forwardTargetGroups[0].weight",
            "weight 1000: an ALB weight is 0..999",
        ),
    ]
    assert str(linter.problems[0]).startswith("broken.yaml:9: AnalysisTemplate/success-rate: ")


ARGS_TEMPLATE = """\
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: x
spec:
  args:
  - name: threshold
  - name: interval
    value: 30s
  - name: limit
    value: "5"
  dryRun:
  - metricName: "*"
  metrics:
  - name: a
    interval: "{{args.interval}}"
    count: 3
    failureLimit: "{{args.limit}}"
    successCondition: result[0] >= {{args.threshold}}
    provider:
      prometheus:
        query: up
  - name: b
    interval: 5 minutes
    provider:
      prometheus:
        query: up
"""


def test_metrics_are_checked_with_the_files_argument_values() -> None:
    """Argo's ValidateMetrics on the metric with the file's values substituted; a condition
    naming an argument the caller gives is left to the run; `*` is not a regular expression."""
    found = {(p.path, p.message, p.level) for p in lint_texts([("t.yaml", ARGS_TEMPLATE)]).problems}
    assert found == {
        (
            "spec.metrics[0].count",
            "count (3) must be >= failureLimit + consecutiveSuccessLimit (5 + 0) if both >= 0",
            "error",
        ),
        (
            "spec.metrics[1].interval",
            'invalid interval string: time: unknown unit " minutes" in duration "5 minutes"',
            "error",
        ),
        (
            "spec.dryRun[0].metricName",
            "Rule didn't match any metric name(s): '*' (a regular expression: `.*` matches "
            "every metric)",
            "warning",
        ),
    }


def test_yaml_syntax_errors_and_unknown_kinds() -> None:
    linter = lint_texts([("bad.yaml", "a: [1,\n")])
    assert linter.problems[0].message.startswith("not valid YAML")
    linter = lint_texts([("k.yaml", "apiVersion: okra.mumo.co/v1alpha1\nkind: Cel\n")])
    assert [p.message.split(" (")[0] for p in linter.errors] == [
        "unknown kind 'Cel' in okra.mumo.co/v1alpha1"
    ]
    other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    assert lint_texts([("cm.yaml", other)]).problems == []


def _rules(schema: Any) -> list[str]:
    out: list[str] = []
    if isinstance(schema, dict):
        out += [r["rule"] for r in schema.get("x-kubernetes-validations") or []]
        for v in schema.values():
            out += _rules(v)
    elif isinstance(schema, list):
        for v in schema:
            out += _rules(v)
    return out


def test_every_crd_rule_is_in_the_subset_lint_evaluates() -> None:
    from okra_controllers.analysis.expr import compile_condition

    rules = sorted({r for m in CRD_MODELS for r in _rules(openapi_schema(m))})
    assert len(rules) >= 10
    for rule in rules:
        compile_condition(cel_to_expr(rule))  # raises if the translation is not a condition


@pytest.mark.parametrize(
    ("step", "ok"),
    [
        ({"setWeight": 10}, True),
        ({"pause": {}}, True),
        ({"setWeight": 10, "pause": {}}, False),
        ({}, False),
    ],
)
def test_the_step_rule_evaluates_like_the_apiserver(step: dict[str, Any], ok: bool) -> None:
    from okra_controllers.analysis.expr import evaluate_condition

    rule = next(r for r in _rules(openapi_schema(Cell)) if "setWeight" in r)
    assert evaluate_condition(cel_to_expr(rule), step) is ok


@pytest.mark.parametrize(
    ("stages", "ok"),
    [
        ([{"name": "a"}, {"name": "b"}], True),
        ([{"name": "a"}, {"name": "b"}, {"name": "a"}], False),
    ],
)
def test_the_unique_names_rule_evaluates_like_the_apiserver(
    stages: list[dict[str, Any]], ok: bool
) -> None:
    from okra_controllers.analysis.expr import evaluate_condition
    from okra_controllers.api.v1alpha1.progressiverollout import ProgressiveRollout

    rule = next(r for r in _rules(openapi_schema(ProgressiveRollout)) if "t.name == s.name" in r)
    assert evaluate_condition(cel_to_expr(rule), {"stages": stages}) is ok


def test_completion_covers_every_command_and_knows_cell_arguments() -> None:
    t = tree(build_parser())
    assert {"get", "status", "plan", "lint", "pause", "promote", "terminate"} <= set(t[""][0])
    assert [t[c][1] for c in ("get cell", "status", "promote", "lint", "get analysisrun")] == [
        True,
        True,
        True,
        False,
        False,
    ]
    script = bash(build_parser(), "okra")
    proc = subprocess.run(
        [
            "bash",
            "-c",
            script + '\nCOMP_WORDS=(okra get c); COMP_CWORD=2; _okra; echo "${COMPREPLY[*]}"',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.split() == ["cell", "cells", "cl", "cluster", "clusters"]


def test_status_verdict() -> None:
    def cell(health: str, observed: int = 2) -> dict[str, Any]:
        phase = {"Healthy": "Completed", "Degraded": "Error"}.get(health, "Migrating")
        return {
            "metadata": {"generation": 2},
            "status": {"phase": phase, "health": health, "observedGeneration": observed},
        }

    assert verdict(cell("Healthy")) == 0
    assert verdict(cell("Degraded")) == 1
    assert verdict(cell("Paused")) is None
    assert verdict(cell("Progressing")) is None
    assert verdict(cell("Healthy", observed=1)) is None


def test_analysis_run_view_lists_every_measurement() -> None:
    now = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.UTC)
    run = {
        "metadata": {"name": "r", "namespace": "ns", "labels": {"okra.mumo.co/cell": "web"}},
        "spec": {"metrics": [{"name": "rate"}, {"name": "errors"}]},
        "status": {
            "phase": "Failed",
            "message": "metric rate failed",
            "metricResults": [
                {
                    "name": "rate",
                    "phase": "Failed",
                    "count": 2,
                    "successful": 1,
                    "failed": 1,
                    "measurements": [
                        {
                            "phase": "Successful",
                            "value": "0.99",
                            "finishedAt": "2026-01-01T11:59:00Z",
                        },
                        {"phase": "Failed", "value": "0.42", "finishedAt": "2026-01-01T11:59:30Z"},
                    ],
                }
            ],
        },
    }
    out = render_analysis_run(run, now)
    assert "Phase:    Failed  metric rate failed" in out
    assert "Metric rate: Failed  count 2, successful 1, failed 1" in out
    assert "Metric errors: Pending, no measurement yet" in out
    assert [line.split()[-2:] for line in out.splitlines() if "ago" in line] == [
        ["Successful", "0.99"],
        ["Failed", "0.42"],
    ]


def test_help_imports_no_client_and_no_models() -> None:
    """`okra --help` and completion stay fast: they never import the Kubernetes client,
    pydantic or the controllers (what `bench/cli/startup.py` times)."""
    code = (
        "import sys\nfrom okra_controllers.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "import json\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = set(json.loads(proc.stderr.strip().splitlines()[-1]))
    heavy = {"kubernetes_asyncio", "pydantic", "aiohttp", "yaml", "okra_controllers.cell"}
    assert modules & heavy == set()
    assert "asyncio" not in modules


JUDGED = """\
apiVersion: okra.mumo.co/v1alpha1
kind: {kind}
metadata:
  name: judged
spec:
  judgment:
    groupWeights: {{latncy: 60}}
  metrics:
  - name: p99
    judge: {{groups: [latency], effectSize: {{measure: cles, allowedIncrease: 1.2}}}}
    provider:
      prometheus: {{address: "http://p", query: 'x{{v="{{{{judge.version}}}}"}}'}}
"""


@pytest.mark.parametrize(
    ("kind", "level"), [("AnalysisTemplate", "warning"), ("AnalysisRun", "error")]
)
def test_judge_settings_a_run_would_refuse_are_reported(kind: str, level: str) -> None:
    linter = lint_texts([("judged.yaml", JUDGED.format(kind=kind))])
    got = [(p.level, p.path, p.message) for p in linter.problems]
    assert got == [
        (
            level,
            "spec",
            "spec.metrics[0] (p99).judge.effectSize.allowedIncrease: a CLES is a share between "
            "0 and 1, not 1.2",
        ),
        (
            level,
            "spec",
            "spec.judgment.groupWeights.latncy: no judged metric is in this group (judge.groups)",
        ),
    ]
