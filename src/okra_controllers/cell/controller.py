"""The Cell controller, in observe → plan → act → report.

observe: the Cell, its AWSTargetGroups (selector), its load balancer config, its
VersionBlocklist, its AnalysisRuns and Pauses (owner index), all from the
caches; AWS is read only for the health of target groups about to receive
weight for the first time, when the plan asks for it (`Plan.needs_health`), and for
the traffic they served, when it asks for that (`Plan.needs_traffic`): `reads`, the
driver `okra plan` runs too.
plan: `plan.plan` (pure; it decides the health gate and the ALB limits too).
act: idempotent writes (`act`) — server-side apply of the config when its weights
change, AnalysisRuns and Pauses created by deterministic names, runs
terminated and pauses cancelled when their rollout ends, the blocklist appended
(`blocklist`).
report: status (only when changed), conditions, Events, metrics (`report`).

Nothing lives in memory: the step index, the rollout ID and the names of the
runs are in the Cell's status, the weights in the config, the pauses and
analyses in their own objects, so a restarted manager carries on at the same
step.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from typing import Any

from okra_controllers.actors import policy_watch
from okra_controllers.api.kinds import (
    ALB_CONFIG,
    ANALYSIS_RUN,
    APPLICATION,
    BLOCKLIST,
    CELL,
    CLUSTER_FREEZE,
    FREEZE,
    JOB,
    NAMESPACE,
    NLB_CONFIG,
    PAUSE,
    ROUTE53_CONFIG,
    SECRET,
    TARGET_GROUP,
)
from okra_controllers.api.v1alpha1.cell import Cell, CellStatus
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell import report
from okra_controllers.cell.act import Acted, Actor
from okra_controllers.cell.blocklist import Blocklists
from okra_controllers.cell.checkjobs import PodFailures
from okra_controllers.cell.history import DEFAULT_LIMIT
from okra_controllers.cell.mappers import cells_for_target_group, cells_with_argocd
from okra_controllers.cell.reads import (
    CachedInputs,
    Caches,
    Planned,
    TargetHealth,
    observe_and_plan,
    target_group_aws,
    traffic_reader,
)
from okra_controllers.cell.system.shape import IsApplicationCell, is_system
from okra_controllers.freeze import watch as freezes
from okra_controllers.notifications.notifier import notifier_for
from okra_controllers.settings import Settings
from okra_runtime.errors import ApiError
from okra_runtime.events import EventRecorder
from okra_runtime.manager import Manager
from okra_runtime.predicates import AnnotationsChanged, Any_, GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_runtime.timeutil import exact_utcnow, utcnow

RESYNC = 300.0
HEALTH_RECHECK = 5.0  # seconds between health checks of a target group waiting for traffic


class TargetGroupRefusedError(ReportedError):
    """The Cell is held because AWS refuses to describe a target group it selects
    (the status and a Warning Event say which and why)."""


class CellReconciler:
    def __init__(
        self,
        mgr: Manager,
        events: EventRecorder,
        aws: AwsConfig,
        clock: Callable[[], datetime.datetime] = utcnow,
        argocd: bool = False,
        exact_clock: Callable[[], datetime.datetime] = exact_utcnow,
        history: int = DEFAULT_LIMIT,
    ) -> None:
        """`argocd`: Argo CD's Application kind is served (watched for Cells with
        `spec.argocd`); without it such Cells are reported, the others work as ever.
        `clock` gives the times written to status (to the second); `exact_clock` the
        time timed Pauses start and end by; `history`, the rollouts each Cell's record
        keeps."""
        self.caches = Caches.of(mgr, argocd)
        self.events = events
        self.aws = aws
        self.exact_clock = exact_clock
        self.inputs = CachedInputs(self.caches, PodFailures(mgr.client), clock, exact_clock)
        self.health = TargetHealth()
        self.blocklists = Blocklists(mgr.client, self.caches.blocklists, clock)
        self.actor = Actor(
            mgr.client,
            events,
            self.caches,
            self.blocklists,
            notifier_for(mgr),
            clock,
            history,
            policy_watch(mgr),
        )

    async def reconcile(self, req: Request) -> Result | None:
        """One pass in the contract's order: observe, plan again with what AWS shows of
        health and traffic, act, report, when to look again."""
        ns = req.namespace or ""
        raw = self.caches.cells.get(req.name, req.namespace)
        if raw is None or is_system(raw):
            # Gone, or a system Cell (the system Cell controller's, cell/system: edited into
            # one, or mapped here from another kind): none of its series stays, since the
            # deletion of a system Cell does not reach this controller (IsApplicationCell).
            report.forget(ns, req.name)
            return None
        cell = Cell.model_validate(raw)
        if cell.metadata.generation != (cell.status.observed_generation if cell.status else None):
            for warning in deprecated_spellings("Cell", raw.get("spec")):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)
        unsupported = _unsupported(cell)
        if unsupported is not None:
            await self._report_only(raw, cell, unsupported)
            return None
        blocklist = await self.blocklists.read(req.name, ns)
        planned = await observe_and_plan(
            self.inputs.observer(raw, cell, blocklist),
            self.health.reader(target_group_aws(self.aws, cell)),
            traffic_reader(self.aws, cell),
        )
        p = planned.plan
        acted = await self.actor.act(raw, cell, p, planned.config)
        if acted is None:
            return Result(requeue=True)  # the Cell changed under us: plan again from fresh state
        report.emit(self.events, raw, acted.said)
        report.report(cell.metadata.namespace or "", cell.metadata.name, acted.status)
        return self._next_look(raw, planned, acted)

    def _next_look(self, raw: dict[str, Any], planned: Planned, acted: Acted) -> Result:
        """When to look at the Cell again, and whether its rollout is moving."""
        p = planned.plan
        if p.held and planned.refused:
            # AWS refuses to show a target group the Cell selects (one that does not
            # exist): said in status and an Event; looked at again on a backoff that
            # grows, not every HEALTH_RECHECK, so that many such Cells cannot crowd out
            # the ones rolling out.
            raise TargetGroupRefusedError("; ".join(sorted(planned.refused.values())))
        after = HEALTH_RECHECK if p.held else RESYNC
        if p.requeue_after is not None:
            after = min(after, p.requeue_after + 0.5)  # just past the progress deadline
        if p.wake_after is not None:
            after = min(after, p.wake_after + 0.01)  # the moment the Pause or freeze ends
        frozen = freezes.seconds_to_next(self.caches.freezes, raw, self.exact_clock())
        if frozen is not None:
            after = min(after, frozen + 0.01)  # the moment a freeze starts
        # A rollout that just moved (its status changed) is between two hops; its next
        # ones go before first reports on new objects. A Cell's first status is a first
        # report; one that waits on something that does not come (AWS refusing its
        # listener) is not moving.
        moving = acted.replaced and p.status.health in ("Progressing", "Paused")
        return Result(requeue_after=after, in_progress=moving)

    async def _report_only(self, raw: dict[str, Any], cell: Cell, message: str) -> None:
        status = (cell.status or CellStatus()).as_rollout()
        status.phase, status.health, status.message = "Error", "Degraded", message
        status.observed_generation = cell.metadata.generation
        self.events.event(raw, "Warning", "Unsupported", message)
        with contextlib.suppress(ApiError):
            await self.actor.write_status(raw, status)


def _unsupported(cell: Cell) -> str | None:
    """What is missing from an ingress that names no load balancer of its type (the CRD's
    rules say this too); None when it has one, or no ingress."""
    ingress = cell.spec.ingress
    if ingress is None or ingress.listener() is not None:
        return None
    key = "awsNetworkLoadBalancer" if ingress.network else "awsApplicationLoadBalancer"
    needs = "listenerARN, targetGroupSelector"
    if ingress.route53:
        key, needs = "awsRoute53", "hostedZoneID, recordName, targetGroupSelector"
    return f"spec.ingress: type {ingress.type} needs ingress.{key} ({needs})"


def setup(mgr: Manager, settings: Settings) -> None:
    rec = CellReconciler(
        mgr,
        mgr.event_recorder("cell-controller"),
        settings.aws,
        argocd=settings.argocd,
        history=settings.rollout_history,
    )
    cells = rec.caches.cells
    builder = (
        mgr.builder("cell")
        .for_(
            CELL,
            predicates=(IsApplicationCell(), Any_(GenerationChanged(), AnnotationsChanged())),
        )
        .owns(ANALYSIS_RUN)
        .owns(PAUSE)
        .owns(ALB_CONFIG)
        .owns(NLB_CONFIG)
        .owns(ROUTE53_CONFIG)
        .owns(JOB)
        .watches(TARGET_GROUP, cells_for_target_group(cells))
        .watches(
            BLOCKLIST,
            lambda b: [Request(b["metadata"]["name"], b["metadata"].get("namespace") or "")],
        )
        .watches(SECRET, cells_with_argocd(cells))
        .watches(FREEZE, freezes.objects_for_freeze(cells))
        .watches(CLUSTER_FREEZE, freezes.objects_for_freeze(cells, rec.caches.freezes.namespaces))
        .watches(NAMESPACE, freezes.objects_for_namespace(cells, rec.caches.freezes.cluster))
        .with_options(max_concurrent_reconciles=settings.concurrency)
    )
    if settings.argocd:
        builder = builder.watches(APPLICATION, cells_with_argocd(cells))
    builder.complete(rec)
