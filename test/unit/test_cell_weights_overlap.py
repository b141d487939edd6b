"""A walk between versions that share target groups, planned per target group
(`walk_forward`): {a, b} to {a, c} keeps a's share and walks b's to c. Properties over
every pair of sets of up to five target groups and every weight: each reading totals
100 and lists each target group once, one whose share is the same at both ends keeps
it at every step, every share moves one way only, the ends are the versions' own
splits (so a rollback to the stable split restores the weights before the walk
exactly), and sets with nothing in common are walked as before."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, example, given
from hypothesis import strategies as st

from okra_controllers.cell.plan.model import Forward
from okra_controllers.cell.plan.weights import (
    forward_for,
    overlap,
    walk_forward,
    walked_share,
)
from okra_controllers.cell.versions import (
    TargetGroup,
    Version,
    group_target_groups,
    parse_version,
)
from unit.test_cell_plan import LABEL, World, spec


def version(text: str) -> Version:
    v = parse_version(text)
    assert v is not None
    return v


V1, V2 = version("v1"), version("v2")
NAMES = "abcdefgh"


def arn(c: str) -> str:
    return f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{c}/1"


def tgs(clusters: str, v: Version) -> list[TargetGroup]:
    """One target group per cluster, named as a system names them (the version's own
    object of a kept cluster has a suffix), sorted by name as the Cell groups them."""
    suffix = "" if v == V1 else "-v2"
    return sorted(
        (TargetGroup(f"sys-web-{c}{suffix}", arn(c), v) for c in clusters),
        key=lambda t: t.name,
    )


def by_cluster(forward: tuple[Forward, ...]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in forward:
        c = f.arn.split("/")[1]
        assert c not in out, f"{c} listed twice: {forward}"
        out[c] = f.weight
    return out


def walk(before: str, after: str, weight: int) -> dict[str, int]:
    return by_cluster(walk_forward(tgs(before, V1), tgs(after, V2), weight))


def test_one_cluster_of_a_pair_replaced() -> None:
    readings = [walk("ab", "ac", w) for w in (0, 25, 50, 75, 100)]
    assert readings == [
        {"a": 50, "b": 50},
        {"a": 50, "b": 37, "c": 13},
        {"a": 50, "b": 25, "c": 25},
        {"a": 50, "b": 12, "c": 38},
        {"a": 50, "c": 50},
    ]
    stable, canary = tgs("ab", V1), tgs("ac", V2)
    assert [walked_share(walk_forward(stable, canary, w), stable, canary) for w in (0, 50)] == [
        0,
        50,
    ]
    # the kept cluster is listed under its serving (stable) object
    assert [f.name for f in walk_forward(stable, canary, 50)] == [
        "sys-web-a",
        "sys-web-b",
        "sys-web-c-v2",
    ]
    assert overlap(stable, canary) == ["sys-web-a"]


def test_a_set_that_grows_moves_the_kept_share_too() -> None:
    # {a, b} to {a, b, c}: a and b go from 50 to 33 and 33, c from 0 to 34
    assert walk("ab", "abc", 0) == {"a": 50, "b": 50}
    assert walk("ab", "abc", 50) == {"a": 41, "b": 42, "c": 17}
    assert walk("ab", "abc", 100) == {"a": 33, "b": 33, "c": 34}


def test_no_target_group_in_common_walks_as_before() -> None:
    stable, canary = tgs("ab", V1), tgs("cd", V2)
    for w in range(101):
        assert walk_forward(stable, canary, w) == forward_for([(stable, 100 - w), (canary, w)])
        assert walked_share(walk_forward(stable, canary, w), stable, canary) == w


sets = st.sets(st.sampled_from(NAMES), min_size=1, max_size=5).map(lambda s: "".join(sorted(s)))


@given(before=sets, after=sets, weight=st.integers(0, 100))
def test_every_reading_totals_100_and_lists_each_target_group_once(
    before: str, after: str, weight: int
) -> None:
    w = walk(before, after, weight)
    assert sum(w.values()) == 100
    assert all(0 <= x <= 100 for x in w.values())
    assert set(w) <= set(before) | set(after)


@given(before=sets, after=sets)
def test_the_ends_are_the_versions_own_splits(before: str, after: str) -> None:
    """At 0 the stable version's split (what a rollback writes: the weights before the
    walk, exactly), at 100 the canary's (what its steady state writes)."""
    stable, canary = tgs(before, V1), tgs(after, V2)
    assert walk(before, after, 0) == by_cluster(forward_for([(stable, 100)]))
    assert walk(before, after, 100) == by_cluster(forward_for([(canary, 100)]))


@given(before=sets, after=sets)
def test_a_share_the_same_at_both_ends_is_kept_at_every_step(before: str, after: str) -> None:
    start, end = walk(before, after, 0), walk(before, after, 100)
    kept = {c for c in start if end.get(c) == start[c]}
    for weight in range(101):
        w = walk(before, after, weight)
        assert {c: w.get(c, 0) for c in kept} == {c: start[c] for c in kept}, weight


