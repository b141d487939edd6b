"""The Cell plan under ≥ 10,000 generated rollouts (`make fuzz`; `make test` runs 300 a test).

Each generated input is a whole rollout: canary steps (setWeight, stepWeight, timed and
indefinite pauses, analysis), target groups of several versions (unparsable ones included),
analysis outcomes (Successful, Failed, Inconclusive, Error), a promote at a random tick and a
pinned version set mid-rollout; the plan is then driven for 40 reconciles against the simulated
world of test/unit/test_cell_plan.py. The invariants are those of the unit property (every
status has a phase and a message; weights total 100, at most two versions; steps never go back
within a rollout; a failure sends stable 100 at once; an ended rollout leaves no Pause running)
plus: within one rollout the canary's share never goes backward unless the rollout fails. A
second run has target groups of newer versions arrive mid-rollout, at generated ticks: no plan
gives weight to a version but the stable one and the one desired as the plan runs (a version
that a higher eligible one supersedes is never written).

`make fuzz` runs 10,000 (OKRA_FUZZ_EXAMPLES=N to change), `make test` 300; a bare pytest run
of this file, 200.
The run prints the count and the time.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from okra_controllers.cell.plan.waiting import desired
from unit.test_cell_plan import LABEL, World, spec, step_kinds

EXAMPLES = int(os.environ.get("OKRA_FUZZ_EXAMPLES", "200"))
COUNT = {"inputs": 0, "plans": 0}

pytestmark = [pytest.mark.fuzz, pytest.mark.timeout(0)]  # a long run by design


@pytest.fixture(scope="module", autouse=True)
def _report() -> Any:
    start = time.monotonic()
    yield
    print(
        f"\ncell plan fuzz: {COUNT['inputs']} generated rollouts, {COUNT['plans']} plans checked"
        f" in {time.monotonic() - start:.0f}s"
    )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    steps=st.lists(step_kinds, max_size=10),
    tgs=st.lists(
        st.tuples(st.sampled_from(["v1", "v2", "v3", "1.5.0", "v2.0.1", "bad"]), st.integers(0, 3)),
        min_size=1,
        max_size=10,
        unique=True,
    ),
    outcomes=st.lists(
        st.sampled_from(["Successful", "Failed", "Inconclusive", "Error"]), min_size=1, max_size=6
    ),
    promote_at=st.integers(0, 40),
    pin_at=st.integers(0, 40),
    pin=st.sampled_from([None, "v1", "v2", "v3"]),
)
def test_cell_plan_invariants_hold_for_every_generated_rollout(
    steps: list[dict[str, Any]],
    tgs: list[tuple[str, int]],
    outcomes: list[str],
    promote_at: int,
    pin_at: int,
    pin: str | None,
) -> None:
    COUNT["inputs"] += 1
    it = iter(outcomes * 100)
    w = World(spec(steps), outcome=lambda name: next(it))
    for version, n in tgs:
        w.add_tg(f"tg-{version}-{n}", version)
    arns_by_version: dict[str, set[str]] = {}
    for _, arn, labels in w.tgs:
        arns_by_version.setdefault(labels[LABEL], set()).add(arn)
    share: dict[str, int] = {}  # rollout id -> the canary's last planned share
    for tick in range(40):
        if tick == promote_at and w.status.rollout_id:
            w.promote = f"{w.status.rollout_id}/{w.status.current_step_index}"
        if tick == pin_at:
            w.spec = spec(steps, version=pin)
        before = (w.status.rollout_id, w.status.current_step_index)
        p = w.tick()
        COUNT["plans"] += 1
        assert p.status.phase, p.status
        assert p.status.message, p.status
        if p.status.rollout_id is None:
            assert all(ph != "Started" for ph in w.pauses.values()), w.pauses
        if p.forward is not None:
            assert sum(f.weight for f in p.forward) == 100
            assert all(0 < f.weight <= 100 for f in p.forward)
            for f in p.forward:
                assert f.arn in arns_by_version.get(f.version, set())
            assert len({f.version for f in p.forward}) <= 2
            rid, canary = p.status.rollout_id, p.status.canary_version
            if rid and canary and not p.block:
                now = sum(f.weight for f in p.forward if f.version == canary)
                assert now >= share.get(rid, 0), (rid, share.get(rid), now)
                share[rid] = now
        for r in p.create_runs:
            if "-step-" in r.name:
                assert r.name.endswith(f"-step-{p.status.current_step_index}")
        if p.create_pause:
            assert p.create_pause.name.endswith(f"-pause-{p.status.current_step_index}")
        if before[0] is not None and before[0] == p.status.rollout_id:
            assert (p.status.current_step_index or 0) >= (before[1] or 0)
        if p.block:
            assert p.forward is not None
            assert {f.version for f in p.forward} == {p.status.stable_version}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    steps=st.lists(step_kinds, max_size=10),
    replicas=st.integers(1, 2),
    arrivals=st.lists(
        st.tuples(st.sampled_from(["v2", "v3", "v2.0.1", "bad"]), st.integers(0, 30)),
        min_size=1,
        max_size=8,
    ),
    outcomes=st.lists(
        st.sampled_from(["Successful", "Failed", "Inconclusive", "Error"]), min_size=1, max_size=6
    ),
    unhealthy_until=st.integers(0, 10),
    pin_at=st.integers(0, 40),
    pin=st.sampled_from([None, "v1", "v2", "v3"]),
)
def test_no_superseded_version_gets_weight_whenever_newer_versions_arrive(
    steps: list[dict[str, Any]],
    replicas: int,
    arrivals: list[tuple[str, int]],
    outcomes: list[str],
    unhealthy_until: int,
    pin_at: int,
    pin: str | None,
) -> None:
    COUNT["inputs"] += 1
    it = iter(outcomes * 100)
    w = World(spec(steps, replicas=replicas), outcome=lambda name: next(it))
    for n in range(replicas):
        w.add_tg(f"web-{n}-v1", "v1")
    for tick in range(40):
        if tick == pin_at:
            w.spec = spec(steps, replicas=replicas, version=pin)
        for i, (version, at) in enumerate(arrivals):
            if at == tick:
                w.add_tg(f"web-{i}-{version}", version)
                if tick < unhealthy_until:
                    w.unhealthy.add(f"web-{i}-{version}")
        if tick == unhealthy_until:
            w.unhealthy.clear()
        to = desired(w.observed())[0]
        p = w.tick()
        COUNT["plans"] += 1
        if p.forward is not None:
            assert sum(f.weight for f in p.forward) == 100
            allowed = {p.status.stable_version, to.text if to else None}
            assert {f.version for f in p.forward} <= allowed, (to, p.forward, p.status.message)
