"""Traffic confirmation (`spec.trafficConfirmation`): the decision alone (`decide`, as a
table and as properties), then the Cell plan walking a canary in test_cell_plan's
simulated world, where the target groups serve requests as the weights AWS shows say,
or skewed."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from okra_controllers.api.v1alpha1.cell import CellStatus
from okra_controllers.api.v1alpha1.traffic import TrafficConfirmation
from okra_controllers.cell.plan import Observed, plan
from okra_controllers.cell.plan.traffic import (
    Share,
    TrafficQuery,
    TrafficReading,
    decide,
    pct,
    span,
)
from okra_controllers.cell.simulate import simulate
from unit.test_cell_plan import T0, World, spec

TC = TrafficConfirmation(window="2m", tolerance=5, min_requests=100, deadline="10m")
V1 = Share("v1", 80, ("arn:tg/a-v1",))
V2 = Share("v2", 20, ("arn:tg/a-v2", "arn:tg/b-v2"))


def at(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def reading(end: float, served: dict[str, float], window: float = 120) -> TrafficReading:
    return TrafficReading(at(end - window), at(end), served)


def served(v1: float, v2a: float, v2b: float = 0.0) -> dict[str, float]:
    return {"arn:tg/a-v1": v1, "arn:tg/a-v2": v2a, "arn:tg/b-v2": v2b}


# -- the decision -------------------------------------------------------------------------


def test_before_the_first_window_ends_it_waits_until_then_and_reads_nothing() -> None:
    d = decide(TC, [V1, V2], T0, at(30), None, "v2")
    assert d.verdict == "Waiting"
    assert d.query is None
    assert d.recheck_after == 90
    assert "2m after AWS showed the weights" in d.message


def test_once_the_window_has_passed_it_asks_for_a_reading_of_that_window() -> None:
    d = decide(TC, [V1, V2], T0, at(120), None, "v2")
    assert d.verdict == "Waiting"
    assert d.query == TrafficQuery(at(0), at(120), ("arn:tg/a-v1", "arn:tg/a-v2", "arn:tg/b-v2"))
    later = decide(TC, [V1, V2], T0, at(500), None, "v2")
    assert later.query is not None
    # the last window, in whole minutes: the minute under way is not complete yet
    assert (later.query.start, later.query.end) == (at(360), at(480))


def test_windows_of_minutes_are_read_in_whole_minutes_from_the_first_after_the_change() -> None:
    """ALBs publish one data point a minute: a minute that began before the change mixes
    the old weights in, and the minute under way is not complete."""
    since = at(40)  # 00:00:40
    d = decide(TC, [V1, V2], since, at(170), None, "v2")
    assert d.verdict == "Waiting"
    assert d.recheck_after == 10  # until 00:03:00, two whole minutes after 00:01:00
    d = decide(TC, [V1, V2], since, at(185), None, "v2")
    assert d.query is not None
    assert (d.query.start, d.query.end) == (at(60), at(180))
    # a reading of that window decides; one that starts before 00:01:00 does not
    assert decide(TC, [V1, V2], since, at(185), reading(180, served(800, 200)), "v2").verdict == (
        "Confirmed"
    )
    early = TrafficReading(at(40), at(160), served(800, 200))
    assert decide(TC, [V1, V2], since, at(185), early, "v2").query is not None
    # 90s is read as 2 whole minutes; 30s windows (tests) are read as they are
    odd = TrafficConfirmation(window="90s")
    assert decide(odd, [V1, V2], at(0), at(100), None, "v2").recheck_after == 20
    short = TrafficConfirmation(window="30s")
    q = decide(short, [V1, V2], at(7), at(50), None, "v2").query
    assert q is not None
    assert (q.start, q.end) == (at(20), at(50))


def test_the_issue_example_holds_with_both_splits_in_its_message() -> None:
    d = decide(TC, [V1, V2], T0, at(120), reading(120, served(1168, 36)), "v2")
    assert d.verdict == "Diverged"
    assert d.message.startswith(
        "AWS shows v2 20 %, traffic shows v2 3 % over 2m (1,204 requests)"
    ), d.message
    assert d.requests == 1204
    assert [(v.version, v.planned, v.observed, v.requests) for v in d.versions] == [
        ("v1", 80, 97.0, 1168),
        ("v2", 20, 3.0, 36),
    ]
    assert d.recheck_after == 30


TABLE: list[tuple[str, float, dict[str, float], str]] = [
    # name, now (s after the change), served per target group, verdict
    ("exact split", 120, served(800, 100, 100), "Confirmed"),
    ("v2 at the upper edge (25)", 120, served(750, 125, 125), "Confirmed"),
    ("v2 at the lower edge (15)", 120, served(850, 75, 75), "Confirmed"),
    ("v2 just past the edge (25.1)", 120, served(749, 126, 125), "Diverged"),
    ("canary served nothing", 120, served(1000, 0), "Diverged"),
    ("canary served nothing, past the deadline", 600, served(1000, 0), "Failed"),
    ("one request short", 120, served(79, 10, 10), "NotEnoughTraffic"),
    ("exactly minRequests", 120, served(80, 10, 10), "Confirmed"),
    ("no request at all", 120, served(0, 0), "NotEnoughTraffic"),
    ("thin traffic past the deadline never fails", 6000, served(5, 0), "NotEnoughTraffic"),
    ("off by far, one tick before the deadline", 599, served(0, 500, 500), "Diverged"),
]


def test_the_table() -> None:
    for name, now, counts, verdict in TABLE:
        d = decide(TC, [V1, V2], T0, at(now), reading(now, counts), "v2")
        assert d.verdict == verdict, (name, d)


def test_thin_traffic_says_so_and_never_names_a_split() -> None:
    d = decide(TC, [V1, V2], T0, at(120), reading(120, served(40, 8, 2)), "v2")
    assert d.message == (
        "not enough traffic to confirm: 50 requests over 2m (minRequests 100); AWS shows v2 20 %"
    )


def test_a_reading_that_starts_before_the_change_is_not_used() -> None:
    early = TrafficReading(at(-1), at(119), served(800, 100, 100))
    d = decide(TC, [V1, V2], T0, at(120), early, "v2")
    assert d.verdict == "Waiting"
    assert d.query is not None


def test_a_reading_missing_a_target_group_or_too_short_is_not_used() -> None:
    missing = reading(120, {"arn:tg/a-v1": 800, "arn:tg/a-v2": 200})
    assert decide(TC, [V1, V2], T0, at(120), missing, "v2").query is not None
    short = reading(120, served(800, 100, 100), window=60)
    assert decide(TC, [V1, V2], T0, at(120), short, "v2").query is not None


def test_cloudwatch_refusing_holds_the_step_and_says_why() -> None:
    r = TrafficReading(at(0), at(120), problem="GetMetricData: AccessDenied: no")
    d = decide(TC, [V1, V2], T0, at(120), r, "v2")
    assert d.verdict == "Unavailable"
    assert "AccessDenied" in d.message
    assert d.recheck_after is not None


def test_how_the_messages_write_numbers() -> None:
    assert [pct(3.0), pct(19.64), pct(0.04), pct(100)] == ["3 %", "19.6 %", "0 %", "100 %"]
    assert [span(120), span(90), span(3600), span(7)] == ["2m", "90s", "1h", "7s"]


@settings(max_examples=400, deadline=None)
@given(
    a=st.integers(0, 5000),
    b=st.integers(0, 5000),
    c=st.integers(0, 5000),
    planned=st.integers(0, 100),
    tolerance=st.integers(0, 100),
    min_requests=st.integers(1, 3000),
    now=st.integers(0, 1200),
)
def test_properties(
    a: int, b: int, c: int, planned: int, tolerance: int, min_requests: int, now: int
) -> None:
    """A step passes only on a whole window after the change with at least minRequests
    and every share within tolerance; fails only past the deadline; thin traffic never
    passes nor fails."""
    tc = TrafficConfirmation(
        window="2m", tolerance=tolerance, min_requests=min_requests, deadline="10m"
    )
    shares = [Share("v1", 100 - planned, V1.arns), Share("v2", planned, V2.arns)]
    d = decide(tc, shares, T0, at(now), reading(now, served(a, b, c)), "v2")
    total = a + b + c
    if now < 120:
        assert d.verdict == "Waiting"
        return
    if total < min_requests:
        assert d.verdict == "NotEnoughTraffic"
        return
    v2 = 100 * (b + c) / total
    within = (
        abs(round(v2, 1) - planned) <= tolerance
        and abs(round(100 * a / total, 1) - (100 - planned)) <= tolerance
    )
    if within:
        assert d.verdict == "Confirmed"
    else:
        assert d.verdict == ("Failed" if now >= 600 else "Diverged")
    assert d.requests == total
    assert sum(v.requests for v in d.versions) == total


# -- the plan, in the simulated world -------------------------------------------------------


@dataclass
class Served(World):
    """A world whose target groups serve `rate` requests a second, split as the weights
    AWS shows say (from when AWS shows them), except target groups in `dead` (which
    serve nothing: their share goes to the others) and `reads` counts CloudWatch
    readings."""

    rate: float = 20.0
    dead: set[str] = field(default_factory=set)
    reads: list[TrafficQuery] = field(default_factory=list)

    def observed(self) -> Observed:
        o = super().observed()
        first = plan(o)
        if first.needs_traffic is None:
            return o
        q = first.needs_traffic
        self.reads.append(q)
        names = {arn: name for name, arn, _ in self.tgs}
        weights = {f.arn: f.weight for f in self.forward or ()} if self.synced else {}
        live = {a: w for a, w in weights.items() if names.get(a) not in self.dead}
        seconds = (q.end - q.start).total_seconds()
        total = sum(live.values())
        requests = {
            a: (self.rate * seconds * live.get(a, 0) / total if total else 0.0) for a in q.arns
        }
        return dataclasses.replace(o, traffic=TrafficReading(q.start, q.end, requests))


CONFIRM = {"window": "10s", "tolerance": 5, "minRequests": 50, "deadline": "30s"}


def canary(steps: list[Any], **kw: Any) -> Served:
    kw.setdefault("trafficConfirmation", CONFIRM)
    w = Served(spec(steps, **kw))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    return w


def reasons(w: World) -> list[str]:
    return [e.reason for p in w.history for e in p.events]


def test_a_canary_that_serves_its_share_walks_to_100_one_window_per_step() -> None:
    w = canary([{"setWeight": 20}, {"setWeight": 50}])
    w.run(60)
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    assert reasons(w).count("TrafficConfirmed") == 2
    # each step waited out its window after AWS showed its weights, and read it once
    assert len(w.reads) == 2
    assert all((q.end - q.start).total_seconds() == 10 for q in w.reads)
    assert w.status.traffic is not None
    assert w.status.traffic.verdict == "Confirmed"
    assert [v.observed for v in w.status.traffic.versions] == [50.0, 50.0]


def test_without_the_field_no_reading_is_made() -> None:
    w = Served(spec([{"setWeight": 20}, {"setWeight": 50}]))
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(20)
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    assert w.reads == []
    assert w.status.traffic is None


def test_a_canary_that_gets_no_traffic_holds_with_the_message_then_rolls_back() -> None:
    w = canary([{"setWeight": 20}, {"setWeight": 50}])
    w.dead = {"a-v2"}
    held: list[str] = []
    for _ in range(60):
        w.tick()
        if w.status.traffic is not None and w.status.traffic.verdict == "Diverged":
            held.append(w.status.message or "")
    assert held, "the step never held"
    assert "canary v2 at 20% (step 1/2): AWS shows v2 20 %, traffic shows v2 0 %" in held[0]
    assert reasons(w).count("TrafficDiverged") == 1  # said once, not every reading
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert "traffic at step 1 not as planned" in w.blocked["v2"]
    assert w.status.health == "Degraded"
    assert reasons(w).count("TrafficConfirmed") == 0
    # it failed on the tick the deadline passed, 30 s after AWS showed 20 % (the first
    # tick that says how the traffic reads), not a tick before or after: a tick a second
    failed_at = next(
        i for i, p in enumerate(w.history) if any(e.reason == "RolloutFailed" for e in p.events)
    )
    shown_at = next(i for i, p in enumerate(w.history) if p.status.traffic is not None)
    assert failed_at - shown_at == 30


def test_thin_traffic_waits_and_never_passes() -> None:
    w = canary([{"setWeight": 20}])
    w.rate = 2.0  # 20 requests in a 10 s window, minRequests 50
    w.run(400)
    assert w.status.canary_version == "v2"
    assert w.status.stable_version == "v1"
    assert w.weights() == {"a-v1": 80, "a-v2": 20}
    assert w.status.traffic is not None
    assert w.status.traffic.verdict == "NotEnoughTraffic"
    assert "not enough traffic to confirm: 20 requests over 10s" in (w.status.message or "")
    assert "v2" not in w.blocked
    # the traffic picks up: the step is confirmed at the next reading
    w.rate = 20.0
    w.run(20)
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")


def test_failure_policy_stop_holds_where_it_is() -> None:
    w = canary([{"setWeight": 20}], failurePolicy={"type": "Stop"})
    w.dead = {"a-v2"}
    w.run(60)
    assert w.weights() == {"a-v1": 80, "a-v2": 20}
    assert "v2" not in w.blocked
    assert w.status.phase == "Error"
    assert "failurePolicy Stop" in (w.status.message or "")


def test_the_time_of_the_change_lives_in_the_status() -> None:
    """A restarted manager (a fresh plan from the status alone) keeps the step's time."""
    w = canary([{"setWeight": 20}])
    w.run(5)
    assert w.status.traffic is not None
    since = w.status.traffic.since
    w.status = CellStatus.model_validate(
        w.status.model_dump(by_alias=True, exclude_none=True, mode="json")
    )
    w.run(2)
    assert w.status.traffic is not None
    assert w.status.traffic.since == since


