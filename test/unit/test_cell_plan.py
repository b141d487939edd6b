"""The Cell plan, driven through a small simulated world: AWS applies weights a
tick later, analyses finish as scripted, pauses expire on demand."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.api.v1alpha1.cell import CellSpec, ListenerRule, RolloutCellStatus
from okra_controllers.cell.argocd import ClusterView
from okra_controllers.cell.observe import config_problem
from okra_controllers.cell.plan import Forward, Observed, Plan, plan
from okra_controllers.cell.versions import Grouped, group_target_groups

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
LABEL = "okra.mumo.co/version"
LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/web/1/2"


def spec(steps: list[Any] | None = None, **kw: Any) -> CellSpec:
    canary: dict[str, Any] = {"steps": steps or []}
    if "background" in kw:
        canary["analysis"] = kw.pop("background")
    return CellSpec.model_validate(
        {
            "ingress": {
                "type": "AWSApplicationLoadBalancer",
                "awsApplicationLoadBalancer": {
                    "listenerARN": LISTENER,
                    "targetGroupSelector": {"matchLabels": {"role": "web"}},
                },
            },
            "updateStrategy": {"type": "Canary", "canary": canary},
            **kw,
        }
    )


ANALYSIS = {"analysis": {"templates": [{"templateName": "success-rate"}]}}
DEMO_STEPS = [
    {"stepWeight": 20},
    {"pause": {"duration": "5s"}},
    ANALYSIS,
    {"stepWeight": 40},
    {"pause": {"duration": "5s"}},
]


@dataclass
class World:
    spec: CellSpec
    tgs: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    forward: tuple[Forward, ...] | None = None
    synced: bool = True
    blocked: dict[str, str] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    pauses: dict[str, str] = field(default_factory=dict)
    status: RolloutCellStatus = field(default_factory=RolloutCellStatus)
    promote: str | None = None
    abort: str | None = None
    paused: bool = False
    outcome: Callable[[str], str] = lambda name: "Successful"
    history: list[Plan] = field(default_factory=list)
    timed: set[str] = field(default_factory=set)
    now: datetime.datetime = T0
    unhealthy: set[str] = field(default_factory=set)  # target group names without a healthy target
    jobs: dict[str, tuple[str, str]] = field(default_factory=dict)  # check Jobs: (phase, why)
    job_outcome: Callable[[str], tuple[str, str]] = lambda name: ("Succeeded", "")
    refusal: str = ""  # the config's Synced problem while AWS refuses it ("" = AWS applies)
    # target group name -> what AWS said refusing to describe it (then it is unhealthy)
    health_problems: dict[str, str] = field(default_factory=dict)
    # timed Pause name -> its expireTime; with `pause_controller_down`, no Pause is ever
    # marked Expired and only the passing of expireTime ends one
    pause_expiry: dict[str, datetime.datetime] = field(default_factory=dict)
    pause_controller_down: bool = False
    past_the_second: datetime.timedelta | None = None  # exact_now = now + this (None: unset)

    def add_tg(self, name: str, version: str) -> None:
        self.tgs.append(
            (
                name,
                f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{name}/1",
                {"role": "web", LABEL: version},
            )
        )

    def tick(self) -> Plan:
        if not self.synced and not self.refusal:
            self.synced = True  # AWS shows last tick's write now
        for name, phase in list(self.runs.items()):
            if phase == "Running":
                self.runs[name] = self.outcome(name)
        for name, (phase, _) in list(self.jobs.items()):
            if phase == "Running":
                self.jobs[name] = self.job_outcome(name)
        if not self.pause_controller_down:
            for name in self.timed:  # timed pauses have expired by the next tick
                self.pauses[name] = "Expired"
            self.timed.clear()
        p = plan(self.observed())
        self.acted_more(p)
        self.history.append(p)
        if p.forward is not None and (
            self.forward is None or sorted(p.forward) != sorted(self.forward)
        ):
            self.forward, self.synced = p.forward, False
        for r in p.create_runs:
            self.runs.setdefault(r.name, "Running")
        for j in p.create_jobs:
            assert j.name not in self.jobs, f"Job {j.name} created twice"
            self.jobs[j.name] = ("Running", "")
        for name in p.terminate_runs:
            if self.runs.get(name) in ("Running", ""):
                self.runs[name] = "Successful"  # a terminated run ends Successful
        for name in p.cancel_pauses:
            if self.pauses.get(name) == "Started":
                self.pauses[name] = "Cancelled"
        if p.create_pause:
            self.pauses[p.create_pause.name] = "Started"
            if p.create_pause.expire_time:
                self.timed.add(p.create_pause.name)
                self.pause_expiry[p.create_pause.name] = p.create_pause.expire_time
        if p.block:
            self.blocked[p.block[0]] = p.block[1]
        self.status = p.status
        self.now += datetime.timedelta(seconds=1)
        return p

    def run(self, ticks: int = 40) -> None:
        for _ in range(ticks):
            self.tick()

    def observed(self) -> Observed:
        """What the Cell controller would observe now."""
        return Observed(
            cell_name="web",
            generation=1,
            spec=self.spec,
            status=self.status,
            grouped=self.grouped(),
            forward=self.forward,
            synced=self.synced,
            blocked=dict(self.blocked),
            runs=dict(self.runs),
            pauses=dict(self.pauses),
            promote=self.promote,
            abort=self.abort,
            now=self.now,
            health={
                arn: name not in self.unhealthy and name not in self.health_problems
                for name, arn, _ in self.tgs
            },
            health_problems={
                arn: self.health_problems[name]
                for name, arn, _ in self.tgs
                if name in self.health_problems
            },
            paused=self.paused,
            jobs=dict(self.jobs),
            clusters=self.clusters(),
            config_problem=self.refusal,
            pause_expiry=dict(self.pause_expiry),
            exact_now=None if self.past_the_second is None else self.now + self.past_the_second,
        )

    def grouped(self) -> Grouped:
        return group_target_groups(self.tgs, [LABEL])

    def clusters(self) -> ClusterView | None:
        """The Argo CD clusters observed (worlds with Argo CD clusters have some)."""
        return None

    def acted_more(self, p: Plan) -> None:
        """Carry out the rest of a plan (worlds with Argo CD clusters move labels)."""

    def weights(self) -> dict[str, int]:
        return {f.name: f.weight for f in self.forward or ()}


def canary_weights(w: World) -> list[int]:
    seen: list[int] = []
    for p in w.history:
        if p.status.canary_weight is not None and (not seen or seen[-1] != p.status.canary_weight):
            seen.append(p.status.canary_weight)
    return seen


def test_first_rollout_goes_straight_to_100_split_evenly() -> None:
    w = World(spec(DEMO_STEPS))
    w.add_tg("web-a-v1", "v1")
    w.add_tg("web-b-v1", "v1")
    w.run(3)
    assert w.weights() == {"web-a-v1": 50, "web-b-v1": 50}
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v1")
    assert not w.runs
    assert not w.pauses


def test_canary_walks_every_step_kind_in_order() -> None:
    w = World(spec(DEMO_STEPS))
    for n in ("a", "b"):
        w.add_tg(f"web-{n}-v1", "v1")
    w.run(3)
    for n in ("a", "b"):
        w.add_tg(f"web-{n}-v2", "v2")
    w.run(40)
    assert canary_weights(w) == [20, 60, 100]
    assert w.weights() == {"web-a-v2": 50, "web-b-v2": 50}
    assert (w.status.health, w.status.stable_version, w.status.canary_version) == (
        "Healthy",
        "v2",
        None,
    )
    assert len([r for r in w.runs if "step-2" in r]) == 1
    assert len(w.pauses) == 2
    reasons = [e.reason for p in w.history for e in p.events]
    assert reasons.count("RolloutStarted") == 1
    assert reasons.count("RolloutCompleted") == 1


def test_a_timed_pause_ends_at_its_expire_time_without_the_pause_controller() -> None:
    """The Cell wakes itself when its Pause's expireTime passes (`wake_after`) and moves
    on, whether or not the Pause controller has written `Expired`; a Pause over by its
    time is not cancelled when the rollout ends."""
    w = World(
        spec([{"stepWeight": 20}, {"pause": {"duration": "5s"}}, {"stepWeight": 40}]),
        pause_controller_down=True,
    )
    w.add_tg("web-a-v1", "v1")
    w.run(3)
    w.add_tg("web-a-v2", "v2")
    waits: list[float | None] = []
    while w.status.health != "Healthy" or w.status.stable_version != "v2":
        assert len(w.history) < 40, w.status.message
        p = w.tick()
        if p.status.health == "Paused":
            waits.append(p.wake_after)
    assert waits == [5.0, 4.0, 3.0, 2.0, 1.0]  # from the step that created it, a second a tick
    (pause,) = w.pauses
    assert w.pauses[pause] == "Started"  # never marked, never cancelled: its time ended it
    assert not any(p.cancel_pauses for p in w.history)
    assert canary_weights(w) == [20, 60, 100]


def test_a_timed_pause_lasts_its_duration_to_the_microsecond() -> None:
    """`now` is to the second (status times); a Pause is timed by `exact_now`: started
    0.9 s past a second, it ends 0.9 s past one, not 0.9 s early."""
    w = World(
        spec([{"stepWeight": 20}, {"pause": {"duration": "5s"}}, {"stepWeight": 40}]),
        pause_controller_down=True,
        past_the_second=(past := datetime.timedelta(milliseconds=900)),
    )
    w.add_tg("web-a-v1", "v1")
    w.run(3)
    w.add_tg("web-a-v2", "v2")
    while not w.pauses:
        w.tick()
    (created,) = [p.create_pause for p in w.history if p.create_pause]
    started = w.now - datetime.timedelta(seconds=1) + past
    expiry = started + datetime.timedelta(seconds=5)
    assert created.expire_time == expiry
    assert w.history[-1].wake_after == 5.0

    def at(exact: datetime.datetime) -> Plan:
        o = w.observed()
        return plan(dataclasses.replace(o, now=exact.replace(microsecond=0), exact_now=exact))

    early = at(expiry - datetime.timedelta(milliseconds=100))
    assert early.status.health == "Paused"
    assert early.wake_after == 0.1
    assert at(expiry).status.health == "Progressing"


def test_an_untimed_pause_sets_no_wake() -> None:
    w = World(spec([{"stepWeight": 20}, {"pause": {}}]), pause_controller_down=True)
    w.add_tg("web-a-v1", "v1")
    w.run(3)
    w.add_tg("web-a-v2", "v2")
    w.run(10)
    assert w.status.health == "Paused"
    assert all(p.wake_after is None for p in w.history)


def test_a_step_waits_until_aws_shows_the_weights() -> None:
    w = World(spec([{"setWeight": 30}, ANALYSIS]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    p = w.tick()
    assert p.forward is not None
    assert {f.name: f.weight for f in p.forward} == {"a-v1": 70, "a-v2": 30}
    assert p.create_runs == []  # the analysis waits for the weights to be applied
    w.synced = False
    w.forward = p.forward
    p2 = plan(
        Observed(
            "web",
            1,
            w.spec,
            p.status,
            group_target_groups(w.tgs, [LABEL]),
            p.forward,
            False,
            {},
            {},
            {},
            None,
            None,
            T0,
        )
    )
    assert p2.create_runs == []
    p3 = plan(
        Observed(
            "web",
            1,
            w.spec,
            p.status,
            group_target_groups(w.tgs, [LABEL]),
            p.forward,
            True,
            {},
            {},
            {},
            None,
            None,
            T0,
        )
    )
    assert [r.name for r in p3.create_runs] == [f"web-v2-{p.status.rollout_id}-step-1"]


def test_failed_analysis_rolls_back_and_blocks() -> None:
    w = World(spec(DEMO_STEPS), outcome=lambda name: "Failed")
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(20)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert "analysis" in w.blocked["v2"]
    assert "Failed" in w.blocked["v2"]
    assert w.status.health == "Degraded"
    assert "version v2 failed" in (w.status.message or "")
    after_failure = [p for p in w.history if p.block]
    assert len(after_failure) == 1
    # No further steps for the blocked version.
    assert not any(p.create_runs or p.create_pause for p in w.history[-10:])


def test_pinned_version_rolls_back_at_once() -> None:
    w = World(spec(DEMO_STEPS))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(40)
    assert w.status.stable_version == "v2"
    w.spec = spec(DEMO_STEPS, version="v1")
    p = w.tick()
    assert p.forward is not None
    assert {f.name: f.weight for f in p.forward} == {"a-v1": 100}
    assert not p.create_runs
    assert p.create_pause is None


def test_new_target_group_of_serving_version_is_added_without_steps() -> None:
    w = World(spec(DEMO_STEPS))
    w.add_tg("a-v1", "v1")
    w.add_tg("b-v1", "v1")
    w.run(3)
    w.add_tg("c-v1", "v1")
    p = w.tick()
    assert p.forward is not None
    assert {f.name: f.weight for f in p.forward} == {"a-v1": 33, "b-v1": 33, "c-v1": 34}
    assert not p.create_runs


def test_replicas_delay_the_rollout() -> None:
    w = World(spec(DEMO_STEPS, replicas=2))
    w.add_tg("a-v1", "v1")
    w.add_tg("b-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(5)
    assert w.status.canary_version is None
    assert w.weights() == {"a-v1": 50, "b-v1": 50}
    w.add_tg("b-v2", "v2")
    w.tick()
    assert w.status.canary_version == "v2"


def test_inconclusive_pauses_until_promoted() -> None:
    w = World(spec([{"stepWeight": 50}, ANALYSIS]), outcome=lambda name: "Inconclusive")
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(10)
    assert w.status.health == "Paused"
    assert w.status.paused_reason == "Inconclusive"
    assert w.weights() == {"a-v1": 50, "a-v2": 50}
    w.promote = f"{w.status.rollout_id}/1"
    w.run(5)
    assert w.status.stable_version == "v2"
    assert w.weights() == {"a-v2": 100}


def test_abort_holds_on_stable_and_retry_starts_over() -> None:
    w = World(spec([{"stepWeight": 50}, {"pause": {}}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(5)
    assert w.status.health == "Paused"  # indefinite pause
    first = w.status.rollout_id
    w.abort = first
    w.run(3)
    assert w.weights() == {"a-v1": 100}
    assert (w.status.health, w.status.aborted) == ("Degraded", True)
    w.abort = None  # okra retry
    w.run(3)
    assert w.status.rollout_id != first
    assert w.weights() == {"a-v1": 50, "a-v2": 50}
    w.promote = f"{w.status.rollout_id}/1"
    w.run(4)
    assert w.weights() == {"a-v2": 100}


def test_promote_full_skips_remaining_steps() -> None:
    w = World(spec([{"stepWeight": 10}, {"pause": {}}, {"stepWeight": 10}, {"pause": {}}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(4)
    w.promote = f"{w.status.rollout_id}/full"
    w.run(3)
    assert w.weights() == {"a-v2": 100}
    assert canary_weights(w) == [10, 100]


def test_background_analysis_failure_rolls_back() -> None:
    bg = {"templates": [{"templateName": "error-rate"}], "startingStep": 1}
    w = World(
        spec([{"stepWeight": 10}, {"pause": {}}], background=bg),
        outcome=lambda name: "Failed" if name.endswith("-bg") else "Successful",
    )
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(6)
    assert w.weights() == {"a-v1": 100}
    assert "background analysis" in w.blocked["v2"]


def test_unparsable_versions_are_reported_and_ignored() -> None:
    w = World(spec([]))
    w.add_tg("a-v1", "v1")
    w.tgs.append(
        (
            "weird",
            "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/weird/1",
            {"role": "web", LABEL: "banana"},
        )
    )
    p = w.tick()
    assert any(e.reason == "UnparsableVersion" and "banana" in e.message for e in p.events)
    assert p.forward is not None
    assert [f.name for f in p.forward] == ["a-v1"]


def test_no_target_groups_says_so() -> None:
    p = World(spec(DEMO_STEPS)).tick()
    assert p.forward is None
    assert p.status.message == "no AWSTargetGroups match the target group selector"


def test_older_versions_leave_the_rule_and_three_versions_keep_one_stable() -> None:
    w = World(spec([{"stepWeight": 50}, {"pause": {}}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(4)
    w.add_tg("a-v3", "v3")  # a newer version arrives mid-rollout
    w.run(4)
    assert set(w.weights()) <= {"a-v1", "a-v3"}
    assert w.status.canary_version == "v3"


step_kinds = st.one_of(
    st.builds(lambda n: {"setWeight": n}, st.integers(0, 100)),
    st.builds(lambda n: {"stepWeight": n}, st.integers(0, 100)),
    st.just({"pause": {"duration": "1s"}}),
    st.just({"pause": {}}),
    st.just(ANALYSIS),
)


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(step_kinds, max_size=8),
    tgs=st.lists(
        st.tuples(st.sampled_from(["v1", "v2", "v3", "1.5.0", "bad"]), st.integers(0, 2)),
        min_size=1,
        max_size=8,
        unique=True,
    ),
    outcomes=st.lists(
        st.sampled_from(["Successful", "Failed", "Inconclusive", "Error"]), min_size=1, max_size=5
    ),
    promote_at=st.integers(0, 30),
    pin=st.sampled_from([None, "v1", "v2"]),
)
def test_weights_always_total_100_and_steps_run_in_order(
    steps: list[dict[str, Any]],
    tgs: list[tuple[str, int]],
    outcomes: list[str],
    promote_at: int,
    pin: str | None,
) -> None:
    it = iter(outcomes * 100)
    w = World(spec(steps), outcome=lambda name: next(it))
    for version, n in tgs:
        w.add_tg(f"tg-{version}-{n}", version)
    arns_by_version: dict[str, set[str]] = {}
    for _, arn, labels in w.tgs:
        arns_by_version.setdefault(labels[LABEL], set()).add(arn)
    for tick in range(40):
        if tick == promote_at and w.status.rollout_id:
            w.promote = f"{w.status.rollout_id}/{w.status.current_step_index}"
        if tick == 25:
            w.spec = spec(steps, version=pin)
        before = (w.status.rollout_id, w.status.current_step_index)
        p = w.tick()
        # Every status says where the Cell stands and why.
        assert p.status.health, p.status
        assert p.status.message, p.status
        # Pauses and runs of an ended rollout are cancelled / terminated.
        if p.status.rollout_id is None:
            assert all(ph != "Started" for ph in w.pauses.values()), w.pauses
        if p.forward is not None:
            assert sum(f.weight for f in p.forward) == 100
            assert all(f.weight > 0 for f in p.forward)
            for f in p.forward:
                assert f.arn in arns_by_version.get(f.version, set())
            assert len({f.version for f in p.forward}) <= 2
        # A run or pause for step k is only asked for while the rollout stands at step k.
        for r in p.create_runs:
            if "-step-" in r.name:
                assert r.name.endswith(f"-step-{p.status.current_step_index}")
        if p.create_pause:
            assert p.create_pause.name.endswith(f"-pause-{p.status.current_step_index}")
        # Within one rollout, the step index never goes back.
        if before[0] is not None and before[0] == p.status.rollout_id:
            assert (p.status.current_step_index or 0) >= (before[1] or 0)
        # A failure is immediate: stable gets 100 in the same plan.
        if p.block:
            assert p.forward is not None
            assert {f.version for f in p.forward} == {p.status.stable_version}


def test_a_canary_found_blocked_is_reported_as_the_failure() -> None:
    """The controller blocks first, then writes status; if that write is lost, the next
    plan still reports the failure instead of a quiet return to healthy."""
    w = World(spec([{"stepWeight": 50}, {"pause": {}}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(3)
    assert w.status.canary_version == "v2"
    w.blocked["v2"] = "analysis web-v2-x-step-1 Failed"
    p = w.tick()
    assert p.status.health == "Degraded"
    assert p.status.message == (
        "version v2 failed: analysis web-v2-x-step-1 Failed; all traffic back to v1"
    )
    assert any(e.reason == "RolloutFailed" for e in p.events)
    assert w.weights() == {"a-v1": 100}


def test_failure_stays_degraded_after_the_rollback_is_applied() -> None:
    w = World(spec([{"stepWeight": 50}, ANALYSIS]), outcome=lambda name: "Failed")
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(10)
    assert w.weights() == {"a-v1": 100}
    assert w.synced
    assert w.status.health == "Degraded"
    assert "version v2 failed" in (w.status.message or "")
    phases = [p.status.health for p in w.history[-5:]]
    assert set(phases) == {"Degraded"}


def test_a_cell_waiting_for_replicas_says_so() -> None:
    w = World(spec(DEMO_STEPS, replicas=2))
    w.add_tg("a-v1", "v1")
    w.add_tg("b-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(3)
    assert w.weights() == {"a-v1": 50, "b-v1": 50}
    cond = next(c for c in w.status.conditions or [] if c.type == "ReplicasReady")
    assert (cond.status, cond.reason) == ("False", "WaitingForReplicas")
    assert cond.message == "waiting for v2: 1 of 2 target groups"
    assert w.status.health == "Healthy"
    assert w.status.message == "v1 serves 100%; waiting for v2: 1 of 2 target groups"
    waits = [e for p in w.history for e in p.events if e.reason == "WaitingForReplicas"]
    assert [e.message for e in waits] == ["waiting for v2: 1 of 2 target groups"]  # once
    w.add_tg("b-v2", "v2")
    w.tick()
    cond = next(c for c in w.status.conditions or [] if c.type == "ReplicasReady")
    assert cond.status == "True"
    assert w.status.canary_version == "v2"


def test_a_config_aws_refuses_is_reported_on_the_cell_until_fixed() -> None:
    w = World(spec(DEMO_STEPS))
    w.refusal = (
        "AWSError: DescribeRules: ListenerNotFound: One or more listeners not found; "
        "check the listener ARN (it must name an existing listener)"
    )
    w.add_tg("a-v1", "v1")
    w.run(4)
    cond = next(c for c in w.status.conditions or [] if c.type == "LoadBalancerSynced")
    assert (cond.status, cond.reason) == ("False", "AWSError")
    assert "ListenerNotFound" in cond.message
    assert "check the listener ARN" in cond.message
    assert cond.message in (w.status.message or "")
    health_while_refused = w.history[-1].status.health
    assert health_while_refused == "Progressing"
    warned = [e for p in w.history for e in p.events if e.reason == "LoadBalancerNotSynced"]
    assert [e.type for e in warned] == ["Warning"]  # once, not on every pass
    w.refusal = ""
    w.run(2)
    cond = next(c for c in w.status.conditions or [] if c.type == "LoadBalancerSynced")
    assert cond.status == "True"
    health_when_fixed = w.history[-1].status.health
    assert health_when_fixed == "Healthy"
    assert "ListenerNotFound" not in (w.status.message or "")


def test_six_target_groups_in_one_version_degrade_with_what_to_fix() -> None:
    w = World(spec([]))
    for n in range(6):
        w.add_tg(f"web-{n}-v1", "v1")
    p = w.tick()
    assert p.forward is None
    assert p.status.health == "Degraded"
    assert "an ALB forward action holds at most 5" in (p.status.message or "")
    assert "lower the number of target groups" in (p.status.message or "")
    assert [e.reason for e in p.events] == ["TooManyTargetGroups"]
    assert not p.create_runs
    assert p.create_pause is None
    p = w.tick()
    assert p.status.health == "Degraded"
    assert not p.events


def test_a_listener_rule_without_conditions_degrades() -> None:
    s = spec([])
    assert s.ingress is not None
    alb = s.ingress.aws_application_load_balancer
    assert alb is not None
    alb.listener_rule = ListenerRule(priority=10)
    w = World(s)
    w.add_tg("a-v1", "v1")
    p = w.tick()
    assert p.forward is None
    assert p.status.health == "Degraded"
    assert "needs at least one of hosts, pathPatterns" in (p.status.message or "")


def test_health_is_asked_for_then_gates_new_target_groups() -> None:
    w = World(spec(DEMO_STEPS))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.unhealthy.add("a-v2")
    p = w.tick()
    assert p.forward is None
    assert p.held
    assert p.status.message == "waiting for a healthy target in a-v2 before sending it traffic"
    assert p.status.health == "Progressing"
    cond = next(c for c in p.status.conditions or [] if c.type == "TargetGroupsHealthy")
    assert (cond.status, cond.reason) == ("False", "NoHealthyTargets")
    assert [e.reason for e in p.events] == ["TargetGroupUnhealthy"]
    assert not p.create_runs
    assert p.create_pause is None
    assert not w.tick().events  # the same wait is not announced again
    # Without observed health the plan asks for it instead of guessing.
    o = Observed(
        "web",
        1,
        w.spec,
        w.status,
        group_target_groups(w.tgs, [LABEL]),
        w.forward,
        True,
        {},
        {},
        {},
        None,
        None,
        T0,
    )
    asked = plan(o)
    assert asked.needs_health == (w.tgs[1][1],)
    assert asked.forward is None
    w.unhealthy.clear()
    p = w.tick()
    assert p.forward is not None
    assert not p.held
    cond = next(c for c in p.status.conditions or [] if c.type == "TargetGroupsHealthy")
    assert cond.status == "True"
    # A target group that already has weight is not checked again.
    w.run(40)
    w.unhealthy.add("a-v2")
    assert not w.tick().held


def test_a_target_group_aws_refuses_to_describe_holds_with_what_to_fix() -> None:
    w = World(spec(DEMO_STEPS))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.health_problems["a-v2"] = (
        "DescribeTargetHealth: TargetGroupNotFound: One or more target groups not found; "
        "check the target group ARNs (each must name an existing group)"
    )
    p = w.tick()
    assert p.held
    assert p.forward is None
    assert (p.status.message or "").startswith(
        "waiting for a healthy target in a-v2 before sending it traffic; AWS refuses to "
        "describe it: AWSTargetGroup a-v2: DescribeTargetHealth: TargetGroupNotFound"
    )
    cond = next(c for c in p.status.conditions or [] if c.type == "TargetGroupsHealthy")
    assert (cond.status, cond.reason) == ("False", "TargetGroupRefused")
    assert [(e.type, e.reason) for e in p.events] == [("Warning", "TargetGroupUnhealthy")]
    assert not w.tick().events  # said once
    w.health_problems.clear()
    assert w.tick().forward is not None


def test_pinned_rollback_mid_rollout_ends_its_pauses_and_runs() -> None:
    bg = {"templates": [{"templateName": "error-rate"}]}
    w = World(spec([{"stepWeight": 20}, {"pause": {}}], background=bg), outcome=lambda n: "Running")
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(5)
    assert w.status.health == "Paused"
    (pause,) = w.pauses
    assert w.pauses[pause] == "Started"
    (bg_run,) = [r for r in w.runs if r.endswith("-bg")]
    w.spec = spec([{"stepWeight": 20}, {"pause": {}}], background=bg, version="v1")
    p = w.tick()
    assert p.cancel_pauses == [pause]
    assert bg_run in p.terminate_runs
    assert w.pauses[pause] == "Cancelled"
    assert w.weights() == {"a-v1": 100}
    w.run(3)
    assert not any(p.cancel_pauses for p in w.history[-2:])  # once ended, left alone


def test_okra_pause_holds_the_canary_weight_until_resumed() -> None:
    w = World(spec([{"setWeight": 20}, {"setWeight": 50}, {"setWeight": 80}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.tick()  # the weights of step 1 written
    w.paused = True
    w.run(10)
    assert w.weights() == {"a-v1": 80, "a-v2": 20}
    assert (w.status.health, w.status.paused_reason) == ("Paused", "PausedByUser")
    assert w.status.current_step_index == 1
    assert "paused by okra pause before step 2" in (w.status.message or "")
    w.paused = False
    w.run(10)
    assert canary_weights(w) == [20, 50, 80, 100]
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")


def test_okra_pause_does_not_stop_a_failing_background_analysis() -> None:
    w = World(
        spec(
            [{"setWeight": 20}, {"setWeight": 50}],
            background={"templates": [{"templateName": "err"}]},
        ),
        outcome=lambda name: "Failed",
    )
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.paused = True
    w.add_tg("a-v2", "v2")
    w.run(5)
    assert w.status.health == "Degraded"
    assert "a-v2" not in w.weights()
    assert "v2" in w.blocked


def test_the_config_problem_the_cell_reports_is_its_synced_condition_now() -> None:
    def config(reason: str, status: str = "False", observed: int = 3) -> dict[str, Any]:
        return {
            "metadata": {"generation": 3},
            "status": {
                "conditions": [
                    {
                        "type": "Synced",
                        "status": status,
                        "reason": reason,
                        "message": "said",
                        "observedGeneration": observed,
                    }
                ]
            },
        }

    assert config_problem(config("AWSError")) == "AWSError: said"
    assert config_problem(config("ListenerNotFound")) == "ListenerNotFound: said"  # an NLB's
    assert config_problem(config("NotApplied")) == ""  # AWS not (yet) showing it: no problem
    assert config_problem(config("Synced", "True")) == ""
    assert config_problem(config("AWSError", observed=2)) == ""  # about an older spec
    assert config_problem({"metadata": {"generation": 1}}) == ""


def test_a_pinned_version_waits_for_replicas_then_moves_on_all_of_them() -> None:
    """`spec.version` pins the version, `replicas` still says how many target groups it
    needs before weight moves towards it: a version's weight never goes to a strict
    subset of its target groups (a system Cell pins its applications' Cells so)."""
    for order in (("a-v2", "b-v2"), ("b-v2", "a-v2")):
        w = World(spec([{"setWeight": 10}, {"setWeight": 60}], replicas=2))
        w.add_tg("a-v1", "v1")
        w.add_tg("b-v1", "v1")
        w.run(3)
        w.spec = w.spec.model_copy(update={"version": "v2"})
        w.add_tg(order[0], "v2")
        w.run(5)
        assert w.weights() == {"a-v1": 50, "b-v1": 50}, order
        assert "waiting for v2: 1 of 2 target groups" in (w.status.message or "")
        w.add_tg(order[1], "v2")
        w.run(20)
        moved = [
            {f.name for f in p.forward if f.version == "v2" and f.weight}
            for p in w.history
            if p.forward is not None
        ]
        assert all(names in (set(), {"a-v2", "b-v2"}) for names in moved), (order, moved)
        assert canary_weights(w) == [10, 60, 100]
        assert w.weights() == {"a-v2": 50, "b-v2": 50}


def test_a_pinned_rollback_does_not_wait_for_replicas() -> None:
    w = World(spec([{"setWeight": 50}], replicas=2))
    for n, v in (("a-v1", "v1"), ("a-v2", "v2"), ("b-v2", "v2")):
        w.add_tg(n, v)
    w.spec = w.spec.model_copy(update={"version": "v2"})
    w.run(10)
    assert w.weights() == {"a-v2": 50, "b-v2": 50}
    w.spec = w.spec.model_copy(update={"version": "v1"})
    w.run(3)
    assert w.weights() == {"a-v1": 100}
