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
        match = next(
            (
                v
                for v in g.versions
                if v.text == spec.version or str(v.parsed) == spec.version.lstrip("vV")
            ),
            None,
        )
        if match is None:
            return None, f"spec.version {spec.version} has no target groups"
        if match.text in o.blocked:
            return None, (
                f"spec.version {spec.version} is blocked ({o.blocked[match.text]}); "
                "remove it from the VersionBlocklist (okra retry) to use it"
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


def waiting(o: Observed) -> tuple[Version, int] | None:
    """The newest version above every other that waits for `replicas` target groups
    (not pinned, not blocked), with how many it has."""
    if o.spec.version:
        return None
    g = o.grouped
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
