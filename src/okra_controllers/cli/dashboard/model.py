"""What the dashboard's pages show, as plain JSON-ready dicts: pure functions from the
objects as the informers hold them (no I/O), so every rule is unit-tested.

A Cell's row shows the weights *as AWS shows them*: the load balancer config's
`status.applied` (what okra last read back from AWS), summed by version, not the
weights okra wants. `synced` says whether that reading already equals what the
config asks for. Versions come from the Cell's `status.targetGroups` (each with its
version), so the row needs no AWSTargetGroup lookup.

Secrets are never read by the dashboard, so nothing here can carry a secret value.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.cell import Cell
from okra_controllers.cell.plan import weight_before
from okra_controllers.cli.actions import PAUSED, cell_actions
from okra_controllers.cli.render import describe_step, held_by, pause_seconds
from okra_runtime.timeutil import parse_time

Obj = dict[str, Any]
VERSION_LABEL = "okra.mumo.co/version"
MAX_HISTORY = 500
"""Points kept per Cell for the weights chart (the oldest go first)."""
MAX_EVENTS = 50
MAX_RUNS = 10
MAX_MEASUREMENTS = 30
BAKE_MESSAGE = re.compile(r"baking, \d+s left")
"""A baking cluster's message when all is well (the controller's countdown)."""


def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}


def key(obj: Obj) -> str:
    """`namespace/name`: how the pages name an object."""
    m = _meta(obj)
    return f"{m.get('namespace') or ''}/{m.get('name') or ''}"


def _iso(value: Any) -> str | None:
    when = parse_time(value) if isinstance(value, str) else value
    return when.isoformat() if isinstance(when, datetime.datetime) else None


# -- weights -------------------------------------------------------------------


def version_of_target_groups(cell: Obj) -> dict[str, str]:
    """arn and name -> version, from the Cell's `status.targetGroups`."""
    out: dict[str, str] = {}
    for tg in (cell.get("status") or {}).get("targetGroups") or []:
        version = tg.get("version")
        if version:
            out[str(tg.get("arn"))] = str(version)
            out[str(tg.get("name"))] = str(version)
    return out


def aws_weights(cell: Obj, config: Obj | None) -> dict[str, int] | None:
    """version -> weight as okra last read it from AWS (`status.applied` of the Cell's
    load balancer config: an ALB or NLB forward action, or Route 53 records); None
    before anything was applied. A target group of unknown version counts under its
    own name."""
    applied = ((config or {}).get("status") or {}).get("applied")
    if not applied:
        return None
    versions = version_of_target_groups(cell)
    out: dict[str, int] = {}
    entries = [
        (str(f.get("arn")), f.get("weight")) for f in applied.get("forwardTargetGroups") or []
    ]
    entries += [
        (str(r.get("setIdentifier")), r.get("weight")) for r in applied.get("records") or []
    ]
    for ident, weight in entries:
        version = versions.get(ident, ident.rsplit("/", 2)[-2] if "/" in ident else ident)
        out[version] = out.get(version, 0) + int(weight or 0)
    return out


def synced(config: Obj | None) -> bool:
    """The config's Synced condition is True for its current generation: AWS showed
    what okra asked for when it last looked."""
    if config is None:
        return False
    st = config.get("status") or {}
    cond = next((c for c in st.get("conditions") or [] if c.get("type") == "Synced"), None)
    return bool(
        cond
        and cond.get("status") == "True"
        and st.get("observedGeneration") == _meta(config).get("generation")
    )


def weight_list(cell: Obj, weights: Mapping[str, int] | None) -> list[Obj]:
    """Weights in display order (stable first, canary next, others by name), each with
    its role."""
    if not weights:
        return []
    st = cell.get("status") or {}
    stable, canary = st.get("stableVersion"), st.get("canaryVersion")

    def order(v: str) -> tuple[int, str]:
        return (0 if v == stable else 1 if v == canary else 2, v)

    return [
        {
            "version": v,
            "weight": weights[v],
            "role": "stable" if v == stable else "canary" if v == canary else "",
        }
        for v in sorted(weights, key=order)
    ]


