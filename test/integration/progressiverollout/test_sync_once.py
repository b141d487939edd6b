"""A sync okra planned is written at most once, onto the Application it was planned from,
on a real kube-apiserver. The manager is not started, so its caches hold exactly what the
test puts in them, and each pass is one `reconcile` with the interleaving written out: the
cache moving on while a reconcile runs (the watch delivering okra's own earlier write, and
Argo CD taking the operation) must not turn a plan made from the older view into a second
write of the operation onto the newer one."""

from __future__ import annotations

from typing import Any

from integration.progressiverollout.harness import CLUSTERS, NEW
from integration.progressiverollout.test_controller import rollout
from okra_controllers.api.kinds import APPLICATION, APPLICATION_SET, PROGRESSIVE_ROLLOUT, SECRET
from okra_controllers.progressiverollout.controller import (
    SYNC_ID_INFO,
    ProgressiveRolloutReconciler,
)
from okra_runtime import Client
from okra_runtime.manager import Manager
from okra_runtime.metrics import REGISTRY
from okra_runtime.reconcile import Request
from okra_runtime.timeutil import rfc3339


async def cached(rec: ProgressiveRolloutReconciler, rt_client: Client, ns: str) -> None:
    """Every object the reconciler reads, as the API server holds it now, into its caches."""
    for gvk, store in (
        (PROGRESSIVE_ROLLOUT, rec.rollouts),
        (APPLICATION, rec.apps),
        (APPLICATION_SET, rec.appsets),
        (SECRET, rec.secrets),
    ):
        for obj in (await rt_client.list(gvk, ns)).items:
            store.upsert(obj)


def written(ns: str) -> float:
    labels = {"namespace": ns, "progressiverollout": "web", "reason": "rollout"}
    return REGISTRY.get_sample_value("okra_progressiverollout_syncs_total", labels) or 0.0


async def commit(rt_client: Client, ns: str, revision: str) -> None:
    """A new commit: Argo CD compares every Application against it (OutOfSync)."""
    for name in CLUSTERS:
        app = await rt_client.get(APPLICATION, f"{name}-web", ns)
        app["status"]["sync"] = {"status": "OutOfSync", "revision": revision}
        app["status"]["reconciledAt"] = rfc3339()
        await rt_client.update(app)


async def start(rt_client: Client, ns: str, name: str) -> None:
    """Argo CD's application-controller takes the pending operation and runs it."""
    app = await rt_client.get(APPLICATION, name, ns)
    op = app.pop("operation")
    app["status"]["operationState"] = {"operation": op, "phase": "Running", "startedAt": rfc3339()}
    await rt_client.update(app)


async def test_a_sync_planned_from_an_older_view_is_not_written_onto_a_newer_one(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    ns = namespace
    mgr = Manager(rt_client, namespace=ns, metrics_address=None, probe_address=None)
    rec = ProgressiveRolloutReconciler(mgr, mgr.event_recorder("progressiverollout-test"))
    await rt_client.create(rollout(ns))
    await cached(rec, rt_client, ns)
    await rec.reconcile(Request("web", ns))  # first sight: every cluster already at OLD, finalizer
    await cached(rec, rt_client, ns)
    await rec.reconcile(Request("web", ns))
    assert (await rt_client.get(PROGRESSIVE_ROLLOUT, "web", ns))["status"]["phase"] == "Completed"

    await commit(rt_client, ns, NEW)
    await cached(rec, rt_client, ns)
    stale = {a["metadata"]["name"]: a for a in rec.apps.list(ns)}  # NEW, no operation yet
    before = written(ns)
    await rec.reconcile(Request("web", ns))  # the canaries' syncs
    synced = {
        a["metadata"]["name"]: a
        for a in (await rt_client.list(APPLICATION, ns)).items
        if a.get("operation")
    }
    assert sorted(synced) == ["euc1-a-web", "euw1-a-web"]
    assert written(ns) == before + 2
    # Argo CD takes both operations.
    for name in synced:
        await start(rt_client, ns, name)

    # The next pass plans from a cache that has not seen the writes (the rollout's status as
    # the API server holds it, the Applications as they were before the syncs) and the
    # watch delivers them while the pass runs: after its plan, before its writes.
    rec.rollouts.upsert(await rt_client.get(PROGRESSIVE_ROLLOUT, "web", ns))
    for app in stale.values():
        rec.apps.upsert(app)
    fresh = {a["metadata"]["name"]: a for a in (await rt_client.list(APPLICATION, ns)).items}
    observe = rec.observe

    def observe_then_deliver(pr: Any, raw: dict[str, Any]) -> Any:
        seen = observe(pr, raw)
        for name in synced:
            rec.apps.upsert(fresh[name])
        return seen

    rec.observe = observe_then_deliver  # type: ignore[method-assign]
    await rec.reconcile(Request("web", ns))

    # The plan saw no operation on the canaries and planned their syncs again; the writes
    # were made against the version it saw and refused. Argo CD's running syncs are the
    # only ones: no operation was written again over them.
    assert written(ns) == before + 2
    for app in (await rt_client.list(APPLICATION, ns)).items:
        name = app["metadata"]["name"]
        assert "operation" not in app, f"{name}: a second operation written over a running sync"
        if name in synced:
            ops = app["status"]["operationState"]
            assert ops["phase"] == "Running"
            assert any(i["name"] == SYNC_ID_INFO for i in ops["operation"]["info"])
