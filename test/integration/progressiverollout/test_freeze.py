"""A Freeze holds a ProgressiveRollout, through the controller on a real kube-apiserver (Argo
CD simulated by the harness): with a freeze that selects it, a new revision starts no stage and
syncs nothing, and the status says which freeze holds it; one that selects other rollouts does
not; deleting the freeze (`okra unfreeze`) lets the rollout complete."""

from __future__ import annotations

from typing import Any

from integration.progressiverollout.harness import NEW, argo, manager
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from okra_controllers.api.kinds import FREEZE
from okra_runtime import Client
from support import eventually


def freeze(ns: str, name: str, selector: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Freeze",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"reason": "INC-9", "author": "carol", "selector": selector},
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
