"""Traffic confirmation: does the traffic each version served match the weights AWS shows?

A pure decision (`decide`) from the step's planned shares, the time AWS first showed
them, the Cell's `trafficConfirmation` and a reading of the requests each target group
served (or none yet) to one of:

- `Waiting`: the first window after the change has not passed yet; look again at its end.
- `Unavailable`: CloudWatch could not be read; the step holds, it never passes.
- `NotEnoughTraffic`: fewer than `minRequests` in the window: nothing can be told, so
  the step holds ("not enough traffic to confirm"), and it never fails for that alone.
- `Confirmed`: every version's observed share is within `tolerance` points of its plan.
- `Diverged`: a share is off the plan: the step holds, said with both splits.
- `Failed`: still off the plan once `deadline` has passed since AWS showed the weights.

A decision that needs a reading it does not have asks for one (`query`): the caller
reads CloudWatch and decides again with it. A reading is used only when it is of the
right target groups and of a whole window that starts no earlier than the change.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.traffic import (
    TrafficConfirmation,
    TrafficVerdict,
    VersionTraffic,
)

RECHECK_MIN = 1.0  # seconds between readings while a step holds, at least
RECHECK_MAX = 30.0  # and at most (a quarter of the window in between)
MINUTE = 60.0  # load balancers publish one data point a minute


@dataclass(frozen=True)
class TrafficQuery:
    """Read the requests each of `arns` served in [start, end)."""

    start: datetime.datetime
    end: datetime.datetime
    arns: tuple[str, ...]


@dataclass(frozen=True)
class TrafficReading:
    """What CloudWatch said for a query: target group ARN -> requests served (0 when
    the load balancer published nothing for it: ALBs publish only nonzero counts)."""

    start: datetime.datetime
    end: datetime.datetime
    requests: Mapping[str, float] = field(default_factory=dict)
    problem: str = ""  # why CloudWatch could not be read ("" when it was)


@dataclass(frozen=True)
class Share:
    """A version in the step: its planned percent and its target groups."""

    version: str
    planned: int
    arns: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    verdict: TrafficVerdict
    message: str
    versions: tuple[VersionTraffic, ...] = ()
    requests: int = 0
    window: tuple[datetime.datetime, datetime.datetime] | None = None
    query: TrafficQuery | None = None  # read this, then decide again
    recheck_after: float | None = None  # seconds until the next reading is due


def pct(x: float) -> str:
    """A share as the messages write it: `3 %`, `19.6 %`."""
    r = round(x, 1)
    return f"{r:g} %" if r != int(r) else f"{int(r)} %"


def span(seconds: float) -> str:
    """A window as the messages write it: `2m`, `90s`, `1h`."""
    s = round(seconds)
    if s % 3600 == 0 and s:
        return f"{s // 3600}h"
    if s % 60 == 0 and s:
        return f"{s // 60}m"
    return f"{s}s"


def decide(
    tc: TrafficConfirmation,
    shares: Sequence[Share],
    since: datetime.datetime,
    now: datetime.datetime,
    reading: TrafficReading | None,
    focus: str,
) -> Decision:
    """The verdict on a step whose weights AWS has shown since `since` (see the module
    docstring); `focus` is the version the messages name (the canary)."""
    window = parse_duration(tc.window)
    deadline = max(window, parse_duration(tc.deadline))
    start0, window = window_start(since, window)
    first_end = start0 + datetime.timedelta(seconds=window)
    planned = [VersionTraffic(version=s.version, planned=s.planned) for s in shares]
    if now < first_end:
        return Decision(
            "Waiting",
            f"reading the traffic of the {span(window)} after AWS showed the weights "
            f"(until {first_end.isoformat(timespec='seconds')})",
            tuple(planned),
            recheck_after=(first_end - now).total_seconds(),
        )
    arns = tuple(sorted({a for s in shares for a in s.arns}))
    if not usable(reading, arns, start0, now, window):
        end = minute(now) if window >= MINUTE else now
        start = max(start0, end - datetime.timedelta(seconds=window))
        return Decision(
            "Waiting",
            "reading the traffic",
            tuple(planned),
            query=TrafficQuery(start, end, arns),
            recheck_after=RECHECK_MIN,  # should the reading not come, ask again soon
        )
    assert reading is not None
    recheck = min(RECHECK_MAX, max(RECHECK_MIN, window / 4))
    left = (since + datetime.timedelta(seconds=deadline) - now).total_seconds()
    if left > 0:
        recheck = min(recheck, left)
    if reading.problem:
        return Decision(
            "Unavailable",
            f"cannot read the traffic: {reading.problem}",
            tuple(planned),
            window=(reading.start, reading.end),
            recheck_after=recheck,
        )
    return _judge(tc, shares, reading, focus, recheck, left, deadline)


def _observed(
    shares: Sequence[Share], reading: TrafficReading
) -> tuple[tuple[VersionTraffic, ...], int]:
    """Each version's planned weight beside its share of the requests `reading` counted,
    and how many requests it counted."""
    counts = {s.version: sum(reading.requests.get(a, 0.0) for a in s.arns) for s in shares}
    total = sum(counts.values())
    observed = tuple(
        VersionTraffic(
            version=s.version,
            planned=s.planned,
            observed=round(100 * counts[s.version] / total, 1) if total > 0 else None,
            requests=int(counts[s.version]),
        )
        for s in shares
    )
    return observed, int(total)


def _judge(
    tc: TrafficConfirmation,
    shares: Sequence[Share],
    reading: TrafficReading,
    focus: str,
    recheck: float,
    left: float,
    deadline: float,
) -> Decision:
    """The verdict on a usable reading without a problem: `left` seconds until the
    deadline (none left: a divergence fails), `recheck` when to look again."""
    over = f"over {span((reading.end - reading.start).total_seconds())}"
    observed, n = _observed(shares, reading)
    named = next((v for v in observed if v.version == focus), observed[0] if observed else None)
    shown = f"AWS shows {named.version} {pct(named.planned)}" if named else "AWS shows no weight"
    if n < tc.min_requests:
        return Decision(
            "NotEnoughTraffic",
            f"not enough traffic to confirm: {n:,} requests {over} "
            f"(minRequests {tc.min_requests:,}); {shown}",
            observed,
            n,
            (reading.start, reading.end),
            recheck_after=recheck,
        )
    assert named is not None
    assert named.observed is not None
    said = f"{shown}, traffic shows {named.version} {pct(named.observed)} {over} ({n:,} requests)"
    off = [v for v in observed if abs((v.observed or 0.0) - v.planned) > tc.tolerance]
    if not off:
        return Decision("Confirmed", said, observed, n, (reading.start, reading.end))
    if left > 0:
        return Decision(
            "Diverged",
            f"{said}: off by more than {tc.tolerance} points",
            observed,
            n,
            (reading.start, reading.end),
            recheck_after=recheck,
        )
    return Decision(
        "Failed",
        f"{said}: off by more than {tc.tolerance} points for {span(deadline)}",
        observed,
        n,
        (reading.start, reading.end),
    )


def minute(t: datetime.datetime) -> datetime.datetime:
    """`t` down to its minute."""
    return t.replace(second=0, microsecond=0)


def window_start(since: datetime.datetime, window: float) -> tuple[datetime.datetime, float]:
    """Where readings may start, and how long they are. A window of a minute or more is
    read in whole minutes, as load balancers publish them: from the first whole minute
    after the change (a minute that began before it mixes the old weights in) and over
    whole minutes, each reading ending at the last whole minute (the one under way is
    not complete yet); shorter windows (tests) are read as they are."""
    if window < MINUTE:
        return since, window
    start = minute(since)
    if start < since:
        start += datetime.timedelta(seconds=MINUTE)
    return start, MINUTE * math.ceil(window / MINUTE)


def usable(
    reading: TrafficReading | None,
    arns: tuple[str, ...],
    since: datetime.datetime,
    now: datetime.datetime,
    window: float,
) -> bool:
    """The reading is of these target groups, of a whole window that starts no earlier
    than `since` (where readings may start), and recent (it ends no earlier than a window
    before now)."""
    if reading is None:
        return False
    if reading.problem:
        return reading.start >= since
    w = datetime.timedelta(seconds=window)
    return (
        set(arns) <= set(reading.requests)
        and reading.start >= since
        and reading.end - reading.start >= w - datetime.timedelta(seconds=0.001)
        and reading.end >= now - w
    )
