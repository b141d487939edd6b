"""The gates after a stage's clusters: its AnalysisRun and its webhooks (PreStage,
PostStage, PerCluster payloads and templated arguments).
"""

from __future__ import annotations

import hashlib

from okra_controllers.api.v1alpha1.progressiverollout import Stage, StageStatus
from okra_controllers.progressiverollout.plan.draft import Draft
from okra_controllers.progressiverollout.plan.failure import fail_stage
from okra_controllers.progressiverollout.plan.model import FAILED_RUN, POLL, RunRequest, WebhookCall
from okra_controllers.templating import Syntax, render


def run_analysis(d: Draft, i: int, stage: Stage, ss: StageStatus, revision: str) -> bool:
    if stage.analysis is None:
        return True
    retry = (d.st.handled.retry if d.st.handled else None) or ""
    name = run_name(d.o.name, revision, i, retry)
    if ss.analysis_run != name:
        ss.analysis_run, ss.analysis_phase = name, None
    phase = d.o.runs.get(name)
    if phase is None:
        clusters = ",".join(c.name for c in ss.clusters or [])
        args = tuple(
            a.model_copy(update={"value": _fill(a.value, revision, stage.name, clusters)})
            if a.value is not None
            else a
            for a in stage.analysis.args or ()
        )
        d.p.create_runs.append(RunRequest(name, stage.analysis, args, stage.name))
        ss.message = f"analysis {name} started"
        return False
    ss.analysis_phase = phase or None
    if phase == "Successful" or (phase == "Inconclusive" and d.promoted):
        return True
    if phase in FAILED_RUN:
        fail_stage(d, ss, f"analysis {name} {phase}")
        return False
    if phase == "Inconclusive":
        d.st.phase = "Paused"
        d.st.message = (
            f"stage {stage.name!r}: analysis {name} is Inconclusive: `okra promote` to "
            "accept it, `okra abort` to stop"
        )
        return False
    ss.message = f"analysis {name} {phase or 'Pending'}"
    return False


def run_webhooks(d: Draft, i: int, stage: Stage, ss: StageStatus, kind: str, revision: str) -> bool:
    hooks = [w for w in stage.webhooks or [] if w.type == kind]
    results = {r.name: r for r in ss.webhooks or []}
    waiting = False
    for w in hooks:
        r = results.get(w.name)
        if r is None:
            names = [c.name for c in ss.clusters or []]
            d.p.webhooks.append(
                WebhookCall(w.name, i, w, webhook_payload(d, stage, revision, names))
            )
            waiting = True
        elif not r.succeeded:
            fail_stage(d, ss, f"{kind} webhook {w.name}: {r.message}")
            return False
    if waiting:
        ss.message = f"calling {kind} webhooks"
        d.p.wake(POLL)
    return not waiting


def webhook_payload(
    d: Draft, stage: Stage, revision: str, clusters: list[str]
) -> dict[str, object]:
    return {
        "progressiveRollout": d.o.name,
        "applicationSet": d.o.spec.source_ref.name,
        "stage": stage.name,
        "revision": revision,
        "clusters": clusters,
    }


def run_name(rollout: str, revision: str, stage: int, retry: str) -> str:
    suffix = f"-{_hash(retry)}" if retry else ""
    return f"{rollout[:200]}-{revision[:7]}-s{stage}{suffix}".lower()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


_WEBHOOK_FIELDS = Syntax(dot="none", roots=frozenset({"revision", "stage", "clusters"}))


def _fill(value: str, revision: str, stage: str, clusters: str) -> str:
    fields = {"revision": revision, "stage": stage, "clusters": clusters}
    return render(value, fields, _WEBHOOK_FIELDS)
