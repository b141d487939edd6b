"""A Pause the API server stores but okra's model rejects (a list where a time is
expected: found by test/reliability/test_fuzzed_input.py) is reported once, as a Warning
Event naming the field, not retried forever with a traceback; a valid Pause beside it
starts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from okra_controllers.api.kinds import PAUSE
from okra_controllers.cell.pause_controller import PauseReconciler
from okra_runtime import Client, GenerationChanged, Manager, ManagerOptions
from okra_runtime.gvk import GVK
from okra_testkit.envtest import ControlPlane
from support import LogCapture, eventually, stop_manager

REPO = Path(__file__).resolve().parents[2]
EVENT = GVK("events.k8s.io", "v1", "Event")


def pause(name: str, ns: str, expire: Any) -> dict[str, Any]:
    return {
        "apiVersion": "okra.mumo.co/v1alpha1",
        "kind": "Pause",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"expireTime": expire},
    }


async def test_an_invalid_pause_is_reported_not_retried(
    rt_client: Client, namespace: str, control_plane: ControlPlane, logs: LogCapture
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    ns, c = namespace, rt_client
    await c.create(pause("bad", ns, ["2030-01-01T00:00:00Z"]))
    await c.create(pause("good", ns, "2030-01-01T00:00:00Z"))
    mgr = Manager(c, ManagerOptions(namespace=ns, metrics_address=None, probe_address=None))
    rec = PauseReconciler(c, mgr.informer_for(PAUSE), events=mgr.event_recorder("pause-controller"))
    mgr.builder("pause").for_(PAUSE, predicates=(GenerationChanged(),)).complete(rec)
    task = asyncio.create_task(mgr.start())
    try:

        async def warned() -> bool:
            events = (await c.list(EVENT, namespace=ns)).items
            return any(
                e.get("type") == "Warning"
                and e["regarding"]["name"] == "bad"
                and "spec.expireTime" in e.get("note", "")
                for e in events
            )

        async def started() -> bool:
            return ((await c.get(PAUSE, "good", ns)).get("status") or {}).get("phase") == "Started"

        assert await eventually(warned, within=30)
        assert await eventually(started, within=30)
    finally:
        await stop_manager(mgr, task)
    assert "Traceback" not in logs.text
    assert not logs.at("error", "critical")
