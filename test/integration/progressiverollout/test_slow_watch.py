"""A ProgressiveRollout on a cache that trails the API server: every watch event reaches the
controller a second late (`ApiServerProxy.delay_watches`), as on a loaded control plane.
Each stage, cluster and rollout Event is said exactly once, and no reconcile plans from a
status older than the one it wrote itself (read-your-writes, `okra_runtime.freshness`)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from faultproxy import ApiServerProxy
from integration.progressiverollout.harness import CLUSTERS, NEW, argo, manager
from integration.progressiverollout.test_controller import phase_is, rollout, status_of
from okra_runtime import Client
from okra_runtime.events import EventRecorder
from okra_testkit.envtest import ControlPlane
from support import eventually

ONCE = (
    "RolloutStarted",
    "StageStarted",
    "StageCompleted",
    "ClusterCompleted",
    "RolloutCompleted",
)


@pytest.mark.timeout(300)
async def test_each_rollout_event_is_said_once_when_the_watch_is_a_second_late(
    world: dict[str, Any],
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    said: list[tuple[str, str, str]] = []
    event = EventRecorder.event

    def recording(self: EventRecorder, regarding: dict[str, Any], *a: Any, **kw: Any) -> None:
        _type, reason, note = a[:3]
        said.append((regarding["metadata"]["name"], reason, note))
        event(self, regarding, *a, **kw)

    monkeypatch.setattr(EventRecorder, "event", recording)
    async with ApiServerProxy(control_plane.server, control_plane.ca_pem) as api:
        api.delay_watches(1.0)
        config = api.kubeconfig(tmp_path / "slow.kubeconfig", control_plane.token())
        async with (
            await Client.from_kubeconfig(config) as slow,
            manager(slow, namespace),
            argo(rt_client, namespace) as argocd,
        ):
            await rt_client.create(rollout(namespace))
            assert await eventually(lambda: phase_is(rt_client, namespace, "Completed"), 60)
            await argocd.commit(NEW)

            async def rolled_out() -> bool:
                st = await status_of(rt_client, namespace)
                return st.get("revision") == NEW and st.get("phase") == "Completed"

            assert await eventually(rolled_out, 180), await status_of(rt_client, namespace)
        writes = [s for r, n, s in api.statuses if r == "progressiverollouts" and n == "web"]

    st = await status_of(rt_client, namespace)
    assert st["revision"] == NEW
    assert sorted(a for a, _ in argocd.synced) == sorted(f"{c}-web" for c in CLUSTERS)
    # The rollout of NEW: what was said after the revision changed (the first sight of OLD
    # before it says the same stage notes once more, rightly).
    start = next(i for i, (_, reason, _) in enumerate(said) if reason == "RevisionChanged")
    counts = Counter((reason, note) for _, reason, note in said[start:] if reason in ONCE)
    assert {k: n for k, n in counts.items() if n > 1} == {}, said
    assert sum(n for (reason, _), n in counts.items() if reason == "StageCompleted") == 3
    assert sum(n for (reason, _), n in counts.items() if reason == "ClusterCompleted") == len(
        CLUSTERS
    )
    # No status flaps back: once a stage is written Completed, no later write says otherwise.
    done: set[tuple[str, str]] = set()
    for status in writes:
        for stage in status.get("stages") or []:
            key = (str(status.get("revision")), stage["name"])
            if stage.get("phase") == "Completed":
                done.add(key)
            elif key in done:
                raise AssertionError(f"stage {key} went back to {stage.get('phase')}")
    assert ("2" * 40, "eu-central-1") in done