def traffic_view(cell: Obj) -> Obj | None:
    """The Cell's last traffic reading (`spec.trafficConfirmation`), shown beside the
    weights as AWS shows them: each version's observed share, the verdict and why; None
    for a Cell with no reading."""
    t = (cell.get("status") or {}).get("traffic")
    if not isinstance(t, dict):
        return None
    return {
        "verdict": t.get("verdict") or "",
        "message": t.get("message") or "",
        "requests": t.get("requests") or 0,
        "versions": [
            {
                "version": v.get("version"),
                "planned": v.get("planned"),
                "observed": v.get("observed"),
                "requests": v.get("requests") or 0,
            }
            for v in t.get("versions") or []
        ],
    }


# -- the Cells list ------------------------------------------------------------


def _steps(cell: Obj) -> list[Obj]:
    canary = ((cell.get("spec") or {}).get("updateStrategy") or {}).get("canary") or {}
    steps = canary.get("steps") or []
    if not steps:
        steps = (((cell.get("spec") or {}).get("updateStrategy") or {}).get("blueGreen") or {}).get(
            "steps"
        ) or []
    return list(steps)


def analysis_state(cell: Obj, runs: Mapping[str, Obj]) -> str:
    """The phase of the current rollout's analyses: the worst of its runs (Failed,
    Error, Inconclusive, Running, Successful), `-` when it has none."""
    st = cell.get("status") or {}
    if not st.get("canaryVersion"):
        return "-"
    names = list((st.get("analysisRuns") or {}).values())
    phases = [((runs.get(n) or {}).get("status") or {}).get("phase") or "Pending" for n in names]
    for phase in ("Failed", "Error", "Inconclusive", "Running", "Pending", "Successful"):
        if phase in phases:
            return phase
    return "-"


def cell_row(
    cell: Obj, config: Obj | None, runs: Mapping[str, Obj], blocklist: Obj | None = None
) -> Obj:
    """One line of the Cells list; `actions`, why each action the Cell offers would not act
    now (None where it would: `cli.actions.cell_actions`, its Blocklist read for retry)."""
    meta, st = _meta(cell), cell.get("status") or {}
    total = len(_steps(cell))
    in_rollout = bool(st.get("canaryVersion"))
    index = st.get("currentStepIndex") if in_rollout else None
    annotations = meta.get("annotations") or {}
    return {
        "key": key(cell),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "phase": st.get("phase") or "Pending",
        "health": st.get("health") or "",
        "message": st.get("message") or "",
        "stable": st.get("stableVersion"),
        "canary": st.get("canaryVersion"),
        "step": (index or 0) + 1 if index is not None and total else None,
        "steps": total,
        "weights": weight_list(cell, aws_weights(cell, config)),
        "synced": synced(config),
        "traffic": traffic_view(cell),
        "analysis": analysis_state(cell, runs),
        "paused": annotations.get(PAUSED) == "true",
        "aborted": bool(st.get("aborted")),
        "actions": cell_actions(cell, blocklist),
    }


# -- one Cell ------------------------------------------------------------------


@dataclass
class History:
    """The weights AWS showed for each Cell over time, kept while the dashboard runs:
    a point is added when they change (the chart's data)."""

    points: dict[str, list[Obj]] = field(default_factory=dict)
    limit: int = MAX_HISTORY

    def record(
        self, cell_key: str, weights: Mapping[str, int] | None, at: datetime.datetime
    ) -> bool:
        """Add a point when `weights` differ from the last one; True when added."""
        if weights is None:
            return False
        series = self.points.setdefault(cell_key, [])
        if series and series[-1]["weights"] == dict(weights):
            return False
        series.append({"time": at.isoformat(), "weights": dict(weights)})
        del series[: -self.limit]
        return True

    def forget(self, cell_key: str) -> None:
        self.points.pop(cell_key, None)

    def of(self, cell_key: str) -> list[Obj]:
        return list(self.points.get(cell_key, []))


