"""Checks: prechecks before traffic moves, postchecks once the new version serves.

A check is a Job or an AnalysisRun, one per rollout and check, found again
by name after a restart. Its success is recorded with the forward config it ran for,
so a check is not run twice for the same weights but is run again when they change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from okra_controllers.api.v1alpha1.cell import CheckResult
from okra_controllers.api.v1alpha1.strategy import RolloutCheck
from okra_controllers.cell.plan.failure import check_failed
from okra_controllers.cell.plan.model import JobRequest, Observed, Plan, RunRequest, Stage
from okra_controllers.cell.plan.names import job_name, run_name

Verdict = Literal["passed", "pending", "failed"]
SEEN_RUN: dict[str | None, str] = {
    "Successful": "Succeeded",
    None: "",
    "": "",
    "Running": "",
    "Pending": "",
}


def run_checks(
    p: Plan,
    o: Observed,
    stage: Stage,
    checks: list[RolloutCheck],
    fhash: str,
    rollout: str,
    version: str,
) -> tuple[Verdict, str]:
    """Run `checks` in order: a check with a recorded success for this forward config is
    not run again; otherwise its Job (one per rollout and check) is created if missing
    and its outcome recorded. Returns the verdict and, unless passed, what to say."""
    st = p.status
    recorded = {(r.stage, r.name): r for r in st.checks or []}
    for check in checks:
        old = recorded.get((stage, check.name))
        if old is not None and old.forward_hash == fhash and old.phase == "Succeeded":
            continue
        if check.analysis is not None:
            name = run_name(o.cell_name, version, rollout, f"{stage[:4]}-{check.name}")
            run = o.runs.get(name)
            if run is None and not any(r.name == name for r in p.create_runs):
                p.create_runs.append(RunRequest(name, check.analysis, False))
            seen = SEEN_RUN.get(run, "Failed")
            why = f"AnalysisRun {name} {run}" if seen == "Failed" else ""
        else:
            name = job_name(o.cell_name, rollout, stage, check.name)
            seen, why = o.jobs.get(name, ("", ""))
            if not seen:
                p.create_jobs.append(JobRequest(name, check, stage, fhash))
        phase: Literal["Running", "Succeeded", "Failed"] = (
            "Succeeded" if seen == "Succeeded" else "Failed" if seen == "Failed" else "Running"
        )
        recorded[(stage, check.name)] = CheckResult(
            name=check.name, stage=stage, forward_hash=fhash, job=name, phase=phase, message=why
        )
        st.checks = sorted(recorded.values(), key=lambda r: (r.stage != "precheck", r.name))
        if phase == "Succeeded":
            continue
        if phase == "Failed":
            kind = "Job" if check.analysis is None else "analysis"
            return "failed", f"{stage} {check.name} failed ({kind} {name}: {why or 'failed'})"
        kind = "Job" if check.analysis is None else "AnalysisRun"
        return "pending", f"{stage} {check.name} running ({kind} {name})"
    return "passed", ""


def precheck_gate(
    p: Plan,
    o: Observed,
    fhash: str,
    rollout: str,
    version: str,
    fail: Callable[[str], Plan],
    pending: Callable[[str], Plan],
) -> Plan | None:
    """The prechecks of the rollout to `version`, before any traffic moves: None once they
    passed (or when there are none). A failed one is handled as `spec.failurePolicy` says
    (`check_failed`), failing with `fail(cause)`; while one runs, `pending(what to say)`
    holds the rollout."""
    if not o.spec.prechecks:
        return None
    verdict, said = run_checks(p, o, "precheck", o.spec.prechecks, fhash, rollout, version)
    if verdict == "failed":
        return check_failed(p, o, "precheck", said, lambda: fail(f"{said}; {version} is blocked"))
    if verdict == "pending":
        return pending(said)
    return None
