"""When a Freeze applies and until when (okra_controllers.freeze): recurring windows on a
time zone's wall clock (clocks going forward and back, windows over midnight, windows that
overlap or touch), manual freezes, the bounds `start` and `until`, several freezes over one
object, scope by namespace and selector, and a Freeze the manager cannot read."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.freeze import Freeze, FreezeWindow
from okra_controllers.freeze import Hold, Invalid, applies, hold_at, next_start, parse
from okra_controllers.freeze.windows import HORIZON

UTC = datetime.UTC


def at(text: str) -> datetime.datetime:
    """An instant: `2026-03-29T01:00:00Z` or with an offset (`...+02:00`)."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def freeze(
    name: str = "f",
    *,
    windows: list[dict[str, str]] | None = None,
    ns: str = "team",
    selector: dict[str, Any] | None = None,
    **spec: Any,
) -> Freeze:
    body: dict[str, Any] = {"reason": spec.pop("reason", "change freeze"), **spec}
    if windows is not None:
        body["windows"] = windows
    if selector is not None:
        body["selector"] = selector
    return Freeze.model_validate({"metadata": {"name": name, "namespace": ns}, "spec": body})


def window(schedule: str, duration: str, tz: str = "UTC") -> dict[str, str]:
    return {"schedule": schedule, "duration": duration, "timeZone": tz}


def span_of(f: Freeze, t: str) -> tuple[str, str] | None:
    s = applies(f.spec, at(t))
    if s is None:
        return None
    assert s.end is not None
    return (
        s.start.isoformat().replace("+00:00", "Z") if s.start else "-",
        s.end.isoformat().replace("+00:00", "Z"),
    )


# -- one recurring window ------------------------------------------------------------------

NIGHTLY = freeze(windows=[window("0 22 * * *", "10h")])  # 22:00 to 08:00 UTC, over midnight


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        ("2026-06-10T21:59:59Z", None),
        ("2026-06-10T22:00:00Z", ("2026-06-10T22:00:00Z", "2026-06-11T08:00:00Z")),
        ("2026-06-10T23:59:59Z", ("2026-06-10T22:00:00Z", "2026-06-11T08:00:00Z")),
        ("2026-06-11T00:00:00Z", ("2026-06-10T22:00:00Z", "2026-06-11T08:00:00Z")),
        ("2026-06-11T07:59:59Z", ("2026-06-10T22:00:00Z", "2026-06-11T08:00:00Z")),
        ("2026-06-11T08:00:00Z", None),  # the end is not in the window
        ("2026-06-11T12:00:00Z", None),
    ],
)
def test_window_over_midnight(t: str, expected: tuple[str, str] | None) -> None:
    assert span_of(NIGHTLY, t) == expected


# Europe/Paris: 2026-03-29 02:00 CET -> 03:00 CEST; 2026-10-25 03:00 CEST -> 02:00 CET.
WEEKEND_PARIS = freeze(windows=[window("0 18 * * 5", "62h", "Europe/Paris")])


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        # an ordinary weekend: Friday 18:00 CEST to Monday 08:00 CEST
        ("2026-06-12T15:59:59Z", None),
        ("2026-06-12T16:00:00Z", ("2026-06-12T16:00:00Z", "2026-06-15T06:00:00Z")),
        ("2026-06-15T05:59:59Z", ("2026-06-12T16:00:00Z", "2026-06-15T06:00:00Z")),
        ("2026-06-15T06:00:00Z", None),
        # the clocks go forward on Sunday: Friday 18:00 CET (17:00Z) to Monday 08:00 CEST
        # (06:00Z): 61 hours of real time, as the wall clock says
        ("2026-03-27T16:59:59Z", None),
        ("2026-03-27T17:00:00Z", ("2026-03-27T17:00:00Z", "2026-03-30T06:00:00Z")),
        ("2026-03-30T05:59:59Z", ("2026-03-27T17:00:00Z", "2026-03-30T06:00:00Z")),
        ("2026-03-30T06:00:00Z", None),
        # the clocks go back on Sunday: Friday 18:00 CEST (16:00Z) to Monday 08:00 CET
        # (07:00Z): 63 hours
        ("2026-10-23T16:00:00Z", ("2026-10-23T16:00:00Z", "2026-10-26T07:00:00Z")),
        ("2026-10-26T06:30:00Z", ("2026-10-23T16:00:00Z", "2026-10-26T07:00:00Z")),
        ("2026-10-26T07:00:00Z", None),
    ],
)
def test_weekend_window_over_clock_changes(t: str, expected: tuple[str, str] | None) -> None:
    assert span_of(WEEKEND_PARIS, t) == expected


