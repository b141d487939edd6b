"""Argo Rollouts' templates (test/fixtures/argo-rollouts-templates) applied to a real
kube-apiserver with okra's CRDs, as `kubectl apply` sends them: the ones `okra lint` accepts
the server accepts too (among them `interval: "{{args.analysis-interval}}"` and
`failureLimit: "{{args.failure-limit}}"`, which the CRD refused before), and the ones it
refuses the server refuses, naming the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from okra_testkit.envtest import ControlPlane
from unit.test_argo_rollouts_templates import ACCEPTED, FIXTURES, REFUSED

REPO = Path(__file__).resolve().parents[3]

# What the server's refusal names, where it is the field (a snippet that is not valid YAML
# or has no name is refused by kubectl itself).
SERVER_SAYS = {
    "docs--features--analysis--1": "spec.args[1].value",
    "docs--analysis--prometheus--2": "rangeQuery",
    "docs--analysis--prometheus--4": "basicAuth",
    "docs--analysis--web--1": "authentication",
    "docs--analysis--graphite--1": "graphite",
    "test--e2e--functional--analysistemplate-sleep-job--1": "job",
}


@pytest.fixture(scope="module")
def okra_crds(control_plane: ControlPlane) -> list[str]:
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])


def apply(control_plane: ControlPlane, namespace: str, stem: str) -> tuple[int, str]:
    """`kubectl apply --dry-run=server` of the fixture, in the test's namespace (one names its
    own, argo-examples: it is moved, nothing else changes)."""
    text = (FIXTURES / f"{stem}.yaml").read_text(encoding="utf-8")
    text = re.sub(r"^(  namespace:) .*$", rf"\1 {namespace}", text, flags=re.M)
    out = control_plane.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", input_text=text, check=False
    )
    return out.returncode, out.stderr


def test_the_server_agrees_with_lint(
    control_plane: ControlPlane, okra_crds: list[str], namespace: str
) -> None:
    accepted = {s: apply(control_plane, namespace, s) for s in sorted(ACCEPTED)}
    assert {s: r for s, r in accepted.items() if r[0] != 0} == {}
    refused = {s: apply(control_plane, namespace, s) for s in sorted(REFUSED)}
    assert [s for s, r in refused.items() if r[0] == 0] == []
    for stem, words in SERVER_SAYS.items():
        assert words in refused[stem][1], refused[stem][1]
