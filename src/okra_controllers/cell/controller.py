"""The Cell controller, in observe → plan → act → report.

observe: the Cell, its AWSTargetGroups (selector), its load balancer config, its
VersionBlocklist, its AnalysisRuns and Pauses (owner index), all from the
caches; AWS is read only for the health of target groups about to receive
weight for the first time, when the plan asks for it (`Plan.needs_health`).
plan: `plan.plan` (pure; it decides the health gate and the ALB limits too).
act: idempotent writes — server-side apply of the config when its weights
change, AnalysisRuns and Pauses created by deterministic names, runs
terminated and pauses cancelled when their rollout ends, the blocklist appended.
report: status (only when changed), conditions, Events.

Nothing lives in memory: the step index, the rollout ID and the names of the
runs are in the Cell's status, the weights in the config, the pauses and
analyses in their own objects, so a restarted manager carries on at the same
step.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
from collections.abc import Callable, Iterable
from typing import Any

import structlog
from prometheus_client import Gauge

from okra_controllers.analysis.run_controller import with_run_messages
from okra_controllers.analysis.templates import TemplateError, TemplateRef, build_run
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
from okra_controllers.api.v1alpha1.cell import (
    Cell,
    CellALB,
    CellNLB,
    CellRoute53,
    CellStatus,
    ListenerRule,
    PauseSpec,
)
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.elbv2 import target_health
from okra_controllers.aws.errors import AwsRefusalError
from okra_controllers.cell import traffic
from okra_controllers.cell.argocd import SECRET_TYPE_LABEL, label_patch
from okra_controllers.cell.checkjobs import PodFailures, check_job, owner_ref
from okra_controllers.cell.mappers import cells_for_target_group, cells_with_argocd
from okra_controllers.cell.observe import observe
from okra_controllers.cell.plan import Forward, Observed, Plan, RunRequest, freeze_holds, plan
from okra_controllers.cell.system.shape import IsApplicationCell, is_system
from okra_controllers.freeze import watch as freezes
from okra_controllers.lbconfig import aws_message
from okra_controllers.notifications import outbox
from okra_controllers.notifications.notifier import fields_for, notifier_for
from okra_controllers.notifications.triggers import triggers
from okra_controllers.settings import Settings
from okra_runtime.cache import OWNER_INDEX, Store
from okra_runtime.client import Client
from okra_runtime.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.gvk import GVK
from okra_runtime.labels import selector_from_dict
from okra_runtime.manager import Manager
from okra_runtime.metrics import REGISTRY
from okra_runtime.predicates import AnnotationsChanged, Any_, GenerationChanged
from okra_runtime.reconcile import ReportedError, Request, Result
from okra_runtime.timeutil import exact_utcnow, utcnow

FIELD_MANAGER = "okra-cell-controller"
DEFAULT_RULE = ListenerRule(priority=50000, path_patterns=["/*"])
RESYNC = 300.0


class TargetGroupRefusedError(ReportedError):
    """The Cell is held because AWS refuses to describe a target group it selects
    (the status and a Warning Event say which and why)."""


CLUSTER_SECRET = {SECRET_TYPE_LABEL: "cluster"}
HEALTH_RECHECK = 5.0  # seconds between health checks of a target group waiting for traffic
HEALTH_ROUNDS = 3  # health reads in one pass: target groups may arrive during each
log = structlog.get_logger("okra.cell")

CANARY_WEIGHT = Gauge(
    "okra_cell_canary_weight",
    "Weight of the canary version (0-100)",
    ["namespace", "cell"],
    registry=REGISTRY,
)
STEP_INDEX = Gauge(
    "okra_cell_step_index", "Current canary step index", ["namespace", "cell"], registry=REGISTRY
)
CELL_INFO = Gauge(
    "okra_cell_info",
    "1 for each Cell, labelled with its phase (Init, Migrating, Completing, Completed, Error), "
    "its health (Progressing, Paused, Healthy, Degraded) and its stable and canary versions",
    ["namespace", "cell", "phase", "health", "stable", "canary"],
    registry=REGISTRY,
)
PROGRESS_DEADLINE_EXCEEDED = Gauge(
    "okra_cell_progress_deadline_exceeded",
    "1 while a Cell's rollout is past its progressDeadlineSeconds (condition Progressing=False,"
    " reason ProgressDeadlineExceeded), else 0",
    ["namespace", "cell"],
    registry=REGISTRY,
)
_INFO_LABELS: dict[tuple[str, str], tuple[str, ...]] = {}  # the series each Cell has now


def report_info(namespace: str, name: str, status: CellStatus | None) -> None:
    """One `okra_cell_info` series per Cell (none once it is deleted: `status` None)."""
    key = (namespace, name)
    old = _INFO_LABELS.pop(key, None)
    new = None
    if status is not None:
        new = (
            namespace,
            name,
            status.phase or "Pending",
            status.health or "Pending",
            status.stable_version or "",
            status.canary_version or "",
        )
    if old is not None and old != new:
        with contextlib.suppress(KeyError):
            CELL_INFO.remove(*old)
    if new is not None:
        CELL_INFO.labels(*new).set(1)
        _INFO_LABELS[key] = new
    else:
        for gauge in (CANARY_WEIGHT, STEP_INDEX, PROGRESS_DEADLINE_EXCEEDED):
            with contextlib.suppress(KeyError):
                gauge.remove(namespace, name)


def past_deadline(status: CellStatus) -> int:
    """1 when the status says the rollout is past its progress deadline."""
    return int(
        any(
            c.type == "Progressing"
            and c.status == "False"
            and c.reason == "ProgressDeadlineExceeded"
            for c in status.conditions or []
        )
    )


HEALTH_WARNINGS_KEPT = 1024
"""Target groups whose last health failure is remembered (to say each once per change)."""
HealthCheck = Callable[[str], Any]  # async (target group arn) -> bool (has a healthy target)


class CellReconciler:
    def __init__(
        self,
        mgr: Manager,
        events: EventRecorder,
        aws: AwsConfig,
        clock: Callable[[], datetime.datetime] = utcnow,
        argocd: bool = False,
        exact_clock: Callable[[], datetime.datetime] = exact_utcnow,
    ) -> None:
        """`argocd`: Argo CD's Application kind is served (watched for Cells with
        `spec.argocd`); without it such Cells are reported, the others work as ever.
        `clock` gives the times written to status (to the second); `exact_clock` the
        time timed Pauses start and end by."""
        self.client: Client = mgr.client
        self.cells: Store = mgr.informer_for(CELL).store
        self.target_groups: Store = mgr.informer_for(TARGET_GROUP).store
        self.configs: Store = mgr.informer_for(ALB_CONFIG).store
        self.nlb_configs: Store = mgr.informer_for(NLB_CONFIG).store
        self.route53_configs: Store = mgr.informer_for(ROUTE53_CONFIG).store
        self.runs: Store = mgr.informer_for(ANALYSIS_RUN).store
        self.pauses: Store = mgr.informer_for(PAUSE).store
        self.jobs: Store = mgr.informer_for(JOB).store
        self.secrets: Store = mgr.informer_for(SECRET).store
        self.blocklists: Store = mgr.informer_for(BLOCKLIST).store
        self.freezes = freezes.sources(mgr)
        self.blocked_here: dict[tuple[str, str], set[str]] = {}
        """Versions this process appended to a Cell's VersionBlocklist that its cache
        may not show yet (`_blocklist`)."""
        self.apps: Store | None = mgr.informer_for(APPLICATION).store if argocd else None
        self.events = events
        self.aws = aws
        self.clock = clock
        self.exact_clock = exact_clock
        self.notifier = notifier_for(mgr)
        self.pod_failures = PodFailures(mgr.client)
        # the last reason each target group's health could not be read, said once per change
        self._health_unavailable: dict[str, str] = {}

    # -- observe ---------------------------------------------------------------

    def _observe(
        self,
        raw: dict[str, Any],
        cell: Cell,
        blocklist: dict[str, Any] | None,
        job_pods: dict[str, str] | None = None,
    ) -> tuple[Observed, dict[str, Any] | None]:
        """Cache reads without copies (`copy=False`): `observe` and `_apply_config` only
        read what they get (test_cell_observe_leaves_cache.py checks it). `job_pods`: what
        the Pods of the Cell's failed check Jobs said (`_job_pods`)."""
        ns, name = cell.metadata.namespace or "", cell.metadata.name
        ingress = cell.spec.ingress
        tgs: list[dict[str, Any]] = []
        config = None
        if ingress is not None:
            lb = ingress.listener()
            selector = lb.target_group_selector.match_labels if lb else {}
            tgs = self.target_groups.list(
                ns, selector_from_dict({"matchLabels": selector}), copy=False
            )
            store = self.configs
            if ingress.network:
                store = self.nlb_configs
            elif ingress.route53:
                store = self.route53_configs
            config = store.get(name, ns, copy=False)
        secrets: list[dict[str, Any]] = []
        apps: list[dict[str, Any]] | None = []
        if cell.spec.argocd is not None:
            secrets = self.secrets.list(
                ns, selector_from_dict({"matchLabels": CLUSTER_SECRET}), copy=False
            )
            apps = self.apps.list(ns, copy=False) if self.apps is not None else None
        uid = cell.metadata.uid or ""
        observed = observe(
            cell,
            tgs,
            config,
            blocklist,
            self.runs.by_index(OWNER_INDEX, uid, copy=False),
            self.pauses.by_index(OWNER_INDEX, uid, copy=False),
            self.clock(),
            self.jobs.by_index(OWNER_INDEX, uid, copy=False),
            secrets,
            apps,
            exact_now=self.exact_clock(),
            job_pods=job_pods,
        )
        held = freezes.hold_of(self.freezes, raw, observed.now)
        return dataclasses.replace(observed, freeze=held), config

    async def _job_pods(self, cell: Cell) -> dict[str, str]:
        """What the Pods of the Cell's failed check Jobs said: each read once, remembered
        (`PodFailures`), outside the pure plan."""
        uid = cell.metadata.uid or ""
        return await self.pod_failures.read(self.jobs.by_index(OWNER_INDEX, uid, copy=False))

    # -- reconcile -------------------------------------------------------------

    # Long on purpose: one pass in the contract's order (observe, plan again with what AWS
    # shows of health and traffic, act, when to look again).
    async def reconcile(self, req: Request) -> Result | None:
        raw = self.cells.get(req.name, req.namespace)
        if raw is None or is_system(raw):
            # Gone, or a system Cell (the system Cell controller's, cell/system: edited into
            # one, or mapped here from another kind): none of its series stays, since the
            # deletion of a system Cell does not reach this controller (IsApplicationCell).
            report_info(req.namespace or "", req.name, None)
            freezes.report_held("Cell", req.namespace or "", req.name, None)
            traffic.report(req.namespace or "", req.name, None)
            return None
        cell = Cell.model_validate(raw)
        if cell.metadata.generation != (cell.status.observed_generation if cell.status else None):
            for warning in deprecated_spellings("Cell", raw.get("spec")):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)
        ingress = cell.spec.ingress
        if ingress is not None and ingress.listener() is None:  # the CRD's rules say this too
            key = "awsNetworkLoadBalancer" if ingress.network else "awsApplicationLoadBalancer"
            needs = "listenerARN, targetGroupSelector"
            if ingress.route53:
                key, needs = "awsRoute53", "hostedZoneID, recordName, targetGroupSelector"
            await self._report_only(
                raw, cell, f"spec.ingress: type {ingress.type} needs ingress.{key} ({needs})"
            )
            return None
        blocklist = await self._blocklist(req.name, req.namespace or "")
        observed, config = self._observe(raw, cell, blocklist, await self._job_pods(cell))
        p = plan(observed)
        # Target groups are read where their load balancer is: through an ALB's or NLB's
        # role; a Route 53 role is the zone's, and its target groups are the manager's own.
        lb = ingress.listener() if ingress is not None else None
        health_aws = self.aws
        if isinstance(lb, CellALB | CellNLB):
            health_aws = self.aws.assuming(lb.role_arn)
        health: dict[str, bool] = {}
        refused: dict[str, str] = {}
        for _ in range(HEALTH_ROUNDS):
            if not p.needs_health:
                break
            # Target health is observed only for target groups about to get weight for
            # the first time (one DescribeTargetHealth each, all at once), then planned with.
            arns = list(p.needs_health)
            found = await asyncio.gather(*(self._healthy(arn, health_aws) for arn in arns))
            for arn, (ok, why) in zip(arns, found, strict=True):
                health[arn] = ok
                if why:
                    refused[arn] = why
            # Observed again: while AWS answered, the caches may have moved on (a newer
            # version's target groups arrived); a plan from the observation before the read
            # would write weight for a version already superseded. Target groups new in it
            # ask for their health in the next round; a plan still asking after the last
            # round holds (it writes nothing) and is looked at again soon.
            observed, config = self._observe(raw, cell, blocklist, await self._job_pods(cell))
            p = plan(dataclasses.replace(observed, health=health, health_problems=refused))
        if p.needs_traffic is not None and isinstance(lb, CellALB | CellRoute53):
            # The plan asks what the target groups served (`trafficConfirmation`): one
            # GetMetricData, where the target groups are read (as for health), then
            # planned with.
            reading = await traffic.read(health_aws, lb, p.needs_traffic)
            p = plan(
                dataclasses.replace(
                    observed, health=health, health_problems=refused, traffic=reading
                )
            )
        written = raw.get("status")
        if not await self._act(raw, cell, p, config):
            return Result(requeue=True)  # the Cell changed under us: plan again from fresh state
        if p.held and refused:
            # AWS refuses to show a target group the Cell selects (one that does not
            # exist): said in status and an Event; looked at again on a backoff that
            # grows, not every HEALTH_RECHECK, so that many such Cells cannot crowd out
            # the ones rolling out.
            raise TargetGroupRefusedError("; ".join(sorted(refused.values())))
        after = HEALTH_RECHECK if p.held else RESYNC
        if p.requeue_after is not None:
            after = min(after, p.requeue_after + 0.5)  # just past the progress deadline
        if p.wake_after is not None:
            after = min(after, p.wake_after + 0.01)  # the moment the Pause or freeze ends
        frozen = freezes.seconds_to_next(self.freezes, raw, self.exact_clock())
        if frozen is not None:
            after = min(after, frozen + 0.01)  # the moment a freeze starts
        # A rollout that just moved (its status changed: `_write_status` replaced it) is
        # between two hops; its next ones go before first reports on new objects. A Cell's
        # first status is a first report; one that waits on something that does not come
        # (AWS refusing its listener) is not moving.
        moving = (
            written is not None
            and raw.get("status") is not written
            and p.status.health in ("Progressing", "Paused")
        )
        return Result(requeue_after=after, in_progress=moving)

    async def _blocklist(self, name: str, ns: str) -> dict[str, Any] | None:
        """The Cell's VersionBlocklist, which decides which version may roll out: from the
        cache, unless this process appended a version the cache does not show yet (a
        failed analysis a moment ago); then read live, never planned from a cache that
        would roll the blocked version out again. Other writers' entries (`okra block`,
        a user's edit) reach the Cell through the watch on blocklists, as any input does.
        A manager started afresh has every earlier entry in its first list."""
        key = (ns, name)
        cached = self.blocklists.get(name, ns, copy=False)
        written = self.blocked_here.get(key)
        if not written:
            return cached
        if written <= _blocked_versions(cached):
            del self.blocked_here[key]  # the cache shows them now
            return cached
        try:
            live: dict[str, Any] | None = await self.client.get(BLOCKLIST, name, ns)
        except NotFoundError:
            live = None
        written &= _blocked_versions(live)  # entries removed since are no longer ours to wait for
        if not written:
            del self.blocked_here[key]
        return live

    async def _healthy(self, arn: str, aws: AwsConfig | None = None) -> tuple[bool, str]:
        """Whether the target group has a healthy target; and, when AWS refuses to say
        (the group does not exist, a permission is missing), what AWS said."""
        try:
            states = await target_health(aws or self.aws, arn)
        except AwsRefusalError as e:
            return False, aws_message(e)
        except Exception as e:
            # said once per change of reason: every pass of a Cell held on it (each
            # HEALTH_RECHECK) fails the same way until AWS answers again
            said = self._health_unavailable.pop(arn, None)
            self._health_unavailable[arn] = str(e)
            if len(self._health_unavailable) > HEALTH_WARNINGS_KEPT:
                del self._health_unavailable[next(iter(self._health_unavailable))]
            (log.debug if said == str(e) else log.warning)(
                "target health unavailable", target_group=arn, error=str(e)
            )
            return False, ""
        self._health_unavailable.pop(arn, None)
        return "healthy" in states.values(), ""

    # -- act -------------------------------------------------------------------

    async def _act(
        self, raw: dict[str, Any], cell: Cell, p: Plan, config: dict[str, Any] | None
    ) -> bool:
        """Durable facts first (the blocklist), then the status, guarded by the Cell's
        resourceVersion, then everything that follows from the status (weights, runs,
        pauses). A plan made from a stale Cell fails at the status write and does
        nothing; every later write is idempotent, so a crash anywhere is repaired by
        the next reconcile. Returns False when the status write lost a race."""
        ns, name = cell.metadata.namespace or "", cell.metadata.name
        before = cell.status or CellStatus()
        if p.block is not None:
            await self._block(raw, *p.block)
        # Runs are built (their templates read) before the status is written, so that a
        # template that cannot be used is said in the status message, not only in an Event.
        runs, run_problem = await self._build_runs(raw, cell, p)
        if run_problem is not None:
            p.status.message = run_problem
        # Notifications go out in the same write as the change they report (the outbox).
        fired = triggers(before, p.status, ((e.reason, e.message) for e in p.events))
        outbox.stage(
            raw, before, p.status, fired, lambda f: fields_for(raw, p.status, f), self.clock()
        )
        if not await self._write_status(raw, p.status):
            self.notifier.track(CELL, ns, name, before.notifications or [])
            return False
        self.notifier.track(CELL, ns, name, p.status.notifications or [])
        if p.forward is not None and cell.spec.ingress is not None:
            await self._apply_config(raw, cell, p.forward, config)
        await self._label_clusters(raw, cell, p)
        for obj in runs:
            await self._create(raw, obj)
        if run_problem is not None:
            self.events.event(raw, "Warning", "AnalysisTemplateError", run_problem)
        for job in p.create_jobs:
            await self._create(raw, check_job(raw, job))
        if p.create_pause is not None:
            expire = p.create_pause.expire_time
            await self._create(
                raw,
                {
                    "apiVersion": API_VERSION,
                    "kind": PAUSE.kind,
                    "metadata": {
                        "name": p.create_pause.name,
                        "namespace": ns,
                        "labels": {"okra.mumo.co/cell": name},
                        "ownerReferences": [owner_ref(raw)],
                    },
                    "spec": PauseSpec(expire_time=expire).model_dump(
                        by_alias=True, exclude_none=True, mode="json"
                    ),
                },
            )
        for run_name in p.terminate_runs:
            await self._stop(ANALYSIS_RUN, self.runs, run_name, ns, "terminate")
        for pause_name in p.cancel_pauses:
            await self._stop(PAUSE, self.pauses, pause_name, ns, "cancelled")
        for e in p.events:
            message = with_run_messages(e.message, lambda n: self.runs.get(n, ns))
            self.events.event(raw, e.type, e.reason, message)
            log.info("cell event", reason=e.reason, message=message)
        report_info(ns, name, p.status)
        traffic.report(ns, name, p.status)
        CANARY_WEIGHT.labels(ns, name).set(p.status.canary_weight or 0)
        STEP_INDEX.labels(ns, name).set(p.status.current_step_index or 0)
        PROGRESS_DEADLINE_EXCEEDED.labels(ns, name).set(past_deadline(p.status))
        freezes.report_held("Cell", ns, name, freeze_holds(p.status))
        return True

    async def _label_clusters(self, raw: dict[str, Any], cell: Cell, p: Plan) -> None:
        """Add and remove the app labels on cluster Secrets (a merge patch of those labels
        alone, okra's field manager; a Secret already as planned is not in the plan)."""
        argo = cell.spec.argocd
        if argo is None:
            return
        ns = cell.metadata.namespace or ""
        for names, add in ((p.unlabel, False), (p.label, True)):
            for secret in names:
                try:
                    await self.client.patch(
                        SECRET,
                        secret,
                        label_patch(argo, add),
                        namespace=ns,
                        field_manager=FIELD_MANAGER,
                    )
                except NotFoundError:
                    continue
                what = "gave" if add else "took"
                prep = "to" if add else "from"
                labels = ", ".join(f"{k}={v}" for k, v in argo.cluster_secret.labels.items())
                message = f"{what} the app labels ({labels}) {prep} cluster Secret {secret}"
                self.events.event(
                    raw, "Normal", "ClusterLabelled" if add else "ClusterUnlabelled", message
                )
                log.info("cluster secret labels", secret=secret, add=add)

    async def _stop(self, gvk: GVK, store: Store, name: str, ns: str, flag: str) -> None:
        """Set `spec.<flag>` (terminate a run, cancel a pause) unless already set."""
        cached = store.get(name, ns)
        if cached is not None and (cached.get("spec") or {}).get(flag):
            return
        with contextlib.suppress(NotFoundError):
            await self.client.patch(gvk, name, {"spec": {flag: True}}, namespace=ns)

    async def _apply_config(
        self,
        raw: dict[str, Any],
        cell: Cell,
        forward: Iterable[Forward],
        config: dict[str, Any] | None,
    ) -> None:
        assert cell.spec.ingress is not None
        lb = cell.spec.ingress.listener()
        assert lb is not None
        spec: dict[str, Any]
        if isinstance(lb, CellRoute53):
            kind, spec = ROUTE53_CONFIG.kind, route53_spec(lb, forward)
        else:
            kind, spec = self._listener_spec(cell, lb, forward)
        if config is not None and config.get("spec") == spec:
            return  # nothing to write: keeps an idle Cell from touching anything
        obj = {
            "apiVersion": API_VERSION,
            "kind": kind,
            "metadata": {
                "name": cell.metadata.name,
                "namespace": cell.metadata.namespace,
                "labels": {"okra.mumo.co/cell": cell.metadata.name},
                "ownerReferences": [owner_ref(raw)],
            },
            "spec": spec,
        }
        await self.client.apply(obj, field_manager=FIELD_MANAGER, force=True)

    @staticmethod
    def _listener_spec(
        cell: Cell, lb: CellALB | CellNLB, forward: Iterable[Forward]
    ) -> tuple[str, dict[str, Any]]:
        """The ALB or NLB config's spec: the listener and the weighted forward."""
        assert cell.spec.ingress is not None
        spec: dict[str, Any] = {"listenerARN": lb.listener_arn}
        kind = "AWSNetworkLoadBalancerConfig"
        if not cell.spec.ingress.network:  # an ALB: okra's rule; an NLB: the default action
            kind = "AWSApplicationLoadBalancerConfig"
            rule = getattr(lb, "listener_rule", None) or DEFAULT_RULE
            spec["listenerRule"] = rule.model_dump(
                by_alias=True, exclude_defaults=False, mode="json"
            )
        spec["forwardTargetGroups"] = [
            {"name": f.name, "arn": f.arn, "weight": f.weight}
            for f in sorted(forward, key=lambda f: f.name)
        ]
        if lb.role_arn:
            spec["roleARN"] = lb.role_arn
        return kind, spec

    async def _build_runs(
        self, raw: dict[str, Any], cell: Cell, p: Plan
    ) -> tuple[list[dict[str, Any]], str | None]:
        """The AnalysisRuns the plan starts, built from their templates, in order; at the
        first template that cannot be used, those before it and what is wrong."""
        built: list[dict[str, Any]] = []
        for run in p.create_runs:
            try:
                built.append(await self._build_run(raw, cell, run, p))
            except TemplateError as e:
                return built, f"cannot start analysis {run.name}: {e}"
        return built, None

    async def _build_run(
        self, raw: dict[str, Any], cell: Cell, run: RunRequest, p: Plan
    ) -> dict[str, Any]:
        return await build_run(
            self.client,
            namespace=cell.metadata.namespace or "",
            name=run.name,
            templates=[
                TemplateRef(t.template_name, t.cluster_scope) for t in run.analysis.templates
            ],
            args=run.analysis.args or (),
            labels={
                "okra.mumo.co/cell": cell.metadata.name,
                "okra.mumo.co/rollout": p.status.rollout_id or "",
                "okra.mumo.co/background": str(run.background).lower(),
            },
            owner=raw,
        )

    async def _create(self, raw: dict[str, Any], obj: dict[str, Any]) -> None:
        with contextlib.suppress(AlreadyExistsError):
            await self.client.create(obj)

    async def _block(self, raw: dict[str, Any], version: str, cause: str) -> None:
        ns, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
        item = {
            "version": version,
            "cause": cause,
            "time": self.clock().isoformat().replace("+00:00", "Z"),
        }
        self.blocked_here.setdefault((ns, name), set()).add(version)
        for _ in range(5):
            try:
                current = await self.client.get(BLOCKLIST, name, ns)
            except NotFoundError:
                try:
                    await self.client.create(
                        {
                            "apiVersion": API_VERSION,
                            "kind": BLOCKLIST.kind,
                            "metadata": {
                                "name": name,
                                "namespace": ns,
                                "labels": {"okra.mumo.co/cell": name},
                            },
                            "spec": {"items": [item]},
                        }
                    )
                    return
                except AlreadyExistsError:
                    continue
            items = (current.get("spec") or {}).get("items") or []
            if any(i.get("version") == version for i in items):
                return
            current["spec"] = {**(current.get("spec") or {}), "items": [*items, item]}
            try:
                await self.client.update(current)
                return
            except ConflictError:
                continue
        raise ConflictError(409, "Conflict", f"could not add {version} to blocklist {ns}/{name}")

    async def _write_status(self, raw: dict[str, Any], status: CellStatus) -> bool:
        new = status.model_dump(by_alias=True, exclude_none=True, mode="json")
        if raw.get("status") == new:
            return True
        raw["status"] = new
        try:
            updated = await self.client.update_status(raw)
        except ConflictError:
            log.debug("cell changed while reconciling; planning again")
            return False
        except NotFoundError:
            return False
        raw["metadata"] = updated["metadata"]
        return True

    async def _report_only(self, raw: dict[str, Any], cell: Cell, message: str) -> None:
        status = cell.status or CellStatus()
        status.phase, status.health, status.message = "Error", "Degraded", message
        status.observed_generation = cell.metadata.generation
        self.events.event(raw, "Warning", "Unsupported", message)
        with contextlib.suppress(ApiError):
            await self._write_status(raw, status)


