"""Seed 000's Check (`spec.analysis.{interval, query, max}`) and okra-manager's default
metrics provider (issue 41 §2): a Check, or a system Cell's check, that names no provider
runs on the default; without one, the Check says exactly what to add."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from okra_controllers.analysis.check_controller import NO_PROVIDER, CheckError, render_provider
from okra_controllers.api.v1alpha1.analysis import Check
from okra_controllers.cli.lint import lint_texts
from okra_controllers.manager import default_provider
from unit.test_cell_system_plan import rolled_out

PROMETHEUS = default_provider('{"prometheus": {"address": "http://prometheus:9090"}}')
SEED_CHECK = """
apiVersion: okra.mumo.co/v1alpha1
kind: Check
metadata:
  name: mysystem-dd-mycluster-web-1-v2
  annotations:
    analysis-hash: somehash
spec:
  analysis:
    interval: 10s
    query: |
      errors{cluster="mycluster-web-1-v2"}
    max: 0.1
"""


def test_seed_000s_check_is_read_as_the_specs_own_fields() -> None:
    check = Check.model_validate(yaml.safe_load(SEED_CHECK))
    spec = check.spec
    assert (spec.interval, spec.max, spec.provider) == ("10s", 0.1, None)
    assert spec.query == 'errors{cluster="mycluster-web-1-v2"}\n'
    assert lint_texts([("check.yaml", SEED_CHECK)]).errors == []


def test_a_check_with_no_provider_runs_its_query_on_the_default() -> None:
    spec = Check.model_validate(yaml.safe_load(SEED_CHECK)).spec
    provider = render_provider(spec, PROMETHEUS)
    assert provider.prometheus is not None
    assert provider.prometheus.address == "http://prometheus:9090"
    assert provider.prometheus.query == 'errors{cluster="mycluster-web-1-v2"}\n'


def test_without_a_default_the_check_says_what_to_add() -> None:
    spec = Check.model_validate(yaml.safe_load(SEED_CHECK)).spec
    with pytest.raises(CheckError) as e:
        render_provider(spec, None)
    assert str(e.value) == NO_PROVIDER
    assert "add spec.provider" in NO_PROVIDER
    assert "--default-metrics-provider" in NO_PROVIDER


def test_a_query_for_a_provider_that_takes_none_is_refused_by_name() -> None:
    spec = Check.model_validate(yaml.safe_load(SEED_CHECK)).spec
    web = default_provider('{"web": {"url": "http://x/rate"}}')
    with pytest.raises(CheckError, match="okra-manager's default provider"):
        render_provider(spec, web)


def test_both_spellings_at_once_are_refused() -> None:
    doc: dict[str, Any] = yaml.safe_load(SEED_CHECK)
    doc["spec"]["max"] = 0.2
    errors = lint_texts([("check.yaml", yaml.safe_dump(doc))]).errors
    assert any(p.message.startswith("spec.max beside spec.analysis") for p in errors), errors


@pytest.mark.parametrize(
    ("flag", "said"),
    [('{"prometheus": 5}', "prometheus"), ("not json", "Invalid JSON"), ('{"nope": {}}', "nope")],
)
def test_a_bad_default_provider_flag_says_what_is_wrong(flag: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        default_provider(flag)
    assert default_provider("") is None


def test_a_system_cells_check_with_no_provider_becomes_a_check_with_its_query() -> None:
    check = {
        "name": "dd",
        "analysis": {"query": 'errors{cluster="{{.Vars.eksClusterName}}"}', "max": 0.1},
    }
    app = {
        "name": "web",
        "clusterSelector": {"matchEKSTags": {"role": "web"}},
        "alb": {
            "listenerARN": "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/sys/1/2",
            "forwardConfig": {"priority": 10, "targetGroup": {"arnFromLabel": "targetGroupARN"}},
            "updateStrategy": {"stepWeight": 50},
        },
        "checks": [check],
    }
    w = rolled_out([app])
    w.run(3)
    made = [c for p in w.history for c in p.checks]
    assert made, [a.message for a in w.status.applications or []]
    assert {c["spec"].get("query") for c in made} == {
        'errors{cluster="web-1-v2"}',
        'errors{cluster="web-2-v2"}',
    }
    assert all("provider" not in c["spec"] for c in made)


def test_a_var_no_query_refers_to_is_warned_about() -> None:
    """The Check controller's UnusedField Event, and okra lint, name a var the check's
    provider and query never use (a misspelt name reads as no name)."""
    doc = yaml.safe_load(SEED_CHECK)
    doc["spec"]["analysis"]["query"] = 'errors{cluster="{{.Vars.cluster}}"}'
    doc["spec"]["vars"] = {"cluster": "web-1", "clutser": "web-1"}
    linted = lint_texts([("check.yaml", yaml.safe_dump(doc))])
    assert linted.errors == []
    assert [(p.path, p.message) for p in linted.problems] == [
        (
            "spec.vars.clutser",
            "no {{.Vars.clutser}} in the check's provider or query refers to "
            "it, so it is not used: remove it, or correct the name where it is used",
        )
    ]


def test_the_default_interval_an_earlier_okra_stored_beside_analysis_warns() -> None:
    """A seed 000 Check stored while the schema defaulted spec.interval to 30s applies
    again (warned about); another interval beside spec.analysis is refused."""
    doc = yaml.safe_load(SEED_CHECK)
    doc["spec"]["interval"] = "30s"
    linted = lint_texts([("check.yaml", yaml.safe_dump(doc))])
    assert linted.errors == []
    assert [p.path for p in linted.problems] == ["spec.interval"]
    assert "spec.analysis.interval" in linted.problems[0].message
    doc["spec"]["interval"] = "15s"
    errors = lint_texts([("check.yaml", yaml.safe_dump(doc))]).errors
    assert [e.message.split(":")[0] for e in errors] == [
        "spec.interval beside spec.analysis "
        "(the original okra's spelling, read as the spec's own fields)"
    ]
