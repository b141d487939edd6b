"""ProgressiveRollout notifications, subscribed as a Cell's are (annotations, the
`okra-notifications` ConfigMap), delivered to a local HTTP receiver through the outbox in
the rollout's status: every stage completed, then the completion; or the failure."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from integration.progressiverollout.harness import CLUSTERS, NEW, argo, manager
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from okra_runtime import Client
from receiver import Receiver, serve
from support import eventually


@pytest.fixture
async def receiver(rt_client: Client, namespace: str) -> AsyncIterator[Receiver]:
    r = Receiver()
    runner = await serve(r)
    await rt_client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "okra-notifications", "namespace": namespace},
            "data": {"service.webhook.ci": f"url: {r.url}/hook\n"},
        }
    )
    yield r
    await runner.cleanup()


def subscribed(ns: str) -> dict[str, Any]:
    obj = rollout(ns)
    obj["metadata"]["annotations"] = {"notifications.okra.mumo.co/subscribe.all.ci": ""}
    return obj


async def test_every_stage_and_the_completion_are_notified(
    world: dict[str, Any], rt_client: Client, namespace: str, receiver: Receiver
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(subscribed(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        await argocd.commit(NEW)

        async def completed_notified() -> bool:
            return any(
                b["trigger"] == "on-rollout-completed" and b["revision"] == NEW
                for b in receiver.bodies()
            )

        assert await eventually(completed_notified, 90), receiver.bodies()
        new = [b for b in receiver.bodies() if b["revision"] == NEW]
        assert [(b["trigger"], b["step"]) for b in new] == [
            ("on-rollout-started", None),
            ("on-rollout-step-completed", 1),
            ("on-rollout-step-completed", 2),
            ("on-rollout-step-completed", 3),
            ("on-rollout-completed", None),
        ]
        assert all(b["kind"] == "ProgressiveRollout" for b in new)
        assert {(b["name"], b["progressiveRollout"], b["namespace"]) for b in new} == {
            ("web", "web", namespace)
        }
        assert "stage 'canary in EMEA'" in new[1]["message"]
        assert len({b["id"] for b in receiver.bodies()}) == len(receiver.bodies())

        async def outbox_empty() -> bool:
            return not (await status_of(rt_client, namespace)).get("notifications")

        assert await eventually(outbox_empty, 30)


async def test_a_failed_rollout_is_notified(
    world: dict[str, Any], rt_client: Client, namespace: str, receiver: Receiver
) -> None:
    async with manager(rt_client, namespace), argo(rt_client, namespace) as argocd:
        await rt_client.create(subscribed(namespace))
        assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 30)
        argocd.fail = {f"{c}-web" for c in CLUSTERS}
        await argocd.commit(NEW)

        async def failed_notified() -> bool:
            return any(b["trigger"] == "on-rollout-failed" for b in receiver.bodies())

        assert await eventually(failed_notified, 60), receiver.bodies()
        new = [b["trigger"] for b in receiver.bodies() if b["revision"] == NEW]
        assert new == ["on-rollout-started", "on-rollout-failed"]
        failed = receiver.bodies()[-1]
        assert failed["phase"] == "Failed"
        assert "one or more objects failed" in failed["message"]