@pytest.mark.parametrize(
    ("schedule", "duration", "t", "expected"),
    [
        # 02:30 does not exist on 2026-03-29 in Paris: the window opens at 03:30 CEST
        # (01:30Z), as much later as the clocks moved, and lasts its 30 minutes
        ("30 2 29 3 *", "30m", "2026-03-29T01:29:59Z", None),
        (
            "30 2 29 3 *",
            "30m",
            "2026-03-29T01:30:00Z",
            ("2026-03-29T01:30:00Z", "2026-03-29T02:00:00Z"),
        ),
        # from 01:30 CET for an hour: the end, 02:30, does not exist; it ends at 03:30
        # CEST (01:30Z): never shorter than the wall clock says
        (
            "30 1 29 3 *",
            "1h",
            "2026-03-29T01:15:00Z",
            ("2026-03-29T00:30:00Z", "2026-03-29T01:30:00Z"),
        ),
        # 02:30 happens twice on 2026-10-25: the window opens the first time (00:30Z)
        (
            "30 2 25 10 *",
            "20m",
            "2026-10-25T00:30:00Z",
            ("2026-10-25T00:30:00Z", "2026-10-25T01:50:00Z"),
        ),
        # ... and its end, 02:50, is read the second time (01:50Z): open 80 minutes
        (
            "30 2 25 10 *",
            "20m",
            "2026-10-25T01:49:59Z",
            ("2026-10-25T00:30:00Z", "2026-10-25T01:50:00Z"),
        ),
        ("30 2 25 10 *", "20m", "2026-10-25T01:50:00Z", None),
        # from 01:00 CEST for 3h (wall clock): ends 04:00 CET, 4 hours of real time
        (
            "0 1 25 10 *",
            "3h",
            "2026-10-25T02:59:59Z",
            ("2026-10-24T23:00:00Z", "2026-10-25T03:00:00Z"),
        ),
    ],
)
def test_window_starting_or_ending_when_the_clocks_change(
    schedule: str, duration: str, t: str, expected: tuple[str, str] | None
) -> None:
    assert span_of(freeze(windows=[window(schedule, duration, "Europe/Paris")]), t) == expected


def test_daily_window_keeps_its_wall_clock_time_across_a_change() -> None:
    """09:00-17:00 New York (2026-03-08: clocks forward; 2026-11-01: back) is always
    09:00-17:00 on the wall clock: its instant moves by the hour the clocks moved."""
    f = freeze(windows=[window("0 9 * * *", "8h", "America/New_York")])
    assert span_of(f, "2026-03-07T14:00:00Z") == ("2026-03-07T14:00:00Z", "2026-03-07T22:00:00Z")
    assert span_of(f, "2026-03-08T13:30:00Z") == ("2026-03-08T13:00:00Z", "2026-03-08T21:00:00Z")
    assert span_of(f, "2026-03-08T21:00:00Z") is None
    assert span_of(f, "2026-10-31T13:00:00Z") == ("2026-10-31T13:00:00Z", "2026-10-31T21:00:00Z")
    assert span_of(f, "2026-11-01T21:30:00Z") == ("2026-11-01T14:00:00Z", "2026-11-01T22:00:00Z")


def test_half_hour_clock_change() -> None:
    """Lord Howe Island's clocks move by 30 minutes (2026-04-05 02:00 -> 01:30): an end
    read twice is read the second time."""
    f = freeze(windows=[window("0 1 5 4 *", "45m", "Australia/Lord_Howe")])
    # 01:00 +11:00 = 14:00Z on the 4th; 01:45 read at +10:30 = 15:15Z
    assert span_of(f, "2026-04-04T15:14:59Z") == ("2026-04-04T14:00:00Z", "2026-04-04T15:15:00Z")
    assert span_of(f, "2026-04-04T15:15:00Z") is None


# -- windows that overlap or touch -----------------------------------------------------------


def test_overlapping_occurrences_of_one_window_are_one_freeze() -> None:
    """Every 6 hours for 8 hours: always frozen; until when is as far as the windows were
    followed (the rollout is looked at again then)."""
    f = freeze(windows=[window("0 */6 * * *", "8h")])
    s = applies(f.spec, at("2026-06-10T07:00:00Z"))
    assert s is not None
    assert s.end is not None
    assert s.more
    assert s.end >= at("2026-06-10T07:00:00Z") + HORIZON
    h = hold_at([f], "team", {}, at("2026-06-10T07:00:00Z"))
    assert h is not None
    assert h.more
    assert h.describe().startswith("freeze f (change freeze) until at least 2026-07-1")


