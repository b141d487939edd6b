"""Every AnalysisTemplate and ClusterAnalysisTemplate in Argo Rollouts' docs/, examples/ and
test/e2e/ (test/fixtures/argo-rollouts-templates, as written, the group rewritten), applied to
okra: each is either accepted by `okra lint` and, fed results, reaches the verdict Argo reaches
(run through okra's own pipeline: flatten the templates with the caller's arguments, resolve
and substitute them, validate, judge each measurement, assess the run), or refused by
`okra lint` (the CRD's schema and rules) with a message naming the field.

The fixtures are regenerated from a fetched argo-rollouts checkout: each file's header names
its source; a new fixture must be listed in ACCEPTED or REFUSED.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_controllers.analysis import verdict
from okra_controllers.analysis.args import resolve_args, substitute
from okra_controllers.analysis.templates import flatten
from okra_controllers.analysis.validation import validate_metrics
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisTemplateSpec,
    Argument,
    Measurement,
    Metric,
    MetricResult,
)
from okra_controllers.cli.lint import lint_texts

FIXTURES = Path(__file__).parents[1] / "fixtures" / "argo-rollouts-templates"
T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
SECRETS = {
    "example-secret": {"secretUrl": "https://example.test/example.json"},
    "token-secret": {"apiToken": "t0k3n"},
    "oauth-secret": {"secret": "s3cr3t"},
}

# Refused: the fixture and a field the refusal names (okra has no job, graphite, influxdb,
# kayenta, newRelic, skywalking, wavefront or plugin provider, no Prometheus range query or
# basic auth, no web authentication; three doc snippets are not usable objects as written).
JOB = "provider.job: unknown field"
REFUSED: dict[str, str] = {
    "docs--analysis--graphite--1": "spec.metrics[0].provider.graphite: unknown field",
    "docs--analysis--influxdb--1": "spec.metrics[0].provider.influxdb: unknown field",
    "docs--analysis--kayenta--1": "spec.metrics[0].provider.kayenta: unknown field",
    "docs--analysis--newrelic--1": "spec.metrics[0].provider.newRelic: unknown field",
    "docs--analysis--prometheus--2": "provider.prometheus.rangeQuery: unknown field",
    "docs--analysis--prometheus--4": "provider.prometheus.authentication.basicAuth: unknown",
    "docs--analysis--skywalking--1": "spec.metrics[0].provider.skywalking: unknown field",
    "docs--analysis--wavefront--1": "spec.metrics[0].provider.wavefront: unknown field",
    "docs--analysis--web--1": "spec.metrics[0].provider.web.authentication: unknown field",
    # `value: 9090`: Argo's CRD refuses it too (an argument's value is a string)
    "docs--features--analysis--1": "spec.args[1].value: Input should be a valid string",
    # a fragment without metadata.name or web url
    "docs--features--analysis--3": "spec.metrics[0].provider.web.url: required field",
    # a fragment with `...` for the rest of the metric
    "docs--plugins--1": "not valid YAML",
    # `linkerd.io/inject: {{args.linkerd-enabled}}` unquoted is a YAML mapping key
    "examples--traffic-management--rollout-linkerd--1": "not valid YAML",
    "examples--analysis-templates--1": JOB,
    "examples--analysis-templates--2": JOB,
    "examples--cluster-analysis-templates--1": JOB,
    "examples--traffic-management--job--1": JOB,
    "test--e2e--expectedfailures--experiment-failed-analysis--1": JOB,
    "test--e2e--expectedfailures--malformed-analysistemplate--1": JOB,
    "test--e2e--expectedfailures--malformed-clusteranalysistemplate--1": JOB,
    "test--e2e--functional--analysistemplate-fail-multiple-job--1": JOB,
    "test--e2e--functional--analysistemplate-invalid-image-job--1": JOB,
    "test--e2e--functional--analysistemplate-long-running-job--1": JOB,
    "test--e2e--functional--analysistemplate-long-running-job-deadline--1": JOB,
    "test--e2e--functional--analysistemplate-multiple-job--1": JOB,
    "test--e2e--functional--analysistemplate-sleep-job--1": JOB,
    "test--e2e--functional--experiment-dry-run-analysis--1": JOB,
    "test--e2e--functional--experiment-measurement-retention-analysis--1": JOB,
    "test--e2e--functional--rollout-experiment-analysis--1": JOB,
}


@dataclass(frozen=True)
class Scenario:
    """Results fed to each metric in turn (a metric stops once it completes), then the run
    terminated or not; `argo` is the run's phase by Argo's rules."""

    what: str
    results: dict[str, list[Any]]
    argo: str
    args: dict[str, str] = field(default_factory=dict)
    terminate: bool = False
    with_: tuple[str, ...] = ()
    substituted: dict[str, Any] = field(default_factory=dict)
    """Fields of the first metric once substituted, as Argo substitutes them."""


def cw(*values: float) -> list[dict[str, Any]]:
    return [{"Id": "rate", "Values": list(values)}]


SVC = {"service-name": "checkout"}
HASHES = {**SVC, "stable-hash": "5b7d", "latest-hash": "6c8e"}
ACCEPTED: dict[str, list[Scenario]] = {
    "docs--analysis--cloudwatch--1": [
        Scenario("good", {"success-rate": [cw(*[0.001] * 5)] * 3}, "Successful", terminate=True),
        Scenario("4 bad of failureLimit 3", {"success-rate": [cw(*[0.02] * 5)] * 4}, "Failed"),
        Scenario("too few points", {"success-rate": [cw(0.001, 0.001)] * 4}, "Failed"),
    ],
    "docs--analysis--datadog--1": [
        Scenario("good", {"error-rate": [0.005, 0.01]}, "Successful", SVC, True),
        Scenario("bad", {"error-rate": [0.5] * 4}, "Failed", SVC),
    ],
    "docs--analysis--datadog--2": [
        Scenario("good", {"error-rate": [0.005]}, "Successful", SVC, True),
        Scenario("bad", {"error-rate": [0.5] * 4}, "Failed", SVC),
    ],
    "docs--analysis--datadog--3": [
        Scenario("no data is 0", {"error-rate": [None, 3.0]}, "Successful", SVC, True),
        Scenario("bad", {"error-rate": [12.0] * 4}, "Failed", SVC),
    ],
    "docs--analysis--datadog--4": [
        Scenario("good", {"error-rate": [None, 9.0]}, "Successful", SVC, True),
        Scenario("bad", {"error-rate": [50.0] * 4}, "Failed", SVC),
    ],
    "docs--analysis--datadog--5": [
        Scenario(
            "no restarts",
            {"kubernetes.containers.restarts": [0.0, None, 4.0]},
            "Successful",
            {"canary-hash": "abc", "service-name": "checkout"},
            True,
            substituted={
                "initial_delay": "60s",
                "failure_condition": "default(result, 0) > 4",
                "failure_limit": 0,
            },
        ),
        Scenario(
            "5 restarts",
            {"kubernetes.containers.restarts": [5.0]},
            "Failed",
            {"canary-hash": "abc", "service-name": "checkout"},
        ),
    ],
    "docs--analysis--prometheus--1": [
        Scenario("good", {"success-rate": [[0.99], [0.97]]}, "Successful", SVC, True),
        Scenario("bad", {"success-rate": [[0.5]] * 4}, "Failed", SVC),
        Scenario("no data, five times", {"success-rate": [[]] * 5}, "Error", SVC),
    ],
    "docs--analysis--prometheus--3": [
        Scenario("good", {"success-rate": [[0.99]]}, "Successful", SVC, True),
        Scenario("bad", {"success-rate": [[0.5]] * 4}, "Failed", SVC),
    ],
    "docs--features--analysis--2": [
        Scenario("ok", {"webmetric": ["true"]}, "Successful", HASHES),
        Scenario("not ok", {"webmetric": ["false"]}, "Failed", HASHES),
    ],
    "examples--appmesh--canary-rollout--1": [
        Scenario(
            "good", {"success-rate": [[0.995]]}, "Successful", {"envoy_cluster_name": "x"}, True
        ),
        Scenario("bad", {"success-rate": [[0.9]] * 4}, "Failed", {"envoy_cluster_name": "x"}),
    ],
    "examples--rollout-secret--1": [
        Scenario("it worked", {"webmetric": ["It worked!"]}, "Successful"),
        Scenario("it did not", {"webmetric": ["nope"]}, "Failed"),
    ],
    "test--e2e--analysis_test--1": [
        Scenario(
            "TestMultipleAnalysis: the two templates with the Rollout's arguments",
            {f"metric-{i}": [{"id": 1}] for i in range(1, 5)},
            "Successful",
            {"host": "api.github.com", "repo": "argoproj/argo-rollouts"},
            with_=("test--e2e--analysis_test--2",),
            substituted={
                "provider": {"web": {"url": "https://api.github.com/repos/argoproj/argo-rollouts"}}
            },
        ),
    ],
    "test--e2e--analysis_test--2": [
        Scenario(
            "alone, with the Rollout's host",
            {"metric-3": [{}], "metric-4": [{}]},
            "Successful",
            {"host": "api.github.com"},
            substituted={
                "provider": {"web": {"url": "https://api.github.com/repos/SHOULD-NOT-USE"}}
            },
        ),
    ],
    "test--e2e--functional--analysistemplate-web-background--1": [
        Scenario("version 1", {"web": [{"major": "1"}] * 3}, "Successful", terminate=True),
        Scenario("version 2", {"web": [{"major": "2"}]}, "Failed"),
    ],
    "test--e2e--functional--analysistemplate-web-background-inconclusive--1": [
        Scenario("neither condition, 4 times", {"web": [{"Status": 0}] * 4}, "Inconclusive"),
        Scenario(
            "neither condition, 3 times", {"web": [{"Status": 0}] * 3}, "Successful", terminate=True
        ),
    ],
    "test--e2e--functional--rollout-bg-analysis-withArgs--1": [
        Scenario(
            "it worked",
            {"webmetric": ["It worked!"] * 2},
            "Successful",
            {
                "failure-limit": "2",
                "analysis-interval": "10s",
                "inconclusive-limit": "2",
                "success-condition": "It worked!",
            },
            True,
            substituted={
                "interval": "10s",
                "initial_delay": "10s",
                "failure_limit": "2",
                "success_condition": 'result == "It worked!"',
            },
        ),
        Scenario(
            "3 failures of failureLimit 2",
            {"webmetric": ["nope"] * 3},
            "Failed",
            {
                "failure-limit": "2",
                "analysis-interval": "10s",
                "inconclusive-limit": "2",
                "success-condition": "It worked!",
            },
        ),
    ],
    "test--e2e--functional--rollout-secret--1": [
        Scenario(
            "count 2 reached",
            {"webmetric": ["It worked!"] * 2},
            "Successful",
            substituted={"count": "2", "interval": "5s"},
        ),
        Scenario("2 failures of failureLimit 1", {"webmetric": ["x", "x"]}, "Failed"),
        Scenario("1 failure of failureLimit 1", {"webmetric": ["x", "It worked!"]}, "Successful"),
    ],
    "test--e2e--functional--rollout-secret-withArgs--1": [
        Scenario(
            "count 3 reached",
            {"webmetric": ["It worked!"] * 3},
            "Successful",
            {
                "failure-limit": "2",
                "analysis-interval": "5s",
                "analysis-runs": "3",
                "inconclusive-limit": "2",
                "success-condition": "It worked!",
            },
            substituted={"count": "3", "interval": "5s", "initial_delay": "5s"},
        ),
        Scenario(
            "3 failures of failureLimit 2",
            {"webmetric": ["nope"] * 3},
            "Failed",
            {
                "failure-limit": "2",
                "analysis-interval": "5s",
                "analysis-runs": "3",
                "inconclusive-limit": "2",
                "success-condition": "It worked!",
            },
        ),
    ],
    "test--e2e--functional_test--1": [
        Scenario("version 1", {"web": [{"major": "1"}] * 2}, "Successful", terminate=True),
        Scenario("version 2", {"web": [{"major": "2"}]}, "Failed"),
    ],
}


def fixtures() -> list[str]:
    return sorted(p.stem for p in FIXTURES.glob("*.yaml"))


def text(stem: str) -> str:
    return (FIXTURES / f"{stem}.yaml").read_text(encoding="utf-8")


def test_every_fixture_is_judged_once() -> None:
    assert set(REFUSED).isdisjoint(ACCEPTED)
    assert sorted([*REFUSED, *ACCEPTED]) == fixtures()


def test_counts() -> None:
    """The figures of the closing note: 48 templates, 19 accepted, 29 refused."""
    assert (len(fixtures()), len(ACCEPTED), len(REFUSED)) == (48, 19, 29)


@functools.cache
def lint_errors() -> dict[str, list[str]]:
    """`okra lint` of every fixture at once: its errors by fixture."""
    out: dict[str, list[str]] = {stem: [] for stem in fixtures()}
    for p in lint_texts([(f"{stem}.yaml", text(stem)) for stem in fixtures()]).errors:
        out[p.file.removesuffix(".yaml")].append(str(p))
    return out


@pytest.mark.parametrize("stem", sorted(REFUSED))
def test_refused_with_a_message_naming_the_field(stem: str) -> None:
    errors = lint_errors()[stem]
    assert any(REFUSED[stem] in e for e in errors), errors


@pytest.mark.parametrize("stem", sorted(ACCEPTED))
def test_accepted_by_lint(stem: str) -> None:
    assert lint_errors()[stem] == []


async def _read_secret(namespace: str, name: str) -> dict[str, str]:
    return SECRETS[name]


def run(stems: list[str], s: Scenario) -> tuple[str, list[Metric]]:
    specs = [
        (stem, AnalysisTemplateSpec.model_validate(yaml.safe_load(text(stem))["spec"]))
        for stem in stems
    ]
    spec = flatten(specs, [Argument(name=k, value=v) for k, v in s.args.items()])
    values, _ = asyncio.run(resolve_args(spec.args or [], "default", _read_secret, None))
    metrics = [substitute(m, values) for m in spec.metrics]
    assert validate_metrics(metrics) == []
    assert verdict.rule_problems(metrics, spec.dry_run, spec.measurement_retention) == []
    results: dict[str, MetricResult] = {}
    for m in metrics:
        r = results[m.name] = MetricResult(name=m.name, phase="Running")
        for value in s.results[m.name]:
            phase, message = verdict.measurement_phase(m, value)
            r.measurements.append(
                Measurement(phase=phase, message=message, started_at=T0, finished_at=T0)
            )
            verdict.record(r, phase)
            if verdict.assess_metric(m, r.model_copy(deep=True), False) in verdict.COMPLETED:
                break
    dry = verdict.dry_run_names(metrics, spec.dry_run)
    return verdict.assess_run(metrics, results, s.terminate, dry, T0, T0).phase, metrics


@pytest.mark.parametrize(
    ("stem", "scenario"),
    [(stem, s) for stem, ss in sorted(ACCEPTED.items()) for s in ss],
    ids=[f"{stem}: {s.what}" for stem, ss in sorted(ACCEPTED.items()) for s in ss],
)
def test_accepted_reaches_argos_verdict(stem: str, scenario: Scenario) -> None:
    phase, metrics = run([stem, *scenario.with_], scenario)
    assert phase == scenario.argo
    first = metrics[0].model_dump(exclude_none=True)
    for key, want in scenario.substituted.items():
        got = first[key]
        if isinstance(want, dict):
            got = {k: {kk: got[k][kk] for kk in want[k]} for k in want}
        assert got == want, key
