"""Helpers for the ProgressiveRollout controller on a real kube-apiserver with Argo CD's CRDs.

Argo CD's controllers do not run here (the e2e suite runs the real ones): `AppController`
plays the part of Argo CD's application-controller on the Application objects — it takes an
`operation`, records it in `status.operationState` (Running, then Succeeded at the revision)
and compares the Application afterwards — so the controller's reads and writes go through the
real API server and the real Argo CD schema.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from okra_controllers.analysis.run_controller import setup as setup_analysisruns
from okra_controllers.api.kinds import APPLICATION
from okra_controllers.aws.config import AwsConfig
from okra_controllers.progressiverollout.controller import setup
from okra_controllers.settings import Settings
from okra_runtime import Client, Manager, ManagerOptions
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.priority import PriorityGate
from okra_runtime.timeutil import rfc3339
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import find_argocd
from support import stop_manager

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def argo_crds(control_plane: ControlPlane) -> None:
    """Argo CD's CRDs (from the pinned Argo CD build) and okra's, on the session plane."""
    try:
        crds = find_argocd().crds
    except FileNotFoundError as e:
        pytest.skip(str(e))
    control_plane.install_crds([crds / "application-crd.yaml", crds / "applicationset-crd.yaml"])
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])


@contextlib.contextmanager
def argo_plane(name: str, ns: str, kinds: tuple[str, ...]) -> Iterator[ControlPlane]:
    """A plane of its own (no controller-manager) serving okra's kinds and Argo CD's `kinds`
    (`application`, `applicationset`, `appproject`: the CRDs of the Argo CD under test), with
    namespace `ns`; skipped when no Argo CD was built."""
    try:
        crds = find_argocd().crds
    except FileNotFoundError as e:
        pytest.skip(str(e))
    with ControlPlane(name=name, controller_manager=False) as cp:
        cp.install_crds([crds / f"{kind}-crd.yaml" for kind in kinds])
        cp.install_crds([REPO / "config" / "crd" / "bases"])
        cp.kubectl("create", "namespace", ns)
        yield cp


def cluster_secret(name: str, ns: str, labels: dict[str, str]) -> dict[str, Any]:
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": ns,
            "labels": {"argocd.argoproj.io/secret-type": "cluster", **labels},
        },
        "data": {
            "name": b64(name),
            "server": b64(f"https://{name}.example:6443"),
            "config": b64(json.dumps({"bearerToken": "t"})),
        },
    }


def appset(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "generators": [{"clusters": {}}],
            "template": {
                "metadata": {"name": "{{name}}-" + name},
                "spec": {
                    "project": "default",
                    "source": {
                        "repoURL": "file:///git/apps",
                        "path": "web",
                        "targetRevision": "HEAD",
                    },
                    "destination": {"server": "{{server}}", "namespace": "web"},
                },
            },
        },
    }


def application(
    name: str, ns: str, cluster: str, owner: dict[str, Any], revision: str
) -> dict[str, Any]:
    """An Application as the ApplicationSet controller generates it, already deployed at
    `revision` (as Argo CD reports it)."""
    now = rfc3339()
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": name,
            "namespace": ns,
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "ApplicationSet",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "project": "default",
            "source": {"repoURL": "file:///git/apps", "path": "web", "targetRevision": "HEAD"},
            "destination": {"server": f"https://{cluster}.example:6443", "namespace": "web"},
        },
        "status": {
            "sync": {"status": "Synced", "revision": revision},
            "health": {"status": "Healthy"},
            "reconciledAt": now,
            "history": [{"id": 0, "revision": revision, "deployedAt": now}],
        },
    }


class AppController:
    """Argo CD's application-controller, as far as the Application objects show it."""

    def __init__(self, client: Client, ns: str) -> None:
        self.client, self.ns = client, ns
        self.head: str | None = None
        self.synced: list[tuple[str, str]] = []  # (application, revision), in order
        self.running = True
        self.paused = False
        self.fail: set[str] = set()
        self.max_in_flight = 0

    async def _update(self, name: str, edit: Any) -> None:
        for _ in range(10):
            try:
                app = await self.client.get(APPLICATION, name, self.ns)
                edit(app)
                await self.client.update(app)
                return
            except ConflictError:
                continue

    async def commit(self, revision: str) -> None:
        """A new commit on the branch: every Application is compared against it."""
        self.head = revision
        for app in (await self.client.list(APPLICATION, self.ns)).items:

            def edit(a: dict[str, Any]) -> None:
                st = a.setdefault("status", {})
                deployed = (st.get("history") or [{}])[-1].get("revision")
                st["sync"] = {
                    "status": "Synced" if deployed == revision else "OutOfSync",
                    "revision": revision,
                }
                st["reconciledAt"] = rfc3339()

            await self._update(app["metadata"]["name"], edit)

    async def step(self) -> None:
        apps = (await self.client.list(APPLICATION, self.ns)).items
        in_flight = 0
        for app in apps:
            name = app["metadata"]["name"]
            op = app.get("operation")
            st = app.get("status") or {}
            ops = st.get("operationState") or {}
            if op is not None or ops.get("phase") == "Running":
                in_flight += 1
            if self.paused:
                continue
            if op is not None:

                def start(a: dict[str, Any], op: dict[str, Any] = op) -> None:
                    a.pop("operation", None)
                    a.setdefault("status", {})["operationState"] = {
                        "operation": op,
                        "phase": "Running",
                        "startedAt": rfc3339(),
                        "message": "syncing",
                    }
                    a["status"]["health"] = {"status": "Progressing"}

                await self._update(name, start)
            elif ops.get("phase") == "Running":
                revision = ops["operation"]["sync"]["revision"]
                failed = name in self.fail

                def finish(
                    a: dict[str, Any], failed: bool = failed, revision: str = revision
                ) -> None:
                    s = a["status"]
                    s["operationState"].update(
                        phase="Failed" if failed else "Succeeded",
                        finishedAt=rfc3339(),
                        message="one or more objects failed to apply"
                        if failed
                        else "successfully synced",
                        syncResult={"revision": revision},
                    )
                    if not failed:
                        hist = s.get("history") or []
                        s["history"] = [
                            *hist,
                            {"id": len(hist), "revision": revision, "deployedAt": rfc3339()},
                        ]

                await self._update(name, finish)
                if not failed:
                    self.synced.append((name, revision))
            elif ops.get("finishedAt") and (st.get("reconciledAt") or "") <= ops["finishedAt"]:
                await asyncio.sleep(1.01)  # a comparison made after the sync, to the second

                def compare(a: dict[str, Any], name: str = name) -> None:
                    s = a["status"]
                    deployed = (s.get("history") or [{}])[-1].get("revision")
                    head = self.head or deployed
                    s["sync"] = {
                        "status": "Synced" if deployed == head else "OutOfSync",
                        "revision": head,
                    }
                    s["health"] = {"status": "Degraded" if name in self.fail else "Healthy"}
                    s["reconciledAt"] = rfc3339()

                await self._update(name, compare)
        self.max_in_flight = max(self.max_in_flight, in_flight)

    async def run(self) -> None:
        while self.running:
            with contextlib.suppress(NotFoundError):
                await self.step()
            await asyncio.sleep(0.2)