def step_timeline(cell: Obj, now: datetime.datetime) -> list[Obj]:
    """Each step: what it does, done / current / todo, and for the current pause the
    time left (seconds) or that it waits for a promote; a current step a freeze holds
    the rollout before has not begun, and says so."""
    try:
        model = Cell.model_validate(cell)
    except ValueError:
        return []
    st = model.status
    strategy = model.spec.update_strategy
    steps: Sequence[Any] = []
    if strategy.canary is not None:
        steps = strategy.canary.steps
    elif strategy.blue_green is not None:
        steps = strategy.blue_green.steps
    in_rollout = bool(st and st.canary_version and st.rollout_id)
    current = (st.current_step_index or 0) if st is not None and in_rollout else None
    frozen = held_by(st, model.metadata.name) if st and st.paused_reason == "Frozen" else None
    out: list[Obj] = []
    for n, step in enumerate(steps):
        state = "todo" if current is None or n > current else "done" if n < current else "current"
        text = describe_step(step)
        canary_steps = list(strategy.canary.steps) if strategy.canary is not None else []
        if getattr(step, "set_weight", None) is not None or getattr(step, "step_weight", None):
            text += f" → canary {weight_before(canary_steps, n + 1)}%"
        item: Obj = {"index": n, "text": text, "state": state}
        if state == "current" and frozen is not None:
            item["note"] = f"not started, {frozen}"  # a freeze holds only before a step begins
        elif state == "current" and getattr(step, "pause", None) is not None and st is not None:
            seconds = pause_seconds(step)
            if seconds is None:
                item["note"] = "paused until promoted"
            elif st.step_started_at is not None:
                left = (st.step_started_at - now).total_seconds() + seconds
                item["note"] = f"{max(0, int(left))}s left"
                item["until"] = (
                    st.step_started_at + datetime.timedelta(seconds=seconds)
                ).isoformat()
        out.append(item)
    return out


def run_view(run: Obj, cell: Obj) -> Obj:
    """An AnalysisRun: phase, what it is for, and each metric's measurements with the
    conditions they are judged by."""
    st = run.get("status") or {}
    spec_metrics = {m.get("name"): m for m in (run.get("spec") or {}).get("metrics") or []}
    name = _meta(run).get("name")
    role = next(
        (k for k, v in ((cell.get("status") or {}).get("analysisRuns") or {}).items() if v == name),
        "",
    )
    metrics = []
    for result in st.get("metricResults") or []:
        spec = spec_metrics.get(result.get("name")) or {}
        metrics.append(
            {
                "name": result.get("name"),
                "phase": result.get("phase") or "Pending",
                "successCondition": spec.get("successCondition"),
                "failureCondition": spec.get("failureCondition"),
                "measurements": [
                    {
                        "value": m.get("value"),
                        "phase": m.get("phase"),
                        "time": _iso(m.get("finishedAt") or m.get("startedAt")),
                    }
                    for m in (result.get("measurements") or [])[-MAX_MEASUREMENTS:]
                ],
            }
        )
    return {
        "name": name,
        "role": role,
        "phase": st.get("phase") or "Pending",
        "message": st.get("message") or "",
        "started": _iso(_meta(run).get("creationTimestamp")),
        "metrics": metrics,
    }


def event_view(event: Obj) -> Obj:
    """An Event (events.k8s.io/v1 or core/v1) as the page lists it."""
    series = event.get("series") or {}
    when = (
        series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("lastTimestamp")
        or event.get("deprecatedLastTimestamp")
        or _meta(event).get("creationTimestamp")
    )
    return {
        "time": _iso(when),
        "type": event.get("type") or "Normal",
        "reason": event.get("reason") or "",
        "note": event.get("note") or event.get("message") or "",
        "count": series.get("count") or event.get("count") or event.get("deprecatedCount") or 1,
    }


def regarding(event: Obj) -> tuple[str | None, str | None, str | None]:
    """(kind, namespace, name) of the object an Event is about."""
    ref = event.get("regarding") or event.get("involvedObject") or {}
    return ref.get("kind"), ref.get("namespace"), ref.get("name")


def cell_detail(
    cell: Obj,
    config: Obj | None,
    runs: Iterable[Obj],
    blocklist: Obj | None,
    events: Iterable[Obj],
    history: list[Obj],
    now: datetime.datetime,
) -> Obj:
    """Everything the Cell page shows."""
    uid = _meta(cell).get("uid")
    owned = [
        r
        for r in runs
        if any(ref.get("uid") == uid for ref in _meta(r).get("ownerReferences") or [])
    ]
    owned.sort(key=lambda r: str(_meta(r).get("creationTimestamp") or ""), reverse=True)
    by_name = {str(_meta(r).get("name")): r for r in owned}
    st = cell.get("status") or {}
    evs = sorted((event_view(e) for e in events), key=lambda e: e["time"] or "", reverse=True)
    return {
        **cell_row(cell, config, by_name, blocklist),
        "rolloutId": st.get("rolloutId"),
        "pinned": (cell.get("spec") or {}).get("version"),
        "desired": weight_list(cell, _desired(cell, config)),
        "timeline": step_timeline(cell, now),
        "history": history,
        "rollouts": rollout_records(cell),
        "canaryWeight": st.get("canaryWeight"),
        "runs": [run_view(r, cell) for r in owned[:MAX_RUNS]],
        "blocklist": [
            {
                "version": i.get("version"),
                "cause": i.get("cause") or "",
                "time": _iso(i.get("time")),
            }
            for i in ((blocklist or {}).get("spec") or {}).get("items") or []
        ],
        "conditions": [
            {
                "type": c.get("type"),
                "status": c.get("status"),
                "reason": c.get("reason") or "",
                "message": c.get("message") or "",
                "time": _iso(c.get("lastTransitionTime")),
            }
            for c in st.get("conditions") or []
        ],
        "events": evs[:MAX_EVENTS],
    }


