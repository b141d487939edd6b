"""Shared fixtures: real servers, started once per xdist worker.

- `control_plane`: a session-scoped kube-apiserver + etcd + kube-controller-manager.
- `workload_plane`: a second, independent control plane (started on first use).
- `kube` / `kube_as`: kubernetes-asyncio clients for those servers.
- `namespace`: a fresh namespace per test, deleted afterwards (okra's finalizers taken off
  its objects: the managers that would remove them have stopped by then).
- `moto`: a moto server, reset for each test module, reached over HTTP through aiobotocore.
- `logs`: every log line of the test (structlog and stdlib), as JSON at debug level;
  the one way tests assert on logs, so that it works in any order and any subset.
- `argocd`: a real Argo CD (repo-server, application-controller, applicationset-controller,
  Redis, a local git repository) installed into `control_plane` (started on first use).
- `fleet`: further workload control planes by name, started on first use.

Modules run longest kind first, the Argo CD ones on one worker (test/scheduling.py).
`OKRA_TEST_SHUFFLE=<seed>` runs the modules, and the tests within each, in a random
order fixed by the seed (tests must pass in any order; this is how that is checked).

Tests under test/unit, test/integration, test/e2e, test/reliability and test/node get the
matching marker.
After the whole run, the controller process fails the session if any server
process started by this run is still alive, and, under `CI=true`, if any test was skipped
for a reason not in `CI_SKIPS_ALLOWED` (a test skipped for a missing tool would otherwise
pass CI without testing: CI installs what the tests need).
"""

from __future__ import annotations

import logging
import os
import random
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog
from hypothesis import settings as hypothesis_settings
from kubernetes_asyncio import client

from compat import in_subset
from okra_runtime.client import Client
from okra_runtime.logging import configure_logging
from okra_runtime.metrics import REGISTRY
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCD
from okra_testkit.envtest.leaks import leftover_servers
from support import LogCapture, api_client, fresh_namespace

pytest_plugins = ["scheduling"]  # how xdist hands modules to workers

# Hypothesis's per-example deadline is a wall-clock bound: on a loaded machine it fails tests
# whose logic is right. Timings belong in bench/, so no example has a deadline here.
hypothesis_settings.register_profile("okra", deadline=None)
hypothesis_settings.load_profile("okra")

RUN_ENV = "OKRA_TEST_RUN"

CI_SKIPS_ALLOWED: dict[str, str] = {}
"""Skip reasons a CI run (`CI=true`) may show, each with why it is not a gap in what CI
tests. None today: every tool a test needs, CI installs (.ci/run, the Makefile's targets),
and a test that can check something wherever it runs does not skip."""

_skipped_in_ci: list[tuple[str, str]] = []  # (test id, reason), on the controller