@asynccontextmanager
async def manager(
    client: Client,
    ns: str,
    *,
    analysis: bool = False,
    gate: PriorityGate | None = None,
    projects: bool = False,
) -> AsyncIterator[Manager]:
    """The ProgressiveRollout controller in-process (with the AnalysisRun controller when
    stages have analysis); `gate`: the manager's PriorityGate, to watch what it is told;
    `projects`: the plane serves AppProjects, and the controller reads them."""
    mgr = Manager(client, ManagerOptions(namespace=ns, metrics_address=None, probe_address=None))
    if gate is not None:
        mgr.priority = gate
    settings = Settings(
        namespace=ns,
        okra_namespace=ns,
        aws=AwsConfig(region="us-east-1"),
        concurrency=2,
        argocd_projects=projects,
    )
    setup(mgr, settings)
    if analysis:
        setup_analysisruns(mgr, settings)
    task = asyncio.create_task(mgr.start())
    try:
        yield mgr
    finally:
        await stop_manager(mgr, task)


class Hooks:
    """A local HTTP endpoint for webhooks and web metrics: records every call, answers
    `status` and `{"rate": rate}`."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.status = 200
        self.rate = 0.0
        self.url = ""

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else {}
        self.calls.append((request.path, body))
        if request.path == "/rate":
            return web.json_response({"rate": self.rate})
        return web.json_response({}, status=self.status)


@asynccontextmanager
async def hooks() -> AsyncIterator[Hooks]:
    h = Hooks()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", h.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    h.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
    try:
        yield h
    finally:
        await runner.cleanup()


@asynccontextmanager
async def argo(client: Client, ns: str) -> AsyncIterator[AppController]:
    ctl = AppController(client, ns)
    task = asyncio.create_task(ctl.run())
    try:
        yield ctl
    finally:
        ctl.running = False
        await asyncio.wait_for(task, 30)


CLUSTERS = {
    "euw1-a": {"area": "emea", "region": "eu-west-1"},
    "euw1-b": {"area": "emea", "region": "eu-west-1"},
    "euc1-a": {"area": "emea", "region": "eu-central-1"},
    "euc1-b": {"area": "emea", "region": "eu-central-1"},
}
OLD = "1" * 40
NEW = "2" * 40


@pytest.fixture
async def world(argo_crds: None, rt_client: Client, namespace: str) -> dict[str, Any]:
    """Four cluster Secrets, an ApplicationSet and its four Applications at OLD."""
    return {"appset": await seed_world(rt_client, namespace), "id": uuid.uuid4().hex[:6]}


async def seed_world(client: Client, ns: str) -> dict[str, Any]:
    """CLUSTERS' Secrets, the `web` ApplicationSet (returned) and its Applications at OLD."""
    for name, labels in CLUSTERS.items():
        await client.create(cluster_secret(name, ns, labels))
    owner = await client.create(appset("web", ns))
    for name in CLUSTERS:
        await client.create(application(f"{name}-web", ns, name, owner, OLD))
    return owner
