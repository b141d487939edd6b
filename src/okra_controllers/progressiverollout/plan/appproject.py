"""Argo CD's AppProject rules, as its application-controller applies them to a sync: pure
functions of the project, the Application and the time.

- Destinations (`spec.destinations`): an Application's cluster (server or name) and namespace
  must match an entry, and no `!`-negated entry may exclude them; with
  `permitOnlyProjectScopedClusters`, the cluster must also belong to the project (its Secret's
  `project`). Patterns are Argo CD's globs: `*`, `?`, `[a-z]`, `[!a]`, `{a,b}`, `\\` escapes.
- Sync windows (`spec.syncWindows`): the windows whose `applications`, `clusters` or
  `namespaces` match the Application (any of them; all that are set with `andOperator`); a
  window with none of them matches nothing. An active `deny` window refuses the sync, unless
  every active deny window has `manualSync` and the sync is manual; otherwise an active
  `allow` window lets it; otherwise, if there are allow windows and none is active, the sync
  is refused unless all of them have `manualSync` and it is manual. `syncOverrun` lets a sync
  that started while it was allowed go on. A window Argo CD cannot read (schedule, duration)
  refuses every sync of the Applications it matches.

okra's syncs are manual syncs to Argo CD (`initiatedBy.automated` is false). The window's
occurrences are read on the wall clock of its `timeZone` (UTC when left out or unknown, as
Argo CD does) by the Freeze kind's `Window`.
"""

from __future__ import annotations

import datetime
import functools
import re
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from croniter import croniter

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.freeze import Span, Window


class WindowError(ValueError):
    """A sync window Argo CD cannot read: it refuses every sync it matches."""


@dataclass(frozen=True)
class SyncWindow:
    kind: str
    schedule: str
    duration: str
    applications: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    manual_sync: bool = False
    time_zone: str = ""
    and_operator: bool = False
    sync_overrun: bool = False
    description: str = ""
    index: int = 0
    """Its place in `spec.syncWindows`: how the status names it."""

    def describe(self) -> str:
        what = f"{self.kind} window {self.index} ({self.schedule!r} for {self.duration}"
        what += f", {self.time_zone})" if self.time_zone else ")"
        return f"{what}: {self.description}" if self.description else what

    def window(self) -> Window:
        """The Freeze kind's `Window` for it; raises `WindowError` as Argo CD would refuse it."""
        return _window(self.schedule, self.duration, self.time_zone)

    def covering(self, t: datetime.datetime) -> Span | None:
        """The occurrence open at `t` (None: none is; a window of no duration never is)."""
        w = self.window()
        return None if w.duration <= datetime.timedelta(0) else w.covering(t)


@dataclass(frozen=True)
class Destination:
    server: str = ""
    name: str = ""
    namespace: str = ""


@dataclass(frozen=True)
class Project:
    name: str
    destinations: tuple[Destination, ...] = ()
    windows: tuple[SyncWindow, ...] = ()
    scoped_only: bool = False
    """`permitOnlyProjectScopedClusters`."""


def _strings(v: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in v) if isinstance(v, list) else ()


def parse_project(raw: Mapping[str, Any]) -> Project:
    """A Project from an AppProject as the API server holds it (Argo CD's schema)."""
    spec = raw.get("spec") or {}
    dests = tuple(
        Destination(
            str(d.get("server") or ""), str(d.get("name") or ""), str(d.get("namespace") or "")
        )
        for d in spec.get("destinations") or []
        if isinstance(d, dict)
    )
    windows = tuple(
        SyncWindow(
            kind=str(w.get("kind") or ""),
            schedule=str(w.get("schedule") or ""),
            duration=str(w.get("duration") or ""),
            applications=_strings(w.get("applications")),
            namespaces=_strings(w.get("namespaces")),
            clusters=_strings(w.get("clusters")),
            manual_sync=bool(w.get("manualSync")),
            time_zone=str(w.get("timeZone") or ""),
            and_operator=bool(w.get("andOperator")),
            sync_overrun=bool(w.get("syncOverrun")),
            description=str(w.get("description") or ""),
            index=i,
        )
        for i, w in enumerate(spec.get("syncWindows") or [])
        if isinstance(w, dict)
    )
    return Project(
        name=str((raw.get("metadata") or {}).get("name") or ""),
        destinations=dests,
        windows=windows,
        scoped_only=bool(spec.get("permitOnlyProjectScopedClusters")),
    )


# -- globs ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _glob(pattern: str) -> re.Pattern[str] | None:
    """Argo CD's glob (gobwas/glob without separators) as a regular expression; None for a
    pattern it cannot compile (which matches nothing)."""
    out: list[str] = []
    depth, i = 0, 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 1
            if i == len(pattern):
                return None
            out.append(re.escape(pattern[i]))
        elif ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            end = pattern.find("]", i + 1)
            body = pattern[i + 1 : end] if end > 0 else ""
            negated = body.startswith("!")
            body = body[1:] if negated else body
            if not body:
                return None
            body = body.replace("\\", "\\\\").replace("^", "\\^").replace("[", "\\[")
            out.append(f"[{'^' if negated else ''}{body}]")
            i = end
        elif ch == "{":
            depth += 1
            out.append("(?:")
        elif ch == "," and depth:
            out.append("|")
        elif ch == "}" and depth:
            depth -= 1
            out.append(")")
        else:
            out.append(re.escape(ch))
        i += 1
    if depth:
        return None
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error:
        return None