def test_the_plan_wakes_at_the_end_of_the_window() -> None:
    w = canary([{"setWeight": 20}])
    for _ in range(6):
        p = w.tick()
        if p.status.traffic is not None:
            break
    assert p.status.traffic is not None
    assert p.status.traffic.verdict == "Waiting"
    assert p.wake_after == 10


def test_okra_plan_walks_through_confirmed_steps() -> None:
    """The simulation behind `okra plan` waits out each window and has the traffic follow
    the weights, so it shows the same weights the rollout will write."""
    w = canary([{"setWeight": 20}, {"pause": {"duration": "1m"}}, {"setWeight": 50}])
    sim = simulate(w.observed())
    assert sim.finished, sim.blocked_by
    written = [
        sum(f.weight for f in s.forward if f.version == "v2") for s in sim.stages if s.forward
    ]
    assert written == [20, 50, 100]


def test_okra_promote_accepts_the_traffic_of_a_held_step() -> None:
    w = canary(
        [{"setWeight": 20}, {"setWeight": 50}], trafficConfirmation={**CONFIRM, "deadline": "1h"}
    )
    w.dead = {"a-v2"}
    w.run(20)
    assert w.status.traffic is not None
    assert w.status.traffic.verdict == "Diverged"
    w.promote = f"{w.status.rollout_id}/0"
    w.run(3)
    assert w.status.current_step_index == 1
    assert w.weights() == {"a-v1": 50, "a-v2": 50}
    assert reasons(w).count("TrafficAccepted") == 1
    assert "v2" not in w.blocked


def test_a_rollback_policy_waits_and_traffic_that_recovers_meanwhile_calls_it_off() -> None:
    w = canary([{"setWeight": 20}], failurePolicy={"type": "Rollback", "delaySeconds": 20})
    w.dead = {"a-v2"}
    for _ in range(60):
        w.tick()
        if w.status.rollback_at is not None:
            break
    assert w.status.phase == "Error"
    assert "Waiting 20 seconds before starting a rollback" in (w.status.message or "")
    w.dead = set()  # the canary starts getting its share
    w.run(20)
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    assert w.status.rollback_at is None
    assert "v2" not in w.blocked
