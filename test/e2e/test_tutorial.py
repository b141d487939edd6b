"""The tutorial's "On your clusters" part, run as written: docs/tutorial.md cannot rot.

Every command and manifest of that section is read out of the page and run, in the page's
order, against the local control plane and moto:

- the install command (`kubectl apply --server-side -k config/default`);
- okra-manager run as the installed Deployment would run it: its args and env, a token of the
  installed ServiceAccount (so only the installed RBAC applies), AWS through the counting proxy
  (so every call is checked against the IAM policy by the `env` fixture);
- every manifest, applied with kubectl; only the listener ARN, the metrics URL and the
  namespace are swapped for the test's own;
- two target groups per version stand in for two clusters: they carry the labels the page's
  AWSTargetGroupSet gives (the path from EKS through Argo CD to those target groups is
  the standard scenario's, test_demo_fleet.py);
- `okra ... get cell web` (without `--watch`, which never ends) and `okra ... promote web`.

A command in the section that this test does not know how to run fails it, so a new step in
the page gets a test or the page does not pass.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from installed import clean_env, local_flags, running_manager, service_account_kubeconfig
from okra_controllers.manager import EMULATOR_ENV
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.process import Process
from support import eventually

from .conftest import Env, Metrics, cell_status, wait_status
from .test_cell_canary import canary_total, weights_match_plan

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
TUTORIAL = REPO / "docs" / "tutorial.md"
SECTION = "## On your clusters"

_BLOCK = re.compile(r"^( *)```(sh|yaml)\n(.*?)^\1```", re.M | re.S)


def tutorial_blocks() -> list[tuple[str, str]]:
    """(language, body) of each code block of the section, in order, indentation removed."""
    text = TUTORIAL.read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end >= 0 else len(text)]
    return [
        (lang, "\n".join(line[len(indent) :] for line in body.splitlines()))
        for indent, lang, body in _BLOCK.findall(section)
    ]


def commands(body: str) -> list[list[str]]:
    return [
        shlex.split(line, comments=True)
        for line in body.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


class Page:
    """The section, split into what the test runs at each point of the rollout."""

    def __init__(self) -> None:
        self.install: list[list[str]] = []
        self.manifests: list[dict[str, Any]] = []
        self.watch: list[str] = []
        self.promote: list[str] = []
        unknown: list[str] = []
        for lang, body in tutorial_blocks():
            if lang == "yaml":
                self.manifests += [d for d in yaml.safe_load_all(body) if isinstance(d, dict)]
                continue
            for argv in commands(body):
                if argv[:2] == ["kubectl", "apply"]:
                    self.install.append(argv[1:])
                elif argv[0] == "okra" and "get" in argv and "--watch" in argv:
                    self.watch = [a for a in argv[1:] if a != "--watch"]
                elif argv[0] == "okra" and "promote" in argv:
                    self.promote = argv[1:]
                else:
                    unknown.append(shlex.join(argv))
        assert not unknown, f"{TUTORIAL.name} has commands this test does not run: {unknown}"
        assert self.install, "the tutorial no longer says how to install okra"
        assert self.watch, "the tutorial no longer says how to watch the Cell"
        assert self.promote, "the tutorial no longer says how to promote the canary"
        kinds = [m["kind"] for m in self.manifests]
        assert kinds.count("Cell") == 1, kinds

    @property
    def cell(self) -> dict[str, Any]:
        return next(m for m in self.manifests if m["kind"] == "Cell")

    @property
    def namespace(self) -> str:
        namespace: str = self.cell["metadata"]["namespace"]
        return namespace

    def localized(self, env: Env, metrics_url: str) -> list[dict[str, Any]]:
        """The manifests in the test's namespace, on the test's listener and metrics server."""
        listener = self.cell["spec"]["ingress"]["awsApplicationLoadBalancer"]["listenerARN"]
        text = json.dumps(self.manifests)
        text = text.replace(listener, env.alb.listener_arn)
        text = re.sub(r"http://metrics\.monitoring\.svc(:\d+)?", metrics_url, text)
        docs: list[dict[str, Any]] = json.loads(text)
        for d in docs:
            assert d["metadata"].get("namespace") == self.namespace, d["metadata"]
            d["metadata"]["namespace"] = env.namespace
        return docs

    def cli(self, argv: list[str], env: Env) -> list[str]:
        """An okra command of the page with the test's namespace."""
        return [env.namespace if a == self.namespace else a for a in argv]


@pytest.fixture(scope="module")
def page() -> Page:
    return Page()