def rollout_records(cell: Obj) -> list[Obj]:
    """The Cell's record of its rollouts (`status.history`, newest first) as the page draws
    them: each record as stored, with `took` (seconds; None for the one in progress)."""
    out = []
    for r in (cell.get("status") or {}).get("history") or []:
        if not isinstance(r, dict):
            continue
        start, end = parse_time(r.get("startedAt")), parse_time(r.get("endedAt"))
        took = (end - start).total_seconds() if start and end else None
        out.append({**r, "took": took})
    return out


def _desired(cell: Obj, config: Obj | None) -> dict[str, int] | None:
    """version -> weight okra asks for (the config's spec)."""
    spec = (config or {}).get("spec") or {}
    entries = spec.get("forwardTargetGroups") or spec.get("targetGroups") or []
    if not entries:
        return None
    versions = version_of_target_groups(cell)
    out: dict[str, int] = {}
    for f in entries:
        version = versions.get(str(f.get("arn")), versions.get(str(f.get("name")), "?"))
        out[version] = out.get(version, 0) + int(f.get("weight") or 0)
    return out


# -- ProgressiveRollouts and inventory -------------------------------------------


def selector_text(selector: Obj | None) -> str:
    """A label selector as `kubectl` writes one: `k=v,k in (a,b),k,!k`; `*` for all."""
    selector = selector or {}
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        op, k, values = e.get("operator"), e.get("key"), ",".join(e.get("values") or [])
        parts.append(
            f"{k} in ({values})"
            if op == "In"
            else f"{k} notin ({values})"
            if op == "NotIn"
            else f"!{k}"
            if op == "DoesNotExist"
            else str(k)
        )
    return ",".join(parts) or "*"


def stage_gates(stage: Obj) -> list[str]:
    """What holds a stage's clusters back, in words: which clusters, how many at once, how
    many in all, spread, requeue of drained clusters, bake time."""
    gates = [
        f"clusters {selector_text((stage.get('clusters') or {}).get('selector'))}",
        f"at most {stage.get('maxUnavailable', 1)} unavailable at once",
        f"{stage.get('maxClusters', '100%')} of them",
    ]
    if stage.get("topologyKey"):
        gates.append(f"one per {stage['topologyKey']} at a time")
    requeue = stage.get("requeue")
    if requeue:
        gates.append(
            f"requeue {selector_text(requeue.get('selector'))}: "
            f"{requeue.get('attempts', 5)} tries, every {requeue.get('interval', '30m')}"
        )
    if stage.get("bakeTime"):
        gates.append(f"bake {stage['bakeTime']} once healthy")
    return gates


def _bake_until(cluster: Obj, bake_time: str | None) -> str | None:
    """When a baking cluster's bake time ends."""
    since = parse_time(cluster.get("healthySince")) if cluster.get("healthySince") else None
    if cluster.get("phase") != "Baking" or not bake_time or since is None:
        return None
    try:
        seconds = parse_duration(bake_time)
    except ValueError:
        return None
    return (since + datetime.timedelta(seconds=seconds)).isoformat()


def _webhooks(spec: Obj, got: Obj) -> list[Obj]:
    """A stage's webhooks (never their URLs): each one's type and, once called, its answer."""
    results = {w.get("name"): w for w in got.get("webhooks") or []}
    out = []
    for w in spec.get("webhooks") or []:
        r = results.pop(w.get("name"), None)
        out.append(
            {
                "name": w.get("name"),
                "type": w.get("type") or "PostStage",
                "called": r is not None,
                "succeeded": bool(r and r.get("succeeded")),
                "statusCode": (r or {}).get("statusCode"),
                "message": (r or {}).get("message") or "",
            }
        )
    for name, r in results.items():  # called, then removed from the spec
        out.append(
            {
                "name": name,
                "type": "",
                "called": True,
                "succeeded": bool(r.get("succeeded")),
                "statusCode": r.get("statusCode"),
                "message": r.get("message") or "",
            }
        )
    return out


