"""When a Freeze applies: pure functions of its spec and a time, no I/O.

A recurring window's times are those of its cron schedule on the wall clock of its time
zone; it stays open for its duration on that wall clock. Wall-clock times are turned into
instants as PEP 495 does, with one choice made for a freeze's sake: a window never gets
shorter than the wall clock says. A start the clocks skip opens the window as much later as
they moved (02:30 on a night that goes from 02:00 to 03:00 is 03:30); a start the clocks
pass twice opens it the first time; an end the clocks pass twice closes it the second time.
Windows that overlap or touch make one freeze, so "until when" is the end of the last.
"""

from __future__ import annotations

import datetime
import zoneinfo
from dataclasses import dataclass

from croniter import croniter

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.freeze import FreezeSpec, FreezeWindow

UTC = datetime.UTC
MARGIN = datetime.timedelta(hours=3)
"""More than any time zone's clocks move at once (two hours, historically): a window that
covers an instant starts within its duration plus this of it, on the wall clock."""
CHAIN_LIMIT = 1000
"""Windows followed from one to the next that overlaps it; past that (or past HORIZON), the
end given is the last one's, marked `more`: the rollout is looked at again then."""
HORIZON = datetime.timedelta(days=31)
"""How far ahead the end of a freeze is looked for (windows that follow on from each other
for longer, such as a daily window of 25 hours, freeze for good)."""


@dataclass(frozen=True)
class Span:
    """An instant range [start, end); `end` None: no end known (until the freeze is lifted)."""

    start: datetime.datetime | None
    end: datetime.datetime | None
    more: bool = False  # the freeze goes on past `end`: it was followed no further


def _instant(naive: datetime.datetime, tz: zoneinfo.ZoneInfo, *, end: bool) -> datetime.datetime:
    """The instant of a wall-clock time: a start at its earliest reading that exists, an end
    at its latest (so a window is never shorter than its wall-clock duration)."""
    first = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if not end:
        return first
    return max(first, naive.replace(tzinfo=tz, fold=1).astimezone(UTC))


class Window:
    """A recurring window (cron schedule, duration, time zone), ready to answer which of its
    occurrences cover an instant: a `FreezeWindow` (`Window.of`), or an Argo CD sync window."""

    def __init__(self, schedule: str, duration: datetime.timedelta, time_zone: str) -> None:
        self.schedule = schedule
        self.tz = zoneinfo.ZoneInfo(time_zone)
        self.duration = duration

    @classmethod
    def of(cls, w: FreezeWindow) -> Window:
        return cls(w.schedule, datetime.timedelta(seconds=parse_duration(w.duration)), w.time_zone)

    def _local(self, t: datetime.datetime) -> datetime.datetime:
        return t.astimezone(self.tz).replace(tzinfo=None)

    def _span(self, naive_start: datetime.datetime) -> tuple[datetime.datetime, datetime.datetime]:
        start = _instant(naive_start, self.tz, end=False)
        # a start the clocks skipped is read as the wall clock reads its instant (02:30 on a
        # night from 02:00 to 03:00 is 03:30): the window lasts its duration from there
        opened = start.astimezone(self.tz).replace(tzinfo=None)
        return start, _instant(opened + self.duration, self.tz, end=True)

    def covering(self, t: datetime.datetime) -> Span | None:
        """The occurrences that cover `t`, with the ones that overlap or touch them after:
        their first start and last end; None when no occurrence covers `t`."""
        local = self._local(t)
        it = croniter(self.schedule, local + MARGIN, ret_type=datetime.datetime)
        best: tuple[datetime.datetime, datetime.datetime, datetime.datetime] | None = None
        floor = local - self.duration - MARGIN
        while True:
            naive: datetime.datetime = it.get_prev()
            if naive < floor:
                break
            start, end = self._span(naive)
            if start <= t < end and (best is None or end > best[1]):
                best = (start, end, naive)
            elif best is not None and naive < best[2] - MARGIN:
                break  # earlier ones end more than the clocks can move earlier
        if best is None:
            return None
        first, last, naive = best
        follow = croniter(self.schedule, naive, ret_type=datetime.datetime)
        for _ in range(CHAIN_LIMIT):
            if last - t > HORIZON:
                return Span(first, last, more=True)
            start, end = self._span(follow.get_next())
            if start > last:
                return Span(first, last)
            last = max(last, end)
        return Span(first, last, more=True)

    def next_start(self, t: datetime.datetime) -> datetime.datetime:
        """The first occurrence that starts after `t`."""
        it = croniter(self.schedule, self._local(t) - MARGIN, ret_type=datetime.datetime)
        while True:
            start, _ = self._span(it.get_next())
            if start > t:
                return start


def applies(spec: FreezeSpec, t: datetime.datetime) -> Span | None:
    """Whether the freeze applies at `t`, and from when until when (None: it does not).
    A manual freeze applies from `start` to `until`; a recurring one during its windows,
    within them."""
    if spec.start is not None and t < spec.start:
        return None
    if spec.until is not None and t >= spec.until:
        return None
    if not spec.windows:
        return Span(spec.start, spec.until)
    spans = [s for s in (Window.of(w).covering(t) for w in spec.windows) if s is not None]
    if not spans:
        return None
    start = min(s.start for s in spans if s.start is not None)
    last = max(spans, key=_end_key)
    end, more = last.end, last.more
    assert end is not None
    # windows of one freeze that follow on from each other are one freeze
    while not more:
        if end - t > HORIZON:
            more = True
            break
        after = [s for s in (Window.of(w).covering(end) for w in spec.windows) if s is not None]
        if not after:
            break
        last = max(after, key=_end_key)
        assert last.end is not None
        end, more = last.end, last.more
    if spec.start is not None:
        start = max(start, spec.start)
    if spec.until is not None and end >= spec.until:
        end, more = spec.until, False
    return Span(start, end, more)


def _end_key(s: Span) -> datetime.datetime:
    return s.end or datetime.datetime.max.replace(tzinfo=UTC)


def next_start(spec: FreezeSpec, t: datetime.datetime) -> datetime.datetime | None:
    """When the freeze next starts to apply after `t` (None: never again, or it is manual
    and applies already)."""
    if spec.start is not None and spec.start > t:
        if applies(spec, spec.start) is not None:
            return spec.start  # manual, or a window already open when the freeze starts
        t = spec.start
    if not spec.windows:
        return None
    first = min(Window.of(w).next_start(t) for w in spec.windows)
    if spec.until is not None and first >= spec.until:
        return None
    return first
