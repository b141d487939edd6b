"""A recurring freeze window that opens mid-rollout holds a ProgressiveRollout on the real
Argo CD at its next boundary (the next stage does not start; the syncs under way finish), a
manager killed during the freeze resumes frozen, and the window's end resumes the rollout
where it stopped."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from e2e.conftest import OkraManager
from e2e.progressive_world import CLUSTERS, SLOW, App, start
from okra_controllers.api.kinds import FREEZE, PROGRESSIVE_ROLLOUT
from support import eventually


@pytest.fixture
def okra(rollout_okra: OkraManager) -> OkraManager:
    """okra-manager with the ProgressiveRollout and AnalysisRun controllers (e2e/conftest.py)."""
    return rollout_okra


def stamp(t: datetime.datetime) -> str:
    return t.astimezone(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def cluster_phases(st: dict[str, Any], stage: int) -> list[str]:
    return [c.get("phase", "") for c in (st.get("stages") or [{}] * 3)[stage].get("clusters") or []]


async def test_a_window_opening_mid_stage_holds_the_next_stage_until_it_closes(
    app: App, okra: OkraManager
) -> None:
    ns = app.argocd.namespace
    await start(app, okra)
    pr = await app.client.get(PROGRESSIVE_ROLLOUT, app.name, ns)
    pr["metadata"]["labels"] = {"freeze-group": app.suffix}
    pr["spec"]["stages"][0]["bakeTime"] = "20s"
    await app.client.update(pr)
    second = app.commit("v2")

    async def baking() -> bool:
        st = await app.status()
        return st.get("revision") == second and "Baking" in cluster_phases(st, 0)

    assert await eventually(baking, SLOW, 0.5), okra.tail()
    # a window open every minute from now on, over this rollout only
    window = {"schedule": "* * * * *", "duration": "5m", "timeZone": "America/New_York"}
    now = datetime.datetime.now(datetime.UTC)
    await app.client.create(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Freeze",
            "metadata": {"name": f"freeze-{app.suffix}", "namespace": ns},
            "spec": {
                "reason": "quarter-end",
                "author": "alice",
                "windows": [window],
                "start": stamp(now),
                "selector": {"matchLabels": {"freeze-group": app.suffix}},
            },
        }
    )

    async def held() -> bool:
        st = await app.status()
        return st.get("phase") == "Paused" and "stage 'eu-west-1' held: freeze" in (
            st.get("message") or ""
        )

    assert await eventually(held, SLOW, 0.5), okra.tail()
    st = await app.status()
    # the stage under way finished (its clusters baked and completed); the next one waits
    assert st["stages"][0]["phase"] == "Completed"
    assert [s["phase"] for s in st["stages"][1:]] == ["Pending", "Pending"]
    canaries = {c["name"] for c in st["stages"][0]["clusters"]}
    markers = await app.markers()
    assert {c for c, m in markers.items() if m == "v2"} == canaries
    frozen = next(c for c in st["conditions"] if c["type"] == "Frozen")
    assert (frozen["status"], frozen["reason"]) == ("True", "Held")

    # kill -9 during the freeze: the new manager holds too
    okra.kill()
    okra.start()
    await app.client.patch(
        FREEZE, f"freeze-{app.suffix}", {"spec": {"reason": "quarter-end, day 2"}}, namespace=ns
    )

    async def still_held() -> bool:
        st = await app.status()
        return st.get("phase") == "Paused" and "day 2" in (st.get("message") or "")

    assert await eventually(still_held, SLOW, 0.5), okra.tail()
    assert {c for c, m in (await app.markers()).items() if m == "v2"} == canaries

    # the window closes: the rollout goes on at stage 2
    until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    await app.client.patch(
        FREEZE, f"freeze-{app.suffix}", {"spec": {"until": stamp(until)}}, namespace=ns
    )
    assert await eventually(lambda: app.revision_is(second, "Completed"), SLOW, 0.5), okra.tail()
    assert await app.markers() == {name: "v2" for name in CLUSTERS}
    for name, revisions in (await app.okra_syncs()).items():
        assert revisions.count(second) == 1, (name, revisions)
