"""Deleting a ProgressiveRollout on a real kube-apiserver: the finalizer stays until the
Applications, as the API server holds them, show no sync of okra's pending. The manager is
not started, so its cache holds exactly what the test puts in it — the rollout, and none of
the Applications (a cache that lags behind the syncs this controller wrote as far as it can)
— and each pass is one `reconcile` with the interleaving written out."""

from __future__ import annotations

from typing import Any, cast

from integration.progressiverollout.harness import NEW
from integration.progressiverollout.test_controller import rollout
from okra_controllers.api.kinds import APPLICATION, PROGRESSIVE_ROLLOUT
from okra_controllers.progressiverollout.controller import (
    FINALIZER,
    ProgressiveRolloutReconciler,
    sync_operation,
)
from okra_controllers.progressiverollout.plan import Sync
from okra_runtime import Client
from okra_runtime.errors import NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.manager import Manager
from okra_runtime.reconcile import Request
from okra_runtime.timeutil import rfc3339

APPS = ("euc1-a-web", "euw1-a-web")


def operation(app: str, n: int) -> dict[str, Any]:
    return sync_operation(Sync(app, NEW, f"2222222-test-{n}", "rollout"))


class WritesBeforePatching:
    """The reconciler's client, with one write of another's made just before the reconciler's
    first patch of `application`: what happens when a write lands between its read and its
    write."""

    def __init__(self, client: Client, application: str, write: dict[str, Any]) -> None:
        self.client, self.application, self.write = client, application, write
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    async def patch(self, gvk: GVK, name: str, patch: Any, **kw: Any) -> dict[str, Any]:
        if name == self.application and not self.fired:
            self.fired = True
            await self.client.patch(gvk, name, self.write, namespace=kw.get("namespace"))
        return await self.client.patch(gvk, name, patch, **kw)


async def deleted_rollout(
    rt_client: Client, ns: str, operations: dict[str, dict[str, Any]]
) -> tuple[ProgressiveRolloutReconciler, dict[str, Any]]:
    """The rollout with okra's finalizer, okra's syncs pending on `operations`' Applications,
    then deleted; a reconciler whose cache holds the rollout and nothing else."""
    obj = rollout(ns)
    obj["metadata"]["finalizers"] = [FINALIZER]
    await rt_client.create(obj)
    for app, op in operations.items():
        await rt_client.patch(APPLICATION, app, {"operation": op}, namespace=ns)
    await rt_client.delete(PROGRESSIVE_ROLLOUT, "web", ns)
    mgr = Manager(rt_client, namespace=ns, metrics_address=None, probe_address=None)
    rec = ProgressiveRolloutReconciler(mgr, mgr.event_recorder("progressiverollout-test"))
    live = await rt_client.get(PROGRESSIVE_ROLLOUT, "web", ns)
    rec.rollouts.upsert(live)
    return rec, live


async def pending(rt_client: Client, ns: str) -> dict[str, Any]:
    apps = (await rt_client.list(APPLICATION, ns)).items
    return {a["metadata"]["name"]: a["operation"] for a in apps if a.get("operation")}


async def refresh(rec: ProgressiveRolloutReconciler, rt_client: Client, ns: str) -> bool:
    """Put the rollout as the API server holds it into the cache; False once it is gone."""
    try:
        rec.rollouts.upsert(await rt_client.get(PROGRESSIVE_ROLLOUT, "web", ns))
    except NotFoundError:
        return False
    return True


def deleting(obj: dict[str, Any]) -> dict[str, Any]:
    conds = (obj.get("status") or {}).get("conditions") or []
    return next(c for c in conds if c["type"] == "Deleting")


async def test_a_cancel_refused_by_a_conflict_keeps_the_finalizer_and_is_retried(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    ns = namespace
    rec, _ = await deleted_rollout(rt_client, ns, {a: operation(a, 1) for a in APPS})
    # Between the finalizer's read and its cancel of euw1-a-web, a newer sync of okra's
    # lands there: the json patch's test refuses the cancel.
    rec.client = cast(
        Client,
        WritesBeforePatching(rt_client, "euw1-a-web", {"operation": operation("euw1-a-web", 2)}),
    )
    await rec.reconcile(Request("web", ns))

    obj = await rt_client.get(PROGRESSIVE_ROLLOUT, "web", ns)
    assert FINALIZER in obj["metadata"]["finalizers"]  # not let go with a sync left behind
    assert list(await pending(rt_client, ns)) == ["euw1-a-web"]
    cond = deleting(obj)
    assert (cond["status"], cond["reason"]) == ("True", "WaitingForSyncs")
    assert cond["message"] == "cancelling okra's pending sync on euw1-a-web (retrying)"

    # The next pass reads again, cancels the newer sync, and lets the rollout go.
    assert await refresh(rec, rt_client, ns)
    await rec.reconcile(Request("web", ns))
    assert await pending(rt_client, ns) == {}
    assert not await refresh(rec, rt_client, ns)


async def test_a_sync_argo_cd_is_running_is_waited_for(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    ns = namespace
    running = operation("euw1-a-web", 1)
    rec, _ = await deleted_rollout(rt_client, ns, {a: operation(a, 1) for a in APPS})
    app = await rt_client.get(APPLICATION, "euw1-a-web", ns)
    app["status"]["operationState"] = {
        "operation": running,
        "phase": "Running",
        "startedAt": rfc3339(),
    }
    await rt_client.update(app)  # Argo CD started it (and keeps `operation` until it ends)

    await rec.reconcile(Request("web", ns))
    obj = await rt_client.get(PROGRESSIVE_ROLLOUT, "web", ns)
    assert FINALIZER in obj["metadata"]["finalizers"]
    assert list(await pending(rt_client, ns)) == ["euw1-a-web"]  # left to finish
    assert deleting(obj)["message"] == "okra's sync running in Argo CD on euw1-a-web"

    app = await rt_client.get(APPLICATION, "euw1-a-web", ns)
    del app["operation"]  # Argo CD finished it
    app["status"]["operationState"].update(phase="Succeeded", syncResult={"revision": NEW})
    await rt_client.update(app)
    assert await refresh(rec, rt_client, ns)
    await rec.reconcile(Request("web", ns))
    assert not await refresh(rec, rt_client, ns)
