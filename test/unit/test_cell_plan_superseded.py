"""A superseded version never gets traffic written (issue 28 §5).

The desired version is the highest non-blocked version with at least `replicas` target
groups. A lower version that is already superseded when the Cell is planned is never
written to the rule: not when both newer versions are eligible at once, and not again
once a canary toward it has switched to the higher one. The plan holds this by itself
(the first tests and the property); the Cell controller holds it across the one await
between observing and planning, the target health read (the last test).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.controller import CellReconciler
from okra_controllers.cell.plan import Plan, plan
from okra_runtime.cache import Store
from okra_runtime.gvk import GVK
from okra_runtime.reconcile import Request
from unit.test_cell_plan import LABEL, LISTENER, World, spec, step_kinds

STEPS = [{"setWeight": 5}, {"pause": {}}, {"setWeight": 50}]


def weighted(p: Plan) -> set[str]:
    """The versions the plan writes a weight above 0 for (none when it writes nothing)."""
    return {f.version for f in p.forward or () if f.weight > 0}


def controller_pass(w: World) -> list[Plan]:
    """The plans of one controller pass: first with no target health known (the
    controller reads it only when the plan asks, `needs_health`), then with it."""
    first = plan(dataclasses.replace(w.observed(), health={}))
    return [first, w.tick()] if first.needs_health else [w.tick()]


def stable_on_v1(replicas: int = 1) -> World:
    w = World(spec(STEPS, replicas=replicas))
    for n in range(replicas):
        w.add_tg(f"web-{n}-v1", "v1")
    w.run(3)
    assert w.status.stable_version == "v1"
    assert {f.version for f in w.forward or ()} == {"v1"}
    return w


@pytest.mark.parametrize("replicas", [1, 2])
def test_two_newer_versions_eligible_at_once_only_the_higher_is_written(replicas: int) -> None:
    w = stable_on_v1(replicas)
    for version in ("v2", "v3"):
        for n in range(replicas):
            w.add_tg(f"web-{n}-{version}", version)
    for _ in range(6):
        for p in controller_pass(w):
            assert "v2" not in weighted(p), p.forward
            assert p.status.canary_version in (None, "v3"), p.status
    assert w.status.canary_version == "v3"
    assert {f.version for f in w.forward or ()} == {"v1", "v3"}


@pytest.mark.parametrize("unhealthy", [False, True])
def test_a_canary_that_switches_to_a_higher_version_never_writes_the_lower_again(
    unhealthy: bool,
) -> None:
    """Canary v2 at 5 %, paused; v3 becomes eligible: the canary turns to v3 (from step 0)
    and v2 gets no weight in any plan after that, also while v3's target group waits for
    a healthy target (the rule is left as it is then, not written with v2)."""
    w = stable_on_v1()
    w.add_tg("web-0-v2", "v2")
    w.run(4)
    assert (w.status.canary_version, w.weights()) == ("v2", {"web-0-v1": 95, "web-0-v2": 5})
    w.add_tg("web-0-v3", "v3")
    if unhealthy:
        w.unhealthy.add("web-0-v3")
    for tick in range(8):
        if tick == 4:
            w.unhealthy.clear()
        for p in controller_pass(w):
            assert "v2" not in weighted(p), p.forward
    assert w.status.canary_version == "v3"
    assert w.weights() == {"web-0-v1": 95, "web-0-v3": 5}
    assert [e.message for p in w.history for e in p.events if e.reason == "RolloutStarted"] == [
        "canary v2 from v1",
        "canary v3 from v1",
    ]


def desired_now(w: World) -> str | None:
    """What the brief defines as desired: the highest non-blocked version with at least
    `replicas` target groups."""
    g = w.grouped()
    eligible = [
        v
        for v in g.versions
        if len(g.by_version[v.text]) >= w.spec.replicas and v.text not in w.blocked
    ]
    return max(eligible, key=lambda v: v.parsed).text if eligible else None


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(step_kinds, min_size=1, max_size=6),
    replicas=st.integers(1, 2),
    arrivals=st.lists(
        st.tuples(st.sampled_from(["v2", "v3"]), st.integers(0, 12)), min_size=1, max_size=6
    ),
    outcomes=st.lists(st.sampled_from(["Successful", "Failed", "Inconclusive"]), min_size=1),
    unhealthy_until=st.integers(0, 6),
)
def test_no_plan_gives_weight_to_a_version_other_than_the_stable_and_the_desired(
    steps: list[dict[str, Any]],
    replicas: int,
    arrivals: list[tuple[str, int]],
    outcomes: list[str],
    unhealthy_until: int,
) -> None:
    """Target groups of v2 and v3 arrive at generated ticks while v1 serves; every plan
    of every controller pass gives weight only to the stable version and to the version
    that is desired as the plan runs: never to one a higher eligible version supersedes."""
    it = iter(outcomes * 100)
    w = World(spec(steps, replicas=replicas), outcome=lambda name: next(it))
    for n in range(replicas):
        w.add_tg(f"web-{n}-v1", "v1")
    w.run(3)
    for tick in range(24):
        for i, (version, at) in enumerate(arrivals):
            if at == tick:
                w.add_tg(f"web-{i}-{version}", version)
                if tick < unhealthy_until:
                    w.unhealthy.add(f"web-{i}-{version}")
        if tick == unhealthy_until:
            w.unhealthy.clear()
        desired = desired_now(w)
        for p in controller_pass(w):
            allowed = {p.status.stable_version, desired}
            assert weighted(p) <= allowed, (tick, desired, p.forward, p.status.message)


# -- the controller: what it plans with after reading target health ---------------------

NS = "ns"


class FakeClient:
    """The API server as far as this pass of the Cell controller needs it."""

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []

    def on_write(self, callback: Any) -> None:
        pass

    async def update_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(obj)
        out["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return out

    async def apply(self, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.applied.append(copy.deepcopy(obj))
        return obj

    async def create(self, obj: dict[str, Any], **_: Any) -> dict[str, Any]:
        return obj

    async def patch(self, *_: Any, **__: Any) -> dict[str, Any]:
        return {}


@dataclasses.dataclass
class FakeInformer:
    store: Store


class FakeEvents:
    def event(self, *_: Any) -> None:
        pass


class FakeManager:
    def __init__(self) -> None:
        self.client = FakeClient()
        self.informers: dict[GVK, FakeInformer] = {}

    def informer_for(self, gvk: GVK) -> FakeInformer:
        return self.informers.setdefault(gvk, FakeInformer(Store()))

    def event_recorder(self, controller: str) -> FakeEvents:
        return FakeEvents()

    def add_closer(self, name: str, closer: Any) -> None:
        pass


def arn(name: str) -> str:
    return f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{name}/1"


def target_group(name: str, version: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": NS, "labels": {"role": "web", LABEL: version}},
        "spec": {"arn": arn(name)},
    }


async def test_the_controller_plans_with_the_target_groups_seen_after_the_health_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """v1 serves; v2 is eligible and the controller reads its target health (the plan
    asks: v2 never had weight); while AWS answers, v3's target group reaches the cache.
    The plan made after the read sees v3: v2 is never written, v3 gets the 5 %."""
    mgr = FakeManager()
    rec = CellReconciler(mgr, FakeEvents(), AwsConfig())  # type: ignore[arg-type]
    cell_spec = spec(STEPS).model_dump(by_alias=True, exclude_none=True, mode="json")
    rec.caches.cells.upsert(
        {
            "apiVersion": "okra.mumo.co/v1alpha1",
            "kind": "Cell",
            "metadata": {
                "name": "web",
                "namespace": NS,
                "uid": "u",
                "generation": 1,
                "resourceVersion": "1",
            },
            "spec": cell_spec,
            "status": {"stableVersion": "v1", "health": "Healthy", "phase": "Completed"},
        }
    )
    for name, version in (("web-0-v1", "v1"), ("web-0-v2", "v2")):
        rec.caches.target_groups.upsert(target_group(name, version))
    spec_ = {
        "listenerARN": LISTENER,
        "forwardTargetGroups": [{"name": "web-0-v1", "arn": arn("web-0-v1"), "weight": 100}],
    }
    rec.caches.configs.upsert(
        {
            "metadata": {"name": "web", "namespace": NS, "generation": 1},
            "spec": spec_,
            "status": {
                "observedGeneration": 1,
                "conditions": [{"type": "Synced", "status": "True"}],
            },
        }
    )
    asked: list[str] = []

    async def healthy(target_group_arn: str, aws: AwsConfig | None = None) -> tuple[bool, str]:
        asked.append(target_group_arn)
        # the watch delivers v3's target group while AWS answers for v2's
        rec.caches.target_groups.upsert(target_group("web-0-v3", "v3"))
        return True, ""

    monkeypatch.setattr(rec.health, "one", healthy)
    await rec.reconcile(Request("web", NS))

    assert asked[0] == arn("web-0-v2")
    written = [
        {f["name"]: f["weight"] for f in obj["spec"]["forwardTargetGroups"]}
        for obj in mgr.client.applied
    ]
    assert all("web-0-v2" not in w for w in written), written
    assert written == [{"web-0-v1": 95, "web-0-v3": 5}]