@given(before=sets, after=sets)
def test_every_share_moves_one_way_and_the_walk_never_goes_back(before: str, after: str) -> None:
    stable, canary = tgs(before, V1), tgs(after, V2)
    assume(overlap(stable, canary))  # with none in common, each version split as before
    start, end = walk(before, after, 0), walk(before, after, 100)
    last = start
    shares = []
    for weight in range(101):
        w = walk(before, after, weight)
        for c in set(start) | set(end):
            lo, hi = sorted((start.get(c, 0), end.get(c, 0)))
            assert lo <= w.get(c, 0) <= hi, (c, weight, w)
            if end.get(c, 0) >= start.get(c, 0):
                assert w.get(c, 0) >= last.get(c, 0), (c, weight, w, last)
            else:
                assert w.get(c, 0) <= last.get(c, 0), (c, weight, w, last)
        last = w
        shares.append(walked_share(walk_forward(stable, canary, weight), stable, canary))
    assert shares == sorted(shares)
    assert shares[0] == 0 or start == end
    assert shares[-1] == 100


@given(before=sets, after=sets, weight=st.integers(0, 100))
@example(before="abcf", after="abcd", weight=7)  # f's 25 to give, a-c's 5 each: f first
@example(before="abcf", after="abcde", weight=7)
def test_each_moving_share_stays_within_a_unit_of_its_proportional_part(
    before: str, after: str, weight: int
) -> None:
    assume(set(before) & set(after))
    start, end = walk(before, after, 0), walk(before, after, 100)
    w = walk(before, after, weight)
    moving = {c for c in set(start) | set(end) if start.get(c, 0) != end.get(c, 0)}
    for c in moving:
        exact = start.get(c, 0) + (end.get(c, 0) - start.get(c, 0)) * weight / 100
        assert abs(w.get(c, 0) - exact) <= 1, (c, weight, w, exact)


def shared_world(steps: list[Any], **kw: Any) -> World:
    """A single Cell on {a, b} (v1) given v2 = {a, c}: a second AWSTargetGroup names a's
    ARN with version v2, as a system Cell makes it for a cluster it keeps."""
    w = World(spec(steps, replicas=2, **kw))
    for name, c, v in (("a", "a", "v1"), ("b", "b", "v1")):
        w.tgs.append((name, arn(c), {"role": "web", LABEL: v}))
    w.run(3)
    assert w.weights() == {"a": 50, "b": 50}
    for name, c in (("a-v2", "a"), ("c", "c")):
        w.tgs.append((name, arn(c), {"role": "web", LABEL: "v2"}))
    return w


def test_a_single_cell_walks_per_target_group_and_abort_restores_the_weights_exactly() -> None:
    w = shared_world([{"setWeight": 50}, {"pause": {}}, {"setWeight": 75}, {"pause": {}}])
    w.run(5)
    assert w.weights() == {"a": 50, "b": 25, "c": 25}
    assert (w.status.health, w.status.canary_weight) == ("Paused", 50)
    assert [(t.name, t.weight, t.version) for t in w.status.target_groups or []] == [
        ("a", 50, "v1"),
        ("b", 25, "v1"),
        ("c", 25, "v2"),
    ]
    w.promote = f"{w.status.rollout_id}/1"
    w.run(4)
    assert w.weights() == {"a": 50, "b": 12, "c": 38}
    assert w.status.canary_weight == 76  # 38 of the 50 that move: in steps of 2
    w.abort = w.status.rollout_id
    w.run(3)
    assert w.weights() == {"a": 50, "b": 50}
    assert (w.status.health, w.status.aborted) == ("Degraded", True)
    w.abort, w.promote = None, None  # okra retry: the walk starts over, then completes
    w.run(4)
    w.promote = f"{w.status.rollout_id}/full"
    w.run(4)
    # v2 serves: a is named by v2's object of it now, with the same weight
    assert w.weights() == {"a-v2": 50, "c": 50}
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")


def test_a_failed_analysis_sends_the_weights_back_exactly() -> None:
    analysis = {"analysis": {"templates": [{"templateName": "success-rate"}]}}
    w = shared_world([{"setWeight": 50}, analysis])
    w.outcome = lambda name: "Failed"
    w.run(8)
    assert w.weights() == {"a": 50, "b": 50}
    assert "version v2 failed" in (w.status.message or "")
    assert all(
        {f.arn.split("/")[1]: f.weight for f in p.forward}.get("a") == 50
        for p in w.history
        if p.forward
    )


def test_traffic_confirmation_with_a_target_group_in_both_versions_is_refused() -> None:
    w = shared_world([{"setWeight": 50}], trafficConfirmation={"minRequests": 10})
    w.run(3)
    assert w.status.health == "Degraded"
    assert (w.status.message or "").startswith(
        "spec.trafficConfirmation: target group(s) a are in both v1 and v2"
    )
    assert w.weights() == {"a": 50, "b": 50}


def test_two_objects_of_one_version_with_one_arn_count_once() -> None:
    g = group_target_groups(
        [("a", arn("a"), {LABEL: "v2"}), ("a-v2", arn("a"), {LABEL: "v2"})], [LABEL]
    )
    assert [t.name for t in g.by_version["v2"]] == ["a"]


def test_okra_abort_still_rolls_back_when_traffic_confirmation_is_added_mid_walk() -> None:
    w = shared_world([{"setWeight": 50}, {"pause": {}}])
    w.run(5)
    assert w.weights() == {"a": 50, "b": 25, "c": 25}
    w.spec = spec(
        [{"setWeight": 50}, {"pause": {}}], replicas=2, trafficConfirmation={"minRequests": 10}
    )
    w.run(2)
    assert w.status.health == "Degraded"
    assert w.weights() == {"a": 50, "b": 25, "c": 25}  # held where it is
    w.abort = w.status.rollout_id
    w.run(3)
    assert w.weights() == {"a": 50, "b": 50}
    assert w.status.aborted
