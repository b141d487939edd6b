"""The AnalysisRun controller: measure metrics on their schedule and judge the
run with Argo Rollouts' rules (`verdict`).

observe: the run from the cache. plan: which metrics are due (`verdict.due_metrics`).
act: measure them concurrently through their providers. report: one status
write with every new measurement, the metric and run phases, a message, Events
on transitions, Prometheus metrics; then requeue for the next due time.

Everything needed to continue lives in the run's status: a restarted manager
picks up at the next due measurement, never repeating a finished one (a
measurement taken but not yet written when the process died is taken again,
once).
"""

from __future__ import annotations

import asyncio
import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import Counter

from okra_controllers.analysis import compare, run_pass, verdict
from okra_controllers.analysis.args import ArgumentError, merge_args, resolve_args, substitute
from okra_controllers.analysis.measure import MEASUREMENT_TIMEOUT, Measurer, measure
from okra_controllers.analysis.providers.base import ProviderError
from okra_controllers.api.kinds import ANALYSIS_RUN
from okra_controllers.api.v1alpha1.analysis import (
    AnalysisRun,
    AnalysisRunStatus,
    Judgment,
    Measurement,
    Metric,
    Phase,
)
from okra_controllers.api.validation import validated
from okra_controllers.settings import Settings
from okra_controllers.statuswrite import write_status
from okra_runtime.errors import ConflictError, NotFoundError
from okra_runtime.gvk import GVK
from okra_runtime.manager import Manager
from okra_runtime.metrics import REGISTRY
from okra_runtime.predicates import GenerationChanged
from okra_runtime.reconcile import Request, Result

log = structlog.get_logger("okra.analysisrun")

RUNS = Counter(
    "okra_analysis_run_total", "AnalysisRuns completed, by phase", ["phase"], registry=REGISTRY
)
for _phase in ("Successful", "Failed", "Error", "Inconclusive"):
    RUNS.labels(_phase)  # every phase from 0, so increase() sees the first run of each
MEASUREMENTS = Counter(
    "okra_analysis_measurement_total",
    "Measurements taken",
    ["provider", "phase"],
    registry=REGISTRY,
)


_RUN_VERDICT = re.compile(r"analysis (\S+) (Failed|Error|Inconclusive)")


def with_run_messages(
    message: str, lookup: Callable[[str], dict[str, Any] | None], limit: int = 600
) -> str:
    """`message` with the status message of each AnalysisRun it names as failed: a Cell's
    Event then says which metrics failed and by how much, not only which run."""
    details = []
    for name, _ in _RUN_VERDICT.findall(message):
        run = lookup(name)
        said = ((run or {}).get("status") or {}).get("message")
        if said:
            details.append(said if len(said) <= limit else said[: limit - 3] + "...")
    return message if not details else f"{message}: {'; '.join(details)}"