def test_windows_that_touch_are_one_freeze() -> None:
    f = freeze(windows=[window("0 8 * * 1-5", "4h"), window("0 12 * * 1-5", "2h")])
    assert span_of(f, "2026-06-10T09:00:00Z") == ("2026-06-10T08:00:00Z", "2026-06-10T14:00:00Z")
    assert span_of(f, "2026-06-10T13:00:00Z") == ("2026-06-10T12:00:00Z", "2026-06-10T14:00:00Z")
    assert span_of(f, "2026-06-10T14:00:00Z") is None
    assert span_of(f, "2026-06-13T09:00:00Z") is None  # a Saturday


def test_two_windows_with_a_gap_are_two() -> None:
    f = freeze(windows=[window("0 8 * * *", "1h"), window("0 10 * * *", "1h")])
    assert span_of(f, "2026-06-10T08:30:00Z") == ("2026-06-10T08:00:00Z", "2026-06-10T09:00:00Z")
    assert span_of(f, "2026-06-10T09:30:00Z") is None
    assert next_start(f.spec, at("2026-06-10T08:30:00Z")) == at("2026-06-10T10:00:00Z")


# -- start and until -------------------------------------------------------------------------


def test_manual_freeze() -> None:
    f = freeze()  # no windows, no bounds: until deleted
    s = applies(f.spec, at("2026-06-10T00:00:00Z"))
    assert s is not None
    assert s.start is None
    assert s.end is None
    g = freeze(start="2026-06-10T10:00:00Z", until="2026-06-10T12:00:00Z")
    assert span_of(g, "2026-06-10T09:59:59Z") is None
    assert span_of(g, "2026-06-10T10:00:00Z") == ("2026-06-10T10:00:00Z", "2026-06-10T12:00:00Z")
    assert span_of(g, "2026-06-10T12:00:00Z") is None
    assert next_start(g.spec, at("2026-06-10T09:00:00Z")) == at("2026-06-10T10:00:00Z")
    assert next_start(g.spec, at("2026-06-10T11:00:00Z")) is None


def test_start_and_until_bound_the_windows() -> None:
    f = freeze(
        windows=[window("0 22 * * *", "10h")],
        start="2026-06-11T03:00:00Z",
        until="2026-06-12T05:00:00Z",
    )
    assert span_of(f, "2026-06-11T02:00:00Z") is None  # a window, but before start
    assert span_of(f, "2026-06-11T03:00:00Z") == ("2026-06-11T03:00:00Z", "2026-06-11T08:00:00Z")
    assert span_of(f, "2026-06-11T23:00:00Z") == ("2026-06-11T22:00:00Z", "2026-06-12T05:00:00Z")
    assert span_of(f, "2026-06-12T05:00:00Z") is None
    # the freeze starts inside an open window: it applies from its start
    assert next_start(f.spec, at("2026-06-11T01:00:00Z")) == at("2026-06-11T03:00:00Z")
    assert next_start(f.spec, at("2026-06-11T09:00:00Z")) == at("2026-06-11T22:00:00Z")
    assert next_start(f.spec, at("2026-06-12T01:00:00Z")) is None


# -- several freezes over one object ---------------------------------------------------------


def test_hold_names_every_freeze_and_ends_when_none_applies() -> None:
    nightly = freeze("nightly", windows=[window("0 22 * * *", "10h")], reason="nights")
    incident = freeze("incident", until="2026-06-11T09:00:00Z", reason="INC-42", author="alice")
    morning = freeze("morning", windows=[window("30 8 * * *", "2h")], reason="standup")
    h = hold_at([nightly, incident, morning], "team", {}, at("2026-06-10T23:00:00Z"))
    assert h is not None
    assert h.names == ("incident", "nightly")
    # nightly to 08:00, incident to 09:00, morning from 08:30 to 10:30: frozen until 10:30
    assert h.until == at("2026-06-11T10:30:00Z")
    assert h.describe() == (
        "freeze incident (INC-42, by alice) until 2026-06-11T09:00:00Z; "
        "freeze nightly (nights) until 2026-06-11T08:00:00Z; "
        "frozen until 2026-06-11T10:30:00Z"
    )
    assert hold_at([nightly, incident, morning], "team", {}, at("2026-06-11T10:30:00Z")) is None


def test_a_freeze_with_no_end_makes_the_hold_endless() -> None:
    nightly = freeze("nightly", windows=[window("0 22 * * *", "10h")])
    forever = freeze("forever", start="2026-06-11T07:00:00Z")
    h = hold_at([nightly, forever], "team", {}, at("2026-06-10T23:00:00Z"))
    assert h is not None
    assert h.names == ("nightly",)
    assert h.until is None
    assert h.describe().endswith("until 2026-06-11T08:00:00Z")


