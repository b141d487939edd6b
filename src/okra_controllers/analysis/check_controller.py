"""The Check controller: a standing metric check on its own schedule.

A Check's provider query is templated with `{{.Vars.NAME}}` from `spec.vars`,
which whoever writes the Check fills in (`eksClusterName`, `albListenerARN`,
`targetGroupARN`, say). A system Cell writes its applications' Checks
itself, one per cluster where the rendered queries differ (`cell.system.children`,
docs/system-cells.md); a user or another tool may write one too. Every `interval`
(and at once when the spec changes)
it measures, judges the result (conditions, then `min`/`max` for numbers),
appends to a bounded history, and sets `status.lastPassed`, `status.lastRunTime`
and `status.analysis.observedHash` (the `analysis-hash` annotation it ran with,
so whoever wrote the annotation can tell the result is for the latest query).
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import ValidationError

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.analysis.expr import ExprError, evaluate_condition
from okra_controllers.analysis.measure import Measurer, measure
from okra_controllers.analysis.run_controller import MEASUREMENTS
from okra_controllers.api.kinds import CHECK
from okra_controllers.api.v1alpha1.analysis import (
    Check,
    CheckAnalysisStatus,
    CheckResult,
    CheckSpec,
    CheckStatus,
    Phase,
)
from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.api.v1alpha1.providers import MetricProvider
from okra_controllers.api.v1alpha1.warnings import check_warnings
from okra_controllers.api.validation import load_or_report
from okra_controllers.settings import Settings
from okra_controllers.statuswrite import write_status
from okra_controllers.templating import Syntax, TemplateError, render
from okra_runtime.manager import Manager
from okra_runtime.predicates import AnnotationsChanged, Any_, GenerationChanged
from okra_runtime.reconcile import Request, Result

HASH_ANNOTATION = "analysis-hash"
_VARS = Syntax(roots=frozenset({"Vars"}))
log = structlog.get_logger("okra.check")


class CheckError(ValueError):
    pass


QUERY_PROVIDERS = ("prometheus", "datadog")
"""The providers a `query` written beside them goes into."""
NO_PROVIDER = (
    "the check names no metrics provider and okra-manager has none by default: add "
    "spec.provider (prometheus, datadog, cloudWatch or web, as in an AnalysisTemplate's "
    "metric), or start okra-manager with --default-metrics-provider, e.g. "
    '\'{"prometheus": {"address": "http://prometheus.monitoring:9090"}}\''
)


def render_provider(spec: CheckSpec, default: Mapping[str, Any] | None = None) -> MetricProvider:
    """The provider (the spec's, else `default`, okra-manager's) with `query` put in and
    every `{{.Vars.NAME}}` replaced from spec.vars (JSON-escaped)."""
    if spec.provider is not None:
        raw = spec.provider.model_dump(by_alias=True, exclude_none=True, mode="json")
    elif default is not None:
        raw = json.loads(json.dumps(default))
    else:
        raise CheckError(NO_PROVIDER)
    if spec.query is not None:
        kinds = [k for k in QUERY_PROVIDERS if isinstance(raw.get(k), dict)]
        if not kinds:
            where = "spec.provider" if spec.provider else "okra-manager's default provider"
            raise CheckError(f"spec.query goes into a prometheus or datadog provider, not {where}")
        raw[kinds[0]]["query"] = spec.query
    try:
        rendered = render(json.dumps(raw), {"Vars": spec.vars}, _VARS, escape="json")
        return MetricProvider.model_validate_json(rendered)
    except TemplateError as e:
        raise CheckError(f"spec.provider: {e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise CheckError(f"spec.provider.{where}: {first['msg']}") from None


def judge(spec: CheckSpec, value: Any) -> tuple[Phase, str | None]:
    """Conditions as for an AnalysisRun metric, then bounds on numeric results."""
    phase: Phase = "Successful"
    try:
        if spec.success_condition and not evaluate_condition(spec.success_condition, value):
            phase = "Failed"
        if spec.failure_condition and evaluate_condition(spec.failure_condition, value):
            phase = "Failed"
    except ExprError as e:
        return "Error", str(e)
    if phase == "Failed":
        return phase, "condition not met"
    if spec.min is None and spec.max is None:
        return phase, None
    numbers = value if isinstance(value, list) else [value]
    if not numbers or not all(
        isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers
    ):
        return "Error", f"min/max need a number or a list of numbers, got {value!r}"
    for n in numbers:
        if math.isnan(n):
            return "Inconclusive", "result is NaN"
        if spec.max is not None and n > spec.max:
            return "Failed", f"{n} > max {spec.max}"
        if spec.min is not None and n < spec.min:
            return "Failed", f"{n} < min {spec.min}"
    return "Successful", None


@dataclass(eq=False)
class CheckReconciler(Measurer):
    default_provider: Mapping[str, Any] | None = None

    async def reconcile(self, req: Request) -> Result | None:
        loaded = load_or_report(self.store, req, Check, self.events, reason="InvalidCheck")
        if loaded is None:
            return None
        raw, check = loaded
        spec = check.spec
        status = check.status or CheckStatus()
        if status.observed_generation != check.metadata.generation:
            for warning in check_warnings(raw.get("spec")):
                self.events.event(raw, "Warning", "UnusedField", warning)
        interval = parse_duration(spec.interval)
        want_hash = check.metadata.annotations.get(HASH_ANNOTATION)
        now = self.clock()
        fresh = (
            status.analysis is not None
            and status.analysis.observed_hash == want_hash
            and status.observed_generation == check.metadata.generation
        )
        if fresh and status.last_run_time is not None:
            wait = status.last_run_time + datetime.timedelta(seconds=interval) - now
            if wait.total_seconds() > 0:
                return Result(requeue_after=wait.total_seconds())
        phase, value, message, kind = await self._run(spec, req.namespace)
        MEASUREMENTS.labels(kind, phase).inc()
        analysis = status.analysis or CheckAnalysisStatus()
        analysis.observed_hash = want_hash
        analysis.results = [
            *analysis.results,
            CheckResult(phase=phase, value=value, message=message, time=now),
        ]
        analysis.results = analysis.results[-spec.history_limit :]
        passed = phase == "Successful"
        previous = status.last_passed
        status.last_passed = passed
        status.last_run_time = now
        status.analysis = analysis
        status.observed_generation = check.metadata.generation
        status.conditions = with_condition(
            [c for c in status.conditions or [] if c.type == "Passed"][:1],
            "Passed",
            passed,
            "CheckPassed" if passed else f"Check{phase}",
            message or ("the last check passed" if passed else "the last check failed"),
            now,
            check.metadata.generation,
        )
        if not await write_status(self.client, raw, status):
            return Result(requeue=True)
        if previous != passed:
            self.events.event(
                raw,
                "Normal" if passed else "Warning",
                "CheckPassed" if passed else f"Check{phase}",
                message or f"check {'passed' if passed else 'did not pass'}",
            )
        return Result(requeue_after=interval)

    async def _run(
        self, spec: CheckSpec, namespace: str
    ) -> tuple[Phase, str | None, str | None, str]:
        try:
            provider = render_provider(spec, self.default_provider)
        except CheckError as e:
            return "Error", None, str(e), "unknown"
        out = await measure(provider, self.provider_context(namespace))
        if out.result is None:
            return "Error", None, out.error, out.provider
        phase, message = judge(spec, out.result.value)
        return phase, out.result.display, message, out.provider


def setup(mgr: Manager, settings: Settings) -> None:
    rec = CheckReconciler.of_manager(
        mgr, settings, CHECK, "check", default_provider=settings.default_metrics_provider
    )
    (
        mgr.builder("check")
        .for_(CHECK, predicates=(Any_(GenerationChanged(), AnnotationsChanged()),))
        .with_options(max_concurrent_reconciles=settings.concurrency)
        .complete(rec)
    )