def rollout_row(pr: Obj) -> Obj:
    """A ProgressiveRollout: its stages, each with its gates, analysis and webhooks, and,
    per stage, its clusters with their phases (a baking cluster's bake end, a requeued
    one's next try)."""
    meta, st, spec = _meta(pr), pr.get("status") or {}, pr.get("spec") or {}
    statuses = {s.get("name"): s for s in st.get("stages") or []}
    stages = []
    for s in spec.get("stages") or []:
        got = statuses.get(s.get("name")) or {}
        clusters = []
        for c in got.get("clusters") or []:
            bake_until = _bake_until(c, s.get("bakeTime"))
            message = c.get("message") or ""
            if bake_until and BAKE_MESSAGE.fullmatch(message):
                message = ""  # the time left as okra last wrote it: the page counts down itself
            clusters.append(
                {
                    "name": c.get("name"),
                    "phase": c.get("phase") or "Pending",
                    "message": message,
                    "nextAttempt": _iso(c.get("nextAttempt"))
                    if c.get("phase") == "Requeued"
                    else None,
                    "bakeUntil": bake_until,
                }
            )
        analysis = s.get("analysis") or {}
        stages.append(
            {
                "name": s.get("name"),
                "phase": got.get("phase") or "Pending",
                "message": got.get("message") or "",
                "bakeTime": s.get("bakeTime"),
                "gates": stage_gates(s),
                "analysis": got.get("analysisPhase"),
                "analysisRun": got.get("analysisRun"),
                "analysisTemplates": [
                    str(t.get("templateName") or "") for t in analysis.get("templates") or []
                ],
                "done": sum(c["phase"] == "Completed" for c in clusters),
                "clusters": clusters,
                "webhooks": _webhooks(s, got),
            }
        )
    stalled = next(
        (
            c.get("message") or ""
            for c in st.get("conditions") or []
            if c.get("type") == "Stalled" and c.get("status") == "True"
        ),
        "",
    )
    return {
        "key": key(pr),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "phase": st.get("phase") or "Pending",
        "message": st.get("message") or "",
        "revision": st.get("revision"),
        "failedRevision": st.get("failedRevision"),
        "currentStage": st.get("currentStage"),
        "paused": bool(spec.get("paused")),
        "aborted": bool(st.get("aborted")),
        "failurePolicy": spec.get("failurePolicy") or "Pause",
        "stalled": stalled,
        "unmanaged": list(st.get("unmanagedClusters") or []),
        "source": (spec.get("sourceRef") or {}).get("name"),
        "stages": stages,
        "history": revision_records(st),
    }


def revision_records(status: Obj) -> list[Obj]:
    """A ProgressiveRollout's record (`status.history`, newest first) as its card lists it:
    each revision's start and end, outcome, message and how many of its stages completed."""
    out = []
    for r in status.get("history") or []:
        if not isinstance(r, dict):
            continue
        stages = [s for s in r.get("stages") or [] if isinstance(s, dict)]
        out.append(
            {
                "revision": r.get("revision"),
                "startedAt": _iso(r.get("startedAt")),
                "endedAt": _iso(r.get("endedAt")),
                "outcome": r.get("outcome"),
                "message": r.get("message") or "",
                "done": sum(s.get("phase") == "Completed" for s in stages),
                "stages": len(stages),
            }
        )
    return out


def cluster_set_row(cs: Obj) -> Obj:
    meta, st = _meta(cs), cs.get("status") or {}
    return {
        "key": key(cs),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "clusters": list(st.get("clusters") or []),
        "errors": list(st.get("errors") or []),
    }


def target_group_row(tg: Obj) -> Obj:
    meta = _meta(tg)
    labels = meta.get("labels") or {}
    return {
        "key": key(tg),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "version": labels.get(VERSION_LABEL) or "",
        "arn": (tg.get("spec") or {}).get("arn") or "",
        "labels": {k: v for k, v in labels.items() if k != VERSION_LABEL},
    }


def diff(old: Mapping[str, Obj], new: Mapping[str, Obj]) -> tuple[dict[str, Obj], list[str]]:
    """(rows to set, keys to delete) turning `old` into `new`."""
    changed = {k: v for k, v in new.items() if old.get(k) != v}
    return changed, [k for k in old if k not in new]