def route53_spec(lb: CellRoute53, forward: Iterable[Forward]) -> dict[str, Any]:
    """The AWSRoute53RecordSetConfig's spec: one weighted record per target group with
    weight, named by the target group (`SetIdentifier`) and pointing at its load balancer;
    a version's share is its records' weight (Route 53 weights are relative, and the
    shares total 100). Every field spelled out, defaults too, so that an unchanged spec
    compares equal to the one the API server holds."""
    spec: dict[str, Any] = {
        "hostedZoneID": lb.hosted_zone_id,
        "recordName": lb.record_name,
        "recordType": lb.record_type,
        "ttl": lb.ttl,
        "records": [
            {"setIdentifier": f.name, "weight": f.weight, "targetGroupARN": f.arn}
            for f in sorted(forward, key=lambda f: f.name)
        ],
    }
    if lb.role_arn:
        spec["roleARN"] = lb.role_arn
    return spec


def _blocked_versions(blocklist: dict[str, Any] | None) -> set[str]:
    items = ((blocklist or {}).get("spec") or {}).get("items") or []
    return {i["version"] for i in items if isinstance(i, dict) and "version" in i}


def setup(mgr: Manager, settings: Settings) -> None:
    rec = CellReconciler(
        mgr, mgr.event_recorder("cell-controller"), settings.aws, argocd=settings.argocd
    )
    cells = mgr.informer_for(CELL).store
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
        .watches(CLUSTER_FREEZE, freezes.objects_for_freeze(cells, rec.freezes.namespaces))
        .watches(NAMESPACE, freezes.objects_for_namespace(cells, rec.freezes.cluster))
        .with_options(max_concurrent_reconciles=settings.concurrency)
    )
    if settings.argocd:
        builder = builder.watches(APPLICATION, cells_with_argocd(cells))
    builder.complete(rec)
