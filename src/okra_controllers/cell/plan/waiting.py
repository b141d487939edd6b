"""Waiting: which version the Cell heads for, which serves, and who waits for replicas.

Nothing moves until a version is desired: `spec.version` if set, else the highest
non-blocked version with at least `replicas` target groups. A newer version with
fewer is reported as waiting (condition `ReplicasReady`), so a user sees why a
version they deployed gets no traffic yet.
"""

from __future__ import annotations

from okra_controllers.cell.plan.model import Event, Observed, Plan
from okra_controllers.cell.plan.status import add_to_message, condition
from okra_controllers.cell.versions import Version


def serving_version(o: Observed) -> str | None:
    """The stable version: recorded in status if it still has target groups, else the
    version holding most weight in the config."""
    by_version = o.grouped.by_version
    if o.status.stable_version in by_version:
        return o.status.stable_version
    if not o.forward:
        return None
    totals: dict[str, int] = {}
    for f in o.forward:
        if f.version in by_version:
            totals[f.version] = totals.get(f.version, 0) + f.weight
    return max(totals, key=lambda v: (totals[v], v)) if totals else None


def desired(o: Observed) -> tuple[Version | None, str]:
    """The version the Cell heads for, or None and why none is."""
    g, spec = o.grouped, o.spec
    if spec.version:
        match = pinned_version(o)
        if match is None:
            return None, f"spec.version {spec.version} has no target groups"
        if match.text in o.blocked:
            return None, (
                f"spec.version {spec.version} is blocked ({o.blocked[match.text]}); "
                "remove it from the VersionBlocklist (okra retry) to use it"
            )
        if _short_of_replicas(o, match):
            return None, (
                f"spec.version {spec.version} waits for {spec.replicas} target group(s) "
                f"(has {len(g.by_version[match.text])})"
            )
        return match, ""
    eligible = [
        v
        for v in g.versions
        if len(g.by_version[v.text]) >= spec.replicas and v.text not in o.blocked
    ]
    if eligible:
        return max(eligible, key=lambda v: v.parsed), ""
    if not g.versions:
        return None, "no AWSTargetGroups match the target group selector"
    return None, (
        f"waiting for a version with at least {spec.replicas} target group(s) "
        f"(have: {', '.join(f'{v.text}={len(g.by_version[v.text])}' for v in g.versions)})"
    )


def pinned_version(o: Observed) -> Version | None:
    """The version `spec.version` names, among those with target groups."""
    pinned = o.spec.version or ""
    return next(
        (v for v in o.grouped.versions if v.text == pinned or str(v.parsed) == pinned.lstrip("vV")),
        None,
    )


def _short_of_replicas(o: Observed, pinned: Version) -> bool:
    """A pinned version the Cell would move towards (above the serving one, or nothing
    serves) has fewer than `replicas` target groups. Traffic moving to it now would go
    to the ones that exist, then be split again as the others arrive: a strict subset of
    the version's clusters served first, which `replicas` exists to prevent (a system
    Cell pins each application's Cell with `replicas` = its clusters). Going back to a
    lower version never waits."""
    if len(o.grouped.by_version[pinned.text]) >= o.spec.replicas:
        return False
    serving = serving_version(o)
    if serving is None:
        return True
    current = next((v for v in o.grouped.versions if v.text == serving), None)
    return current is None or pinned.parsed > current.parsed


def waiting(o: Observed) -> tuple[Version, int] | None:
    """The newest version above every other that waits for `replicas` target groups
    (not blocked), with how many it has; a pinned version, when it waits for them."""
    g = o.grouped
    if o.spec.version:
        pinned = pinned_version(o)
        if pinned is None or pinned.text in o.blocked or not _short_of_replicas(o, pinned):
            return None
        return pinned, len(g.by_version[pinned.text])
    if not g.versions:
        return None
    newest = max(g.versions, key=lambda v: v.parsed)
    have = len(g.by_version[newest.text])
    if have >= o.spec.replicas or newest.text in o.blocked:
        return None
    return newest, have


def report_waiting(p: Plan, o: Observed) -> None:
    """Condition `ReplicasReady` (and an Event when it turns False or its message
    changes): a newer version exists but has fewer target groups than `replicas`."""
    version_have = waiting(o)
    old = next((c for c in p.status.conditions or [] if c.type == "ReplicasReady"), None)
    if version_have is None:
        if old is not None and old.status == "False":
            condition(
                p.status,
                "ReplicasReady",
                True,
                "Ready",
                "no version waits for replicas",
                o.now,
                o.generation,
            )
        return
    version, have = version_have
    message = f"waiting for {version.text}: {have} of {o.spec.replicas} target groups"
    condition(p.status, "ReplicasReady", False, "WaitingForReplicas", message, o.now, o.generation)
    if old is None or old.status != "False" or old.message != message:
        p.events.append(Event("Normal", "WaitingForReplicas", message))
    add_to_message(p.status, message)