@pytest.fixture
def installed(control_plane: ControlPlane, page: Page) -> Iterator[ControlPlane]:
    for args in page.install:
        # Relative paths in the page are relative to the repository's top.
        control_plane.kubectl(
            *[str(REPO / a) if (REPO / a).exists() and "/" in a else a for a in args]
        )
    try:
        yield control_plane
    finally:
        for part in ("rbac", "manager"):  # not the CRDs: other tests on this plane use them
            control_plane.kubectl(
                "delete", "--ignore-not-found", "--timeout=90s", "-k", str(REPO / "config" / part)
            )


@pytest.fixture
def installed_manager(installed: ControlPlane, env: Env, tmp_path: Path) -> Iterator[Process]:
    """okra-manager with the installed Deployment's args, env and ServiceAccount."""
    deploy = json.loads(
        installed.kubectl(
            "get", "deployment", "okra-controller-manager", "-n", "okra-system", "-o", "json"
        ).stdout
    )
    pod = deploy["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    kubeconfig = service_account_kubeconfig(
        installed, pod["serviceAccountName"], "okra-system", tmp_path / "sa.kubeconfig"
    )
    flags, probes = local_flags(
        [
            *container["args"],
            "--kubeconfig",
            str(kubeconfig),
            "--okra-namespace=okra-system",  # the pod's namespace, read from its token mount
            f"--aws-endpoint-url={env.proxy.endpoint_url}",  # moto stands in for AWS
        ]
    )
    environ = clean_env()
    environ.update({e["name"]: e["value"] for e in container.get("env", []) if "value" in e})
    environ.update(EMULATOR_ENV)  # in a pod: IRSA or EKS Pod Identity
    command = [sys.executable, "-m", "okra_controllers.manager"]
    with running_manager(command, flags, probes, tmp_path / "okra-manager.log", environ) as m:
        yield m


async def okra(cp: ControlPlane, *argv: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "okra_controllers.cli",
        "--kubeconfig",
        str(cp.kubeconfig()),
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.timeout(600)
async def test_the_tutorial_on_a_cluster(
    page: Page,
    installed: ControlPlane,
    installed_manager: Process,
    env: Env,
    metrics: Metrics,
    rt_client: Client,
) -> None:
    cp, ns = installed, env.namespace
    metrics.rates = {"v1": 0.01, "v2": 0.01}
    for doc in page.localized(env, metrics.url):
        applied = cp.kubectl("apply", "--server-side", "-f", "-", input_text=json.dumps(doc))
        assert applied.returncode == 0, applied.stderr

    # The clusters of v1 (their target groups, as the AWSTargetGroupSet labels them).
    for name in ("web-1-v1", "web-2-v1"):
        await env.target_group(name, "v1")
    await wait_status(rt_client, ns, lambda s: s.get("health") == "Healthy", within=90)
    assert await env.rule_weights() == {"web-1-v1": 50, "web-2-v1": 50}
    code, out, err = await okra(cp, *page.cli(page.watch, env))
    assert code == 0, err
    assert "web" in out
    assert "Healthy" in out

    # Two clusters of v2: the canary stops at 20% until promoted.
    for name in ("web-1-v2", "web-2-v2"):
        await env.target_group(name, "v2")
    st = await wait_status(rt_client, ns, lambda s: s.get("health") == "Paused", within=90)
    await weights_match_plan(env, st)
    assert canary_total(await env.rule_weights(), "v2") == 20
    assert "until promoted" in st["message"]
    code, out, err = await okra(cp, *page.cli(page.watch, env))
    assert code == 0, err
    assert "Paused" in out

    code, out, err = await okra(cp, *page.cli(page.promote, env))
    assert code == 0, err
    # The analysis, 50% for 10 s, then v2 is the stable version at 100%: every total read
    # back from AWS on the way.
    totals: list[int] = []

    async def v2_stable() -> bool:
        total = canary_total(await env.rule_weights(), "v2")
        if not totals or totals[-1] != total:
            totals.append(total)
        st = await cell_status(rt_client, ns)
        return bool(st.get("stableVersion") == "v2" and st.get("health") == "Healthy")

    assert await eventually(v2_stable, within=120, interval=0.2), (
        totals,
        await cell_status(rt_client, ns),
        installed_manager.tail(),
    )
    assert await env.rule_weights() == {"web-1-v2": 50, "web-2-v2": 50}
    assert [t for t in totals if t not in (20, 50, 100)] == [], totals
    assert 50 in totals, totals
    runs = json.loads(cp.kubectl("get", "analysisruns", "-n", ns, "-o", "json").stdout)["items"]
    assert [r["status"]["phase"] for r in runs] == ["Successful"]
    assert installed_manager.running(), "okra-manager exited"