def glob_match(pattern: str, value: str, *, negation: bool = False) -> bool:
    """Argo CD's `globMatch`: with `negation`, a pattern `!p` matches what `p` does not."""
    if negation and pattern.startswith("!"):
        return not glob_match(pattern[1:], value)
    if pattern == "*":
        return True
    compiled = _glob(pattern)
    return compiled is not None and compiled.fullmatch(value) is not None


# -- destinations -----------------------------------------------------------------------


def destination_permitted(
    project: Project, server: str, name: str, namespace: str, cluster_project: str = ""
) -> bool:
    """Argo CD's `IsDestinationPermitted` for a cluster (its server and name, as its Secret
    says) and a namespace."""
    matched = False
    for item in project.destinations:
        name_ok = bool(name) and glob_match(item.name, name, negation=True)
        server_ok = bool(server) and glob_match(item.server, server, negation=True)
        ns_ok = glob_match(item.namespace, namespace, negation=True)
        denied_cluster = (not name_ok and item.name.startswith("!")) or (
            not server_ok and item.server.startswith("!")
        )
        denied_namespace = not ns_ok and item.namespace.startswith("!") and server_ok
        if (server_ok or name_ok) and ns_ok:
            matched = True
        elif (denied_cluster and ns_ok) or denied_namespace:
            return False
    if matched and project.scoped_only:
        return cluster_project == project.name
    return matched


# -- sync windows -----------------------------------------------------------------------


def matching_windows(
    windows: Sequence[SyncWindow],
    application: str,
    dest_server: str,
    dest_name: str,
    dest_namespace: str,
) -> list[SyncWindow]:
    """Argo CD's `SyncWindows.Matches`: the windows about an Application (its name and its
    `spec.destination` as written)."""
    out = []
    for w in windows:
        matched = is_set = False
        if w.applications:
            is_set = True
            matched = any(glob_match(a, application) for a in w.applications)
        if w.and_operator and is_set and not matched:
            continue
        if not w.and_operator and matched:
            out.append(w)
            continue
        if w.clusters:
            is_set = True
            matched = any(
                (bool(dest_name) and glob_match(c, dest_name))
                or (bool(dest_server) and glob_match(c, dest_server))
                for c in w.clusters
            )
        if w.and_operator and is_set and not matched:
            continue
        if not w.and_operator and matched:
            out.append(w)
            continue
        if w.namespaces:
            matched = any(glob_match(n, dest_namespace) for n in w.namespaces)
        if matched:
            out.append(w)
    return out


@dataclass(frozen=True)
class Verdict:
    """Whether Argo CD would run a sync now; if not, why and until when (None: unknown)."""

    allowed: bool
    windows: tuple[SyncWindow, ...] = ()
    """The windows that refuse it."""
    reason: str = ""
    until: datetime.datetime | None = None


def can_sync(
    windows: Sequence[SyncWindow],
    t: datetime.datetime,
    *,
    manual: bool,
    started: datetime.datetime | None = None,
) -> Verdict:
    """Argo CD's `SyncWindows.CanSync` over the windows matching an Application, at `t`, for
    a manual sync or not, of an operation that started at `started` (for `syncOverrun`)."""
    if not windows:
        return Verdict(True)
    spans: list[tuple[SyncWindow, Span | None]] = []
    for w in windows:
        try:
            spans.append((w, w.covering(t)))
        except WindowError as e:
            return Verdict(False, (w,), f"sync window {w.index} is invalid: {e}")
    active = [(w, s) for w, s in spans if s is not None]
    deny = [(w, s) for w, s in active if w.kind == "deny"]
    if deny:
        if manual and all(w.manual_sync for w, _ in deny):
            return Verdict(True)
        if (
            started is not None
            and all(w.sync_overrun for w, _ in deny)
            and can_sync(windows, started, manual=manual).allowed
        ):
            return Verdict(True)
        ends = [s.end for _, s in deny]
        until = None if None in ends else max(e for e in ends if e is not None)
        return Verdict(False, tuple(w for w, _ in deny), "in a deny window", until)
    if any(w.kind == "allow" for w, _ in active):
        return Verdict(True)
    inactive = [w for w, s in spans if w.kind == "allow" and s is None]
    if not inactive:
        return Verdict(True)
    if manual and all(w.manual_sync for w in inactive):
        return Verdict(True)
    if (
        started is not None
        and all(w.sync_overrun for w in inactive)
        and can_sync(windows, started, manual=manual).allowed
    ):
        return Verdict(True)
    until = min(w.window().next_start(t) for w in inactive)
    return Verdict(False, tuple(inactive), "outside every allow window", until)


@functools.lru_cache(maxsize=256)
def _window(schedule: str, duration: str, time_zone: str) -> Window:
    fields = schedule.split()
    if len(fields) != 5 or not croniter.is_valid(schedule):
        raise WindowError(f"cannot parse schedule {schedule!r}: five cron fields expected")
    for part in fields[4].split(","):
        for n in re.findall(r"\d+", part.split("/")[0]):
            if int(n) > 6:
                raise WindowError(
                    f"cannot parse schedule {schedule!r}: day of week {n} is beyond 0-6"
                )
    try:
        seconds = parse_duration(duration) if duration.strip() != "0" else 0.0
    except ValueError as e:
        raise WindowError(f"cannot parse duration {duration!r}: {e}") from None
    try:
        zone = time_zone or "UTC"
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = "UTC"  # as Argo CD: an unknown time zone is read as UTC
    return Window(schedule, datetime.timedelta(seconds=seconds), zone)
