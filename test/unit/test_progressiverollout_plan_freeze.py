"""Freezes in the ProgressiveRollout plan (progressiverollout/plan/freeze.py), through
test_progressiverollout_plan's simulated Argo CD: while a freeze applies no stage starts and no
cluster's sync starts, syncs under way finish, a stage's analysis under way counts and its
failure rolls back, and the rollout goes on where it stopped when the freeze ends."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.freeze import Applying, Hold
from okra_controllers.progressiverollout.plan import Observed
from unit.test_progressiverollout_plan import NEW, OLD, T0, Sim, phase_of

UNTIL = T0 + datetime.timedelta(hours=6)
HOLIDAY = Hold((Applying("holiday", "year-end", "alice", UNTIL),), UNTIL)
SAID = "freeze holiday (year-end, by alice) until 2026-01-01T06:00:00Z"
ANALYSIS = {"templates": [{"templateName": "success-rate"}]}


@dataclass
class FrozenSim(Sim):
    freeze: Hold | None = None

    def observed(self) -> Observed:
        return dataclasses.replace(super().observed(), freeze=self.freeze)


def frozen_sim(**kw: Any) -> FrozenSim:
    base = Sim.seed(**kw)
    sim = FrozenSim(spec=base.spec, apps=base.apps)
    sim.run()
    assert phase_of(sim) == "Completed"
    return sim


def condition(sim: Sim) -> Any:
    return next((c for c in sim.status.conditions or [] if c.type == "Frozen"), None)


def events(sim: Sim, reason: str) -> list[str]:
    return [e.message for p in sim.history for e in p.events if e.reason == reason]


def phases(sim: Sim) -> dict[str, str]:
    return {c.name: c.phase for ss in sim.status.stages or [] for c in ss.clusters or []}


def test_no_stage_starts_while_frozen_and_the_rollout_starts_when_it_ends() -> None:
    sim = frozen_sim()
    sim.freeze = HOLIDAY
    sim.commit(NEW)
    before = len(sim.history)
    for _ in range(10):
        sim.reconcile()
        sim.argo()
    assert all(not p.syncs for p in sim.history[before:])
    assert all(a.deployed == OLD for a in sim.apps.values())
    assert phase_of(sim) == "Paused"
    assert sim.status.message == f"stage 'canary in EMEA' held: {SAID}"
    c = condition(sim)
    assert (c.status, c.reason, c.message) == ("True", "Held", SAID)
    assert len(events(sim, "Frozen")) == 1
    left = (UNTIL - sim.now).total_seconds()
    assert sim.history[-1].requeue_after is not None
    assert sim.history[-1].requeue_after <= left
    sim.freeze = None
    sim.run()
    assert phase_of(sim) == "Completed"
    assert {a.cluster for a in sim.apps.values() if a.deployed == NEW} == set(phases(sim))
    assert len(events(sim, "Unfrozen")) == 1
    assert condition(sim).status == "False"


def test_a_freeze_that_holds_nothing_only_applies() -> None:
    sim = frozen_sim()
    sim.freeze = HOLIDAY
    sim.reconcile()
    c = condition(sim)
    assert (c.status, c.reason) == ("True", "Applies")
    assert phase_of(sim) == "Completed"
    assert not events(sim, "Frozen")


def test_syncs_under_way_finish_and_no_new_one_starts() -> None:
    # stage 2 (eu-west-1, 3 clusters, 25 %: one at a time) is where waves show
    sim = frozen_sim()
    sim.commit(NEW)
    for _ in range(200):
        sim.reconcile()
        if sim.status.current_stage == 1 and "Syncing" in phases(sim).values():
            break
        sim.argo()
        sim.finish_runs()
        sim.now += datetime.timedelta(seconds=5)
    syncing = {n for n, ph in phases(sim).items() if ph == "Syncing"}
    assert len(syncing) == 1
    sim.freeze = HOLIDAY
    for _ in range(30):
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
        p = sim.reconcile()
        started = {s.application.removeprefix("web-") for s in p.syncs}
        assert started <= syncing, started
    done = phases(sim)
    assert all(done[n] == "Completed" for n in syncing)
    assert [n for n, ph in done.items() if ph == "Pending"]  # the rest wait
    assert "the next syncs of stage 'eu-west-1' held" in (sim.status.message or "")
    sim.freeze = None
    sim.run()
    assert phase_of(sim) == "Completed"


def test_analysis_under_way_counts_and_its_failure_rolls_back_during_the_freeze() -> None:
    sim = frozen_sim(failurePolicy="Rollback", stage_overrides={0: {"analysis": ANALYSIS}})
    sim.commit(NEW)
    for _ in range(200):
        sim.reconcile()
        if sim.runs:
            break
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
    assert list(sim.runs.values()) == ["Running"]
    sim.freeze = HOLIDAY
    sim.run_outcome = "Failed"
    sim.run()
    assert phase_of(sim) == "RolledBack", sim.status.message
    assert all(a.deployed == OLD for a in sim.apps.values())
    assert condition(sim).status == "True"


@settings(max_examples=60, deadline=None)
@given(start=st.integers(0, 40), length=st.integers(1, 40))
def test_while_frozen_no_cluster_starts_a_sync(start: int, length: int) -> None:
    """A freeze over any stretch of the seed's rollout: no cluster goes from Pending to
    Syncing while it applies, and afterwards the rollout completes."""
    sim = frozen_sim()
    sim.commit(NEW)
    for _ in range(start):
        sim.reconcile()
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
    sim.freeze = HOLIDAY
    for _ in range(length):
        before = phases(sim)
        sim.reconcile()
        after = phases(sim)
        for name, ph in after.items():
            if ph == "Syncing":
                assert before.get(name) == "Syncing", f"{name} started syncing while frozen"
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
    sim.freeze = None
    sim.run()
    assert phase_of(sim) == "Completed"