def test_scope_namespace_and_selector() -> None:
    team = freeze("team-web", selector={"matchLabels": {"team": "web"}})
    not_db = freeze(
        "not-db",
        selector={"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]},
    )
    other = freeze("other", ns="elsewhere")
    t = at("2026-06-10T00:00:00Z")
    fs = [team, not_db, other]

    def names(ns: str, labels: dict[str, str]) -> tuple[str, ...]:
        h = hold_at(fs, ns, labels, t)
        return h.names if h else ()

    assert names("team", {"team": "web", "tier": "db"}) == ("team-web",)
    assert names("team", {"team": "api"}) == ("not-db",)
    assert names("team", {"tier": "db"}) == ()
    assert names("elsewhere", {"tier": "db"}) == ("other",)
    assert names("third", {}) == ()


# -- what is refused, and a Freeze the manager cannot read -----------------------------------


@pytest.mark.parametrize(
    ("w", "field"),
    [
        ({"schedule": "0 25 * * *", "duration": "1h"}, "schedule"),
        ({"schedule": "every day", "duration": "1h"}, "schedule"),
        ({"schedule": "0 0 * * * *", "duration": "1h"}, "schedule"),  # six fields
        ({"schedule": "0 0 * * *", "duration": "0h"}, "duration"),
        ({"schedule": "0 0 * * *", "duration": "1d"}, "duration"),
        ({"schedule": "0 0 * * *", "duration": "1h", "timeZone": "Mars/Olympus"}, "timeZone"),
    ],
)
def test_bad_window_is_refused_naming_the_field(w: dict[str, str], field: str) -> None:
    with pytest.raises(ValidationError) as e:
        FreezeWindow.model_validate(w)
    assert field in str(e.value)


def test_until_before_start_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"spec\.until must be after spec\.start"):
        freeze(start="2026-06-10T10:00:00Z", until="2026-06-10T09:00:00Z")


def test_unreadable_freeze_holds_its_scope_and_says_why() -> None:
    raw: dict[str, Any] = {
        "metadata": {"name": "typo", "namespace": "team"},
        "spec": {
            "reason": "holidays",
            "selector": {"matchLabels": {"team": "web"}},
            "windows": [{"schedule": "0 18 * * 5", "duration": "62h", "timeZone": "Paris"}],
        },
    }
    f = parse(raw)
    assert isinstance(f, Invalid)
    assert "spec.windows.0.timeZone" in f.problem
    t = at("2026-06-10T00:00:00Z")
    h = hold_at([f], "team", {"team": "web"}, t)
    assert isinstance(h, Hold)
    assert h.until is None
    assert "freeze typo (holidays), which is invalid (spec.windows.0.timeZone" in h.describe()
    assert hold_at([f], "team", {"team": "api"}, t) is None  # its selector still reads
    bad_selector = parse({**raw, "spec": {**raw["spec"], "selector": {"matchLabels": 3}}})
    assert hold_at([bad_selector], "team", {"team": "api"}, t) is not None


# -- properties ------------------------------------------------------------------------------

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


@settings(max_examples=300, deadline=None)
@given(
    minute=st.integers(0, 59),
    hour=st.integers(0, 23),
    dow=st.sampled_from(["*", "1-5", "0,6", "3"]),
    duration_min=st.integers(1, 60 * 80),
    zone=st.sampled_from(ZONES),
    t=st.datetimes(
        min_value=datetime.datetime(2026, 1, 1),
        max_value=datetime.datetime(2027, 12, 31),
        timezones=st.just(UTC),
    ),
)
def test_a_freeze_applies_exactly_until_the_end_it_gives(
    minute: int, hour: int, dow: str, duration_min: int, zone: str, t: datetime.datetime
) -> None:
    """Wherever it says a freeze applies, it applies at every instant until the end it
    gave, not at the end; and where it says it does not, the next start it gives is after
    t and the freeze does not apply just before that start."""
    f = freeze(windows=[window(f"{minute} {hour} * * {dow}", f"{duration_min}m", zone)])
    s = applies(f.spec, t)
    if s is not None:
        assert s.end is not None
        assert s.start is not None
        assert s.start <= t < s.end
        for frac in (0.25, 0.5, 0.99):
            assert applies(f.spec, t + (s.end - t) * frac) is not None
        if s.more:
            assert s.end - t > HORIZON  # followed that far: a window that never closes
        else:
            assert applies(f.spec, s.end) is None
    else:
        n = next_start(f.spec, t)
        assert n is not None
        assert n > t
        assert applies(f.spec, n) is not None
        assert applies(f.spec, n - datetime.timedelta(seconds=1)) is None or (
            n - datetime.timedelta(seconds=1) <= t
        )