@dataclass(eq=False)
class AnalysisRunReconciler(Measurer):
    error_retry: float = verdict.DEFAULT_ERROR_RETRY_INTERVAL

    # Long on purpose: one pass of a run (measure, judge, status) in Argo Rollouts' order.
    async def reconcile(self, req: Request) -> Result | None:
        raw = self.store.get(req.name, req.namespace)
        if raw is None:
            return None
        run, problem = validated(AnalysisRun, raw)
        if run is None:
            await self._fail(raw, f"invalid AnalysisRun: {problem}")
            return None
        status = run.status or AnalysisRunStatus()
        if status.phase in verdict.COMPLETED:
            return None
        owner: dict[str, Any] | None = None
        if any(a.value_from and a.value_from.field_ref for a in run.spec.args or ()):
            owner = await self._owner(raw)
        try:
            # As Argo: every metric with its arguments (Secrets not read) to plan and validate.
            planned, _ = await resolve_args(
                merge_args(None, run.spec.args), req.namespace, None, owner
            )
            metrics, problems = run_pass.checked_metrics(run.spec, planned)
        except ArgumentError as e:
            await self._fail(raw, f"Unable to resolve metric arguments: {e}")
            return None
        if problems:
            await self._fail(raw, "Analysis spec invalid: " + "; ".join(problems))
            return None
        now = self.clock()
        started_at = status.started_at or now
        results = {r.name: r for r in status.metric_results or []}
        dry, due = run_pass.to_measure(
            run.spec, metrics, results, started_at, now, self.error_retry
        )
        secrets: list[str] = []
        judgment = run.spec.judgment
        if due:
            owner = owner or await self._owner(raw)
            try:
                values, secrets = await resolve_args(
                    merge_args(None, run.spec.args), req.namespace, self.read_secret, owner
                )
                index = {m.name: i for i, m in enumerate(metrics)}
                due = [substitute(run.spec.metrics[index[m.name]], values) for m in due]
                judgment = run_pass.judgment_with(judgment, values)
            except ArgumentError as e:
                await self._fail(raw, f"Unable to resolve metric arguments: {e}")
                return None
            measured = await asyncio.gather(
                *(
                    self._measure(m, req.namespace)
                    if m.judge is None
                    else self._judge(m, req.namespace, judgment, owner, started_at)
                    for m in due
                )
            )
            for metric, (measurement, kind, metric_meta) in zip(due, measured, strict=True):
                for s in secrets:
                    if measurement.message:
                        measurement.message = measurement.message.replace(s, "*****")
                run_pass.add_measurement(results, metric, measurement, metric_meta, dry)
                MEASUREMENTS.labels(kind, measurement.phase).inc()
        old_phase = status.phase
        judged = run_pass.conclude(run.spec, status, metrics, results, dry, started_at, now)
        status.observed_generation = run.metadata.generation
        if not await write_status(self.client, raw, status):
            return Result(requeue=True)  # a changed run is measured again from its state
        self._report(raw, old_phase, judged)
        if judged.phase in verdict.COMPLETED:
            return None
        nxt = verdict.next_reconcile_time(metrics, results, started_at, self.error_retry)
        if nxt is None:
            return None
        return Result(requeue_after=max(0.05, (nxt - self.clock()).total_seconds()))

    async def _measure(
        self, metric: Metric, namespace: str
    ) -> tuple[Measurement, str, dict[str, str]]:
        """The measurement, the provider kind, and metadata for the metric result."""
        started = self.clock()
        ctx = self.provider_context(namespace)
        out = await measure(metric.provider, ctx)
        if out.result is None:
            return (
                Measurement(
                    phase="Error", message=out.error, started_at=started, finished_at=self.clock()
                ),
                out.provider,
                {},
            )
        phase: Phase
        message: str | None = None
        if out.result.assume_successful:
            phase = "Successful"
        else:
            phase, message = verdict.measurement_phase(metric, out.result.value)
        return (
            Measurement(
                phase=phase,
                message=message,
                value=out.result.display,
                metadata=out.result.metadata or None,
                started_at=started,
                finished_at=self.clock(),
            ),
            out.provider,
            out.result.metric_metadata,
        )

    async def _judge(
        self,
        metric: Metric,
        namespace: str,
        judgment: Judgment | None,
        owner: dict[str, Any] | None,
        started_at: datetime.datetime,
    ) -> tuple[Measurement, str, dict[str, str]]:
        """A judged measurement: both sides fetched and compared. The metric result's
        judgment travels in the third item, as JSON under `judgment`."""
        started = self.clock()
        kind = compare.kind_of(metric.provider)
        ctx = self.provider_context(namespace)
        assert metric.judge is not None
        try:
            pair = compare.sides(judgment, owner)
            async with asyncio.timeout(MEASUREMENT_TIMEOUT):
                j = await compare.take(metric, pair, ctx, started_at, self.clock())
        except ProviderError as e:
            return (
                Measurement(
                    phase="Error", message=str(e), started_at=started, finished_at=self.clock()
                ),
                kind,
                {},
            )
        except TimeoutError:
            message = f"{kind}: no answer within {MEASUREMENT_TIMEOUT:.0f}s"
            return (
                Measurement(
                    phase="Error", message=message, started_at=started, finished_at=self.clock()
                ),
                kind,
                {},
            )
        measurement, meta = run_pass.judged_measurement(metric, j, pair, started, self.clock())
        return measurement, kind, meta

    async def _owner(self, raw: dict[str, Any]) -> dict[str, Any] | None:
        for ref in raw["metadata"].get("ownerReferences") or ():
            if ref.get("controller"):
                try:
                    return await self.client.get(
                        GVK.of(ref["apiVersion"], ref["kind"]),
                        ref["name"],
                        raw["metadata"]["namespace"],
                    )
                except Exception:
                    return None
        return raw

    async def _fail(self, raw: dict[str, Any], message: str) -> None:
        now = self.clock().isoformat().replace("+00:00", "Z")
        raw["status"] = {
            **(raw.get("status") or {}),
            "phase": "Error",
            "message": message,
            "completedAt": now,
        }
        raw["status"].setdefault("startedAt", now)
        try:
            await self.client.update_status(raw)
        except (ConflictError, NotFoundError):
            return
        RUNS.labels("Error").inc()
        self.events.event(raw, "Warning", "AnalysisRunError", message)
        log.warning("analysis run failed to start", message=message)

    def _report(self, raw: dict[str, Any], old_phase: str, judged: verdict.RunVerdict) -> None:
        for metric, _old, new in judged.transitions:
            if new in verdict.COMPLETED:
                warn = new in ("Failed", "Error")
                self.events.event(
                    raw,
                    "Warning" if warn else "Normal",
                    f"Metric{new}",
                    f"Metric '{metric}' completed. Result: {new}",
                )
        if judged.phase != old_phase:
            log.info(
                "analysis run phase",
                old=old_phase or "Pending",
                new=judged.phase,
                message=judged.message,
            )
            if judged.phase in verdict.COMPLETED:
                RUNS.labels(judged.phase).inc()
                warn = judged.phase in ("Failed", "Error")
                note = f"analysis completed {judged.phase}"
                if judged.message:
                    note += f": {judged.message}"
                self.events.event(
                    raw, "Warning" if warn else "Normal", f"AnalysisRun{judged.phase}", note
                )


def setup(mgr: Manager, settings: Settings) -> None:
    rec = AnalysisRunReconciler.of_manager(mgr, settings, ANALYSIS_RUN, "analysisrun")
    (
        mgr.builder("analysisrun")
        .for_(ANALYSIS_RUN, predicates=(GenerationChanged(),))
        .with_options(max_concurrent_reconciles=settings.concurrency)
        .complete(rec)
    )