def skip_reason(report: pytest.CollectReport | pytest.TestReport) -> str:
    """The reason a skipped test or module gave (without pytest's "Skipped: ")."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def unlisted_skips(skips: list[tuple[str, str]], allowed: dict[str, str]) -> list[tuple[str, str]]:
    """The (test id, reason) skips whose reason is not allowed."""
    return [(test, reason) for test, reason in skips if reason not in allowed]


def _note_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    # xdist hands its workers' reports to the controller's hooks: every skip is seen here
    if report.skipped and not hasattr(report, "wasxfail") and os.environ.get("CI") == "true":
        _skipped_in_ci.append((report.nodeid, skip_reason(report)))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _note_skip(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    _note_skip(report)  # a module skipped as a whole


def pytest_configure(config: pytest.Config) -> None:
    # Set before xdist spawns workers, so every server of this run inherits it.
    if not hasattr(config, "workerinput"):
        os.environ.setdefault(RUN_ENV, uuid.uuid4().hex)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seed = os.environ.get("OKRA_TEST_SHUFFLE")
    if seed:
        # Modules in a random order, tests in a random order within each (as
        # pytest-randomly does), so that module-scoped servers start once per module.
        rng = random.Random(seed)
        modules: dict[str, list[pytest.Item]] = {}
        for item in items:
            modules.setdefault(str(item.path), []).append(item)
        order = list(modules.values())
        rng.shuffle(order)
        for group in order:
            rng.shuffle(group)
        items[:] = [item for group in order for item in group]
    for item in items:
        parts = Path(str(item.path)).parts
        for kind in ("unit", "integration", "e2e", "reliability", "node"):
            if kind in parts:
                item.add_marker(getattr(pytest.mark, kind))
        if in_subset(item.nodeid):
            item.add_marker(pytest.mark.compat)


@pytest.hookimpl(trylast=True)  # after session fixtures are torn down
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return  # workers stop their own servers; the controller checks after them
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    assert reporter is not None
    say = reporter.write_line
    left = leftover_servers(RUN_ENV, os.environ[RUN_ENV], ("okra_controllers.manager",))
    if left:
        say(f"FAILED: server processes left running after the suite: {left}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    unlisted = unlisted_skips(_skipped_in_ci, CI_SKIPS_ALLOWED)
    if unlisted:
        say("")  # end the line of progress dots
    for test, reason in unlisted:
        say(f"FAILED: skipped under CI=true: {test}: {reason}", red=True)
    if unlisted:
        say("(install what it needs in .ci/run, or allow the reason in CI_SKIPS_ALLOWED)")
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def write_loops() -> float:
    """Objects the write-loop guards of this process have found looping, so far."""
    return sum(
        sample.value
        for family in REGISTRY.collect()
        if family.name == "okra_runtime_hot_loop_objects"
        for sample in family.samples
    )


@pytest.fixture(autouse=True)
def no_write_loops(request: pytest.FixtureRequest) -> Iterator[None]:
    """A manager that rewrites an object without pause fails the test it runs in (the
    managers run in this process; okra-manager processes are checked by their log, see
    e2e's OkraManager): a controller that never reaches a fixed point is a defect, even
    where the test's own assertions hold."""
    before = write_loops()
    yield
    if request.node.get_closest_marker("write_loops_expected") is None:
        assert write_loops() == before, "a manager in this test rewrote an object without pause"


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    with ControlPlane(name="mgmt") as cp:
        yield cp


@pytest.fixture(scope="session")
def workload_plane() -> Iterator[ControlPlane]:
    with ControlPlane(name="workload") as cp:
        yield cp


@pytest.fixture
async def kube(control_plane: ControlPlane) -> AsyncIterator[client.ApiClient]:
    api = await api_client(control_plane)
    async with api:
        yield api


@pytest.fixture
async def namespace(kube: client.ApiClient) -> AsyncIterator[str]:
    async with fresh_namespace(kube) as name:
        yield name


@pytest.fixture
async def rt_client(control_plane: ControlPlane) -> AsyncIterator[Client]:
    """An okra_runtime Client (admin) for the session control plane."""
    c = await Client.from_kubeconfig(control_plane.kubeconfig())
    async with c:
        yield c


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    with MotoServer() as server:
        yield server


@pytest.fixture(scope="module")
def moto(moto_server: MotoServer) -> MotoServer:
    """The worker's moto server, reset: no AWS resource of another module is left in it
    (one server per worker; starting one per module cost about 2 s of CPU each time)."""
    moto_server.reset()
    return moto_server


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    """Every structlog line (JSON, debug and up) and every stdlib log record of the
    test, into one buffer. structlog is configured afresh for the test and reset
    after it, so what an earlier test did to logging never matters."""
    cap = LogCapture()
    before = structlog.get_config()
    configure_logging("json", "debug", stream=cap.stream)
    handler = logging.StreamHandler(cap.stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield cap
    finally:
        root.removeHandler(handler)
        structlog.configure(**before)


class Fleet:
    """Workload control planes by name, each started on first use and kept for the session
    (no kube-controller-manager: nothing is garbage-collected in a workload cluster)."""

    def __init__(self) -> None:
        self.planes: dict[str, ControlPlane] = {}

    def __call__(self, name: str) -> ControlPlane:
        if name not in self.planes:
            cp = ControlPlane(name=name, controller_manager=False)
            cp.start()
            self.planes[name] = cp
        return self.planes[name]

    def stop(self) -> None:
        for cp in self.planes.values():
            cp.stop()
        self.planes.clear()


@pytest.fixture(scope="session")
def fleet() -> Iterator[Fleet]:
    f = Fleet()
    try:
        yield f
    finally:
        f.stop()


@pytest.fixture(scope="session")
def argocd(control_plane: ControlPlane, fleet: Fleet) -> Iterator[ArgoCD]:
    # `fleet` first, so that Argo CD stops before the workload planes it watches: a
    # kube-apiserver told to stop while Argo CD holds watches on it takes over 10 s
    with ArgoCD(control_plane) as a:
        yield a
