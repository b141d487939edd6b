"""What a system Cell writes into an application's Cell, on a real control plane (the
system Cell, Cell and ALB config controllers in one Manager; EKS and the ALB in moto, as in
`test_system_cell`; Argo CD not installed, so an application Cell with `spec.argocd` is
Degraded).

Shown: a move okra refuses (web from {a, b} to {a, c} with `argocd`, or with
`trafficConfirmation`, and a cluster kept) never reaches web's Cell: its spec and
generation stay, and putting the spec back completes the system at once. A field okra
wrote into the Cell that the spec no longer derives (`trafficConfirmation` taken out of the
system's spec; `argocd` written by an earlier okra) is removed by the API server when the
system Cell applies the spec it derives, and the system recovers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from integration.test_system_cell import (  # noqa: F401 -- fixtures
    CELL,
    System,
    application,
    running,
    world,
)
from okra_controllers.cell.system.controller import FIELD_MANAGER
from okra_runtime import Client
from okra_testkit.seed import LoadBalancer
from support import eventually

pytestmark = pytest.mark.timeout(300)
ARGOCD = {
    "clusterSecret": {"labels": {"myservice-role": "web"}},
    "updateStrategy": {"type": "CreateBeforeDelete"},
}
OLD_ARGOCD = {  # what okra wrote into web's Cell from ARGOCD
    "clusterSecret": {
        "selector": {"matchLabels": {"web.sys.okra.mumo.co/member": "true"}},
        "labels": {"myservice-role": "web"},
    },
    "updateStrategy": {"type": "CreateBeforeDelete"},
}
CONFIRM = {"window": "2s", "tolerance": 5, "minRequests": 10, "deadline": "10s"}


def web_of(st: dict[str, Any]) -> dict[str, Any]:
    return next((a for a in st.get("applications") or [] if a["name"] == "web"), {})


async def completed_on(s: System, serving: list[str]) -> bool:
    st = await s.status()
    web = web_of(st)
    return st.get("phase") == "Completed" and (web.get("phase"), web.get("serving")) == (
        "Synced",
        serving,
    )


async def set_spec(s: System, clusters: list[dict[str, Any]], web: dict[str, Any]) -> None:
    """The system's clusters and its one application, in one edit (a merge patch)."""
    await s.c.patch(
        CELL, "sys", {"spec": {"clusters": clusters, "applications": [web]}}, namespace=s.ns
    )


async def child(s: System) -> dict[str, Any]:
    return await s.c.get(CELL, "sys-web", s.ns)


async def serving_a_and_b(
    s: System, alb: LoadBalancer, rt_client: Client, namespace: str, names: str = "ab"
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The system on clusters `names` (EKS in moto is shared by the tests: one name
    each), its one application web."""
    a, b = await s.cluster(names[0], "web"), await s.cluster(names[1], "web")
    web = application("web", "web", alb.listener_arn, 10, 50)
    await rt_client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {"name": "sys", "namespace": namespace},
            "spec": {"clusters": [a, b], "applications": [web]},
        }
    )
    return [a, b], web


async def test_a_refused_move_reaches_nothing_and_putting_the_spec_back_recovers(
    world: tuple[System, LoadBalancer],  # noqa: F811
    rt_client: Client,
    namespace: str,
) -> None:
    s, alb = world
    (a, b), web = await serving_a_and_b(s, alb, rt_client, namespace)
    c = await s.cluster("c", "web")
    async with running(rt_client, namespace, s.eks.config):
        assert await eventually(lambda: completed_on(s, ["a", "b"]), within=90), await s.debug()
        before = await child(s)
        for field, value, refusal in (
            ("argocd", ARGOCD, "with argocd, okra moves an application between sets"),
            ("trafficConfirmation", CONFIRM, "trafficConfirmation: cluster(s) a serve"),
        ):
            await set_spec(s, [a, c], {**web, field: value})

            async def refused(refusal: str = refusal) -> bool:
                st = await s.status()
                return st.get("phase") == "Failed" and refusal in web_of(st).get("message", "")

            assert await eventually(refused, within=30), await s.debug()
            await set_spec(s, [a, b], web)
            assert await eventually(lambda: completed_on(s, ["a", "b"]), within=30), (
                field,
                await s.debug(),
                (await child(s))["spec"],
            )
            after = await child(s)
            assert field not in after["spec"], after["spec"]
            # the refused change never reached the Cell: not one write of its spec
            assert after["metadata"]["generation"] == before["metadata"]["generation"]
            assert after["spec"] == before["spec"]
            assert (after.get("status") or {}).get("health") == "Healthy", after.get("status")
        await s.weights_become(alb.listener_arn, 10, {"a": 50, "b": 50})


async def test_a_field_the_spec_no_longer_derives_leaves_the_application_cell(
    world: tuple[System, LoadBalancer],  # noqa: F811
    rt_client: Client,
    namespace: str,
) -> None:
    s, alb = world
    (a, b), web = await serving_a_and_b(s, alb, rt_client, namespace, "xy")
    async with running(rt_client, namespace, s.eks.config):
        assert await eventually(lambda: completed_on(s, ["x", "y"]), within=90), await s.debug()
        # accepted (no cluster moves), then taken out again
        await set_spec(s, [a, b], {**web, "trafficConfirmation": CONFIRM})

        async def confirmed() -> bool:
            return bool((await child(s))["spec"].get("trafficConfirmation") == CONFIRM)

        assert await eventually(confirmed, within=30), (await child(s))["spec"]
        await set_spec(s, [a, b], web)

        async def unconfirmed() -> bool:
            return "trafficConfirmation" not in (await child(s))["spec"]

        assert await eventually(unconfirmed, within=30), (await child(s))["spec"]
        assert await eventually(lambda: completed_on(s, ["x", "y"]), within=30), await s.debug()

        # web's Cell as an earlier okra left it: spec.argocd written from a refused change
        # (applied by the system Cell's field manager, without the hash of its spec)
        held = await child(s)
        body = {
            "apiVersion": held["apiVersion"],
            "kind": "Cell",
            "metadata": {
                "name": "sys-web",
                "namespace": namespace,
                "labels": held["metadata"]["labels"],
                "ownerReferences": held["metadata"]["ownerReferences"],
            },
            "spec": {**copy.deepcopy(held["spec"]), "argocd": OLD_ARGOCD},
        }
        written = await rt_client.apply(body, field_manager=FIELD_MANAGER, force=True)
        assert written["spec"]["argocd"]["clusterSecret"]["labels"] == {"myservice-role": "web"}
        # the system Cell applies the spec it derives: the API server removes spec.argocd,
        # and web's Cell and the system recover

        async def recovered() -> bool:
            now = await child(s)
            return "argocd" not in now["spec"] and await completed_on(s, ["x", "y"])

        assert await eventually(recovered, within=60), ((await child(s))["spec"], await s.debug())
        now = await child(s)
        assert (now.get("status") or {}).get("health") == "Healthy", now.get("status")
