"""A Freeze holds a ProgressiveRollout, through the controller on a real kube-apiserver (Argo
CD simulated by the harness): with a freeze that selects it, a new revision starts no stage and
syncs nothing, and the status says which freeze holds it; one that selects other rollouts does
not; deleting the freeze (`okra unfreeze`) lets the rollout complete. A ClusterFreeze holds it
the same way while its namespace carries the label the ClusterFreeze selects, and taking the
label off lets it complete (a Namespace event wakes it)."""

from __future__ import annotations

import contextlib
from typing import Any

from integration.progressiverollout.harness import NEW, argo, manager
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from okra_controllers.api.kinds import CLUSTER_FREEZE, FREEZE, NAMESPACE
from okra_controllers.progressiverollout.plan.model import RESYNC
from okra_runtime import Client
from okra_runtime.errors import NotFoundError
from support import eventually


def freeze(ns: str | None, name: str, selector: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A Freeze in `ns`; with `ns` None, a ClusterFreeze (`spec` adds its namespaceSelector)."""
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Freeze" if ns else "ClusterFreeze",
        "metadata": {"name": name, **({"namespace": ns} if ns else {})},
        "spec": {"reason": "INC-9", "author": "carol", "selector": selector, **spec},
    }


async def test_a_freeze_holds_the_first_stage_until_it_is_lifted(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    ns = namespace
    await rt_client.create(freeze(ns, "others", {"matchLabels": {"team": "payments"}}))
    await rt_client.create(freeze(ns, "incident", {"matchLabels": {"team": "web"}}))
    async with manager(rt_client, ns), argo(rt_client, ns) as argocd:
        pr = rollout(ns)
        pr["metadata"]["labels"] = {"team": "web"}
        await rt_client.create(pr)
        await argocd.commit(NEW)

        async def held() -> bool:
            st = await status_of(rt_client, ns)
            return st.get("phase") == "Paused" and st.get("revision") == NEW

        assert await eventually(held, 60)
        st = await status_of(rt_client, ns)
        assert st["message"] == (
            "stage 'canary in EMEA' held: freeze incident (INC-9, by carol) until lifted"
        )
        frozen = next(c for c in st["conditions"] if c["type"] == "Frozen")
        assert (frozen["status"], frozen["reason"]) == ("True", "Held")
        assert [s["phase"] for s in st["stages"]] == ["Pending", "Pending", "Pending"]
        assert not [a for a, r in argocd.synced if r == NEW]
        await rt_client.delete(FREEZE, "incident", namespace=ns)
        assert await eventually(lambda: phase_is(rt_client, ns, "Completed"), 90)
        assert {a for a, r in argocd.synced if r == NEW}
        st = await status_of(rt_client, ns)
        frozen = next(c for c in st["conditions"] if c["type"] == "Frozen")
        assert (frozen["status"], frozen["reason"]) == ("False", "NotFrozen")


async def test_a_cluster_freeze_holds_while_the_namespace_carries_its_label(
    world: dict[str, Any], rt_client: Client, namespace: str
) -> None:
    ns = namespace
    fleet = f"fleet-{ns}"  # a label value only this test's namespace carries
    picks = {"namespaceSelector": {"matchLabels": {"okra-test/fleet": fleet}}}
    await rt_client.patch(NAMESPACE, ns, {"metadata": {"labels": {"okra-test/fleet": fleet}}})
    others = freeze(None, f"others-{ns}", {}, namespaceSelector={"matchLabels": {"x": fleet}})
    holding = freeze(None, f"incident-{ns}", {"matchLabels": {"team": "web"}}, **picks)
    try:
        await rt_client.create(others)
        await rt_client.create(holding)
        async with manager(rt_client, ns), argo(rt_client, ns) as argocd:
            pr = rollout(ns)
            pr["metadata"]["labels"] = {"team": "web"}
            await rt_client.create(pr)
            await argocd.commit(NEW)

            async def held() -> bool:
                st = await status_of(rt_client, ns)
                return st.get("phase") == "Paused" and st.get("revision") == NEW

            assert await eventually(held, 60)
            st = await status_of(rt_client, ns)
            assert st["message"] == (
                f"stage 'canary in EMEA' held: clusterfreeze incident-{ns} (INC-9, by carol) "
                "until lifted"
            )
            assert not [a for a, r in argocd.synced if r == NEW]
            # the namespace leaves the fleet: no ClusterFreeze selects it any more. Its first
            # sync starts on the Namespace's event, well within the controller's own 60 s
            # resync (RESYNC), which is when it would start without that watch.
            await rt_client.patch(
                NAMESPACE, ns, {"metadata": {"labels": {"okra-test/fleet": None}}}
            )

            async def syncing() -> bool:
                return any(r == NEW for _, r in argocd.synced)

            assert await eventually(syncing, RESYNC / 2)
            assert await eventually(lambda: phase_is(rt_client, ns, "Completed"), 90)
            assert {a for a, r in argocd.synced if r == NEW}
    finally:
        for f in (others, holding):
            with contextlib.suppress(NotFoundError):
                await rt_client.delete(CLUSTER_FREEZE, f["metadata"]["name"])
