"""Small pure helpers: percent-or-count limits, selectors, the target revision, and which
clusters a stage holds (`select_members`: recorded, then new ones spread over topology values).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping

from okra_controllers.api.v1alpha1.progressiverollout import (
    ClusterSelector,
    ClusterStatus,
    Stage,
    StageStatus,
)
from okra_controllers.progressiverollout.plan.model import App
from okra_runtime.labels import selector_from_dict


def scaled(value: int | str, total: int, *, round_up: bool) -> int:
    """An int, or a percent of `total` (rounded up or down)."""
    if isinstance(value, int):
        return value
    pct = int(value.rstrip("%"))
    exact = pct * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def max_unavailable(stage: Stage, members: int) -> int:
    return max(1, scaled(stage.max_unavailable, members, round_up=False))


def max_clusters(stage: Stage, selected: int) -> int:
    return min(selected, scaled(stage.max_clusters, selected, round_up=True))


def matches(selector: ClusterSelector, labels: Mapping[str, str]) -> bool:
    return selector_from_dict(
        selector.model_dump(by_alias=True, exclude_none=True, mode="json")
    ).matches(labels)


def target_revision(apps: tuple[App, ...]) -> str | None:
    """The revision Argo CD resolved most recently for the ApplicationSet's source."""
    known = [a for a in apps if a.sync_revision]
    if not known:
        return None
    epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    newest = max(known, key=lambda a: (a.reconciled_at or epoch, a.sync_revision))
    return newest.sync_revision


def short(revision: str | None) -> str:
    return (revision or "")[:12]


def select_members(
    stage: Stage, recorded: list[ClusterStatus], apps: Mapping[str, App], *, open_: bool
) -> list[ClusterStatus]:
    """The stage's clusters: those recorded (still existing), then, while the stage is open,
    new ones up to maxClusters, spread over topology values, by name."""
    selected = sorted(
        (a for a in apps.values() if matches(stage.clusters.selector, a.labels)),
        key=lambda a: a.cluster,
    )
    kept = [
        c
        for c in recorded
        if c.application in apps
        and (c.phase != "Pending" or any(a.name == c.application for a in selected))
    ]
    if not open_:
        return kept
    limit = max_clusters(stage, len(selected))
    have = {c.application for c in kept}
    key = stage.topology_key

    def domain(a: App) -> str | None:
        return a.labels.get(key) if key else None

    used: dict[str | None, int] = {}
    for c in kept:
        d = domain(apps[c.application])
        used[d] = used.get(d, 0) + 1
    candidates = [a for a in selected if a.name not in have]
    out = list(kept)
    while len(out) < limit and candidates:
        # The candidate whose topology value is least represented, then by name.
        best = min(candidates, key=lambda a: (used.get(domain(a), 0) if key else 0, a.cluster))
        candidates.remove(best)
        used[domain(best)] = used.get(domain(best), 0) + 1
        out.append(ClusterStatus(name=best.cluster, application=best.name))
    return out


def at_revision(app: App, revision: str) -> bool:
    """Deployed at `revision`, compared since, Synced and Healthy, nothing running."""
    return (
        app.deployed_revision == revision and app.fresh_at(revision) and not app.operation_running
    )


def completed(ss: StageStatus) -> bool:
    return ss.phase == "Completed"
