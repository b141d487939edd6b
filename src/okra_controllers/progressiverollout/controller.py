"""The ProgressiveRollout controller, in observe → plan → act → report.

observe: the ProgressiveRollout, its ApplicationSet, the Applications the ApplicationSet owns
(ownerReferences), the Argo CD cluster Secrets of their destinations (labels), the other
ProgressiveRollouts naming the same ApplicationSet, the rollout's AnalysisRuns, and the Argo CD
AppProjects of the namespace when the kind is served (`Settings.argocd_projects`) — all from
caches. plan: `plan.plan` (pure). act: the status first (guarded by resourceVersion, so a plan
made from a stale object writes nothing), then Argo CD sync operations, AnalysisRuns, webhook
calls. report: status, conditions, Events, `okra_progressiverollout_*` metrics.

Syncing: okra writes Argo CD's `operation` on an Application — what `argocd app sync
--revision R` does — with `initiatedBy.username: okra` and okra's sync ID in `info`; Argo CD's
application-controller runs it and copies it into `status.operationState`, which is how okra
recognises the result of its own sync. Applications must not sync automatically: okra reports
and refuses an ApplicationSet whose Applications have `syncPolicy.automated`.

Deletion: the finalizer removes the sync operations okra wrote that Argo CD has not started
yet and waits for the running ones to finish (`plan.deletion`), reading the Applications from
the API server, so no Application is left with an okra sync pending; until then the status's
`Deleting` condition and a `WaitingForSyncs` Event say what it waits for.

Nothing lives in memory: stages, clusters, sync IDs and webhook results are in the status, so a
restarted manager carries on where the last one stopped and never syncs a finished cluster
again.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

import aiohttp
import structlog
from prometheus_client import Counter, Gauge

from okra_controllers.actors import PolicyWatch, credit_for, policy_watch
from okra_controllers.analysis.templates import TemplateError, TemplateRef, build_run
from okra_controllers.api.kinds import (
    ANALYSIS_RUN,
    APP_PROJECT,
    APPLICATION,
    APPLICATION_SET,
    CLUSTER_FREEZE,
    FREEZE,
    NAMESPACE,
    PROGRESSIVE_ROLLOUT,
    SECRET,
)
from okra_controllers.api.v1alpha1.progressiverollout import (
    ClusterPhase,
    ProgressiveRollout,
    ProgressiveRolloutStatus,
    RolloutPhase,
    WebhookResult,
)
from okra_controllers.clusters.connect import (
    SECRET_TYPE_LABEL,
    ClusterSecretError,
    parse_cluster_secret,
)
from okra_controllers.finalizers import remove_finalizer
from okra_controllers.freeze.watch import (
    hold_of,
    objects_for_freeze,
    objects_for_namespace,
    report_held,
    seconds_to_next,
    sources,
)
from okra_controllers.notifications import outbox
from okra_controllers.notifications.notifier import common_fields, notifier_for
from okra_controllers.notifications.triggers import Fired, rollout_triggers
from okra_controllers.progressiverollout.history import recorded
from okra_controllers.progressiverollout.plan import (
    POLL,
    App,
    Observed,
    Plan,
    Project,
    Requests,
    RunRequest,
    Sync,
    WebhookCall,
    parse_project,
    plan,
    plan_deletion,
    set_condition,
    waiting_message,
)
from okra_controllers.settings import ROLLOUT_HISTORY
from okra_controllers.statuswrite import write_status
from okra_runtime.cache import OWNER_INDEX, Store
from okra_runtime.client import Client
from okra_runtime.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.metrics import REGISTRY
from okra_runtime.predicates import AnnotationsChanged, Any_, GenerationChanged
from okra_runtime.reconcile import Request, Result
from okra_runtime.timeutil import parse_time, utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime.manager import Manager

FINALIZER = "okra.mumo.co/progressiverollout"
SYNC_ID_INFO = "okra-sync-id"
"""The name of the `operation.info` entry carrying okra's sync ID."""
INITIATOR = "okra"
PROMOTE = "okra.mumo.co/promote"
ABORT = "okra.mumo.co/abort"
RETRY = "okra.mumo.co/retry"
COMPARISON_ERRORS = ("ComparisonError", "UnknownError", "InvalidSpecError")
log = structlog.get_logger("okra.progressiverollout")

PHASES: tuple[str, ...] = tuple(p for p in get_args(RolloutPhase) if p)
"""The phases of a rollout's phase gauge: every phase but the unset one."""
PHASE = Gauge(
    "okra_progressiverollout_phase",
    "1 for the rollout's current phase, 0 for the others",
    ["namespace", "progressiverollout", "phase"],
    registry=REGISTRY,
)
STAGE = Gauge(
    "okra_progressiverollout_current_stage",
    "Index of the stage being rolled out",
    ["namespace", "progressiverollout"],
    registry=REGISTRY,
)
CLUSTERS = Gauge(
    "okra_progressiverollout_clusters",
    "Clusters of the current revision by phase",
    ["namespace", "progressiverollout", "phase"],
    registry=REGISTRY,
)
SYNCS = Counter(
    "okra_progressiverollout_syncs_total",
    "Sync operations okra wrote on Applications (reason: rollout or rollback)",
    ["namespace", "progressiverollout", "reason"],
    registry=REGISTRY,
)
WEBHOOKS = Counter(
    "okra_progressiverollout_webhook_calls_total",
    "Webhook calls by outcome",
    ["namespace", "progressiverollout", "outcome"],
    registry=REGISTRY,
)


@dataclass(frozen=True)
class ClusterView:
    """An Argo CD cluster Secret, as far as a rollout needs it."""

    name: str
    server: str
    labels: dict[str, str]
    project: str = ""


def _info(op: dict[str, Any] | None) -> str | None:
    for item in (op or {}).get("info") or []:
        if item.get("name") == SYNC_ID_INFO:
            return str(item.get("value"))
    return None


def _automated(app: dict[str, Any]) -> bool:
    auto = ((app.get("spec") or {}).get("syncPolicy") or {}).get("automated")
    if auto is None:
        return False
    return bool(auto.get("enabled", True)) if isinstance(auto, dict) else True


def _secret_field(secret: dict[str, Any], key: str) -> str:
    """One `data` field of a Secret, decoded ("" when absent or unreadable)."""
    value = (secret.get("data") or {}).get(key)
    if not value:
        return str((secret.get("stringData") or {}).get(key) or "")
    try:
        return base64.b64decode(value).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""


def application_view(
    app: dict[str, Any], cluster: str, labels: dict[str, str], found: ClusterView | None = None
) -> App:
    """What the plan needs of an Argo CD Application (and of its cluster's Secret)."""
    status = app.get("status") or {}
    dest = (app.get("spec") or {}).get("destination") or {}
    sync = status.get("sync") or {}
    op_state = status.get("operationState") or {}
    op = app.get("operation")
    result = op_state.get("syncResult") or {}
    op_revision = result.get("revision") or (
        (op_state.get("operation") or {}).get("sync") or {}
    ).get("revision", "")
    history = status.get("history") or []
    deployed = ""
    if op_state.get("phase") == "Succeeded" and result.get("revision"):
        deployed = str(result["revision"])
    elif history:
        deployed = str(history[-1].get("revision") or "")
    errors = [
        str(c.get("message") or c.get("type"))
        for c in status.get("conditions") or []
        if c.get("type") in COMPARISON_ERRORS
    ]
    return App(
        name=app["metadata"]["name"],
        cluster=cluster,
        labels=labels,
        sync_status=str(sync.get("status") or ""),
        sync_revision=str(sync.get("revision") or ""),
        health=str((status.get("health") or {}).get("status") or ""),
        deployed_revision=deployed,
        automated=_automated(app),
        pending_sync_id=_info(op),
        operation_pending=op is not None,
        op_phase=str(op_state.get("phase") or ""),
        op_sync_id=_info(op_state.get("operation")),
        op_revision=str(op_revision or ""),
        op_message=str(op_state.get("message") or ""),
        op_started_at=parse_time(op_state.get("startedAt")),
        op_finished_at=parse_time(op_state.get("finishedAt")),
        reconciled_at=parse_time(status.get("reconciledAt")),
        unreachable="; ".join(errors) or None,
        multi_source=bool((app.get("spec") or {}).get("sources")),
        project=str((app.get("spec") or {}).get("project") or "default"),
        dest_server=str(dest.get("server") or ""),
        dest_name=str(dest.get("name") or ""),
        dest_namespace=str(dest.get("namespace") or ""),
        cluster_server=found.server if found else str(dest.get("server") or ""),
        cluster_project=found.project if found else "",
        resource_version=str(app["metadata"].get("resourceVersion") or ""),
    )


def sync_operation(sync: Sync, app: dict[str, Any] | None = None) -> dict[str, Any]:
    """Argo CD's `operation` for a sync of one Application to `sync.revision`, as Argo CD's API
    server writes it for `argocd app sync --revision`: the Application's
    `syncPolicy.syncOptions` (e.g. CreateNamespace=true) and `retry` apply to it, prune off."""
    policy = ((app or {}).get("spec") or {}).get("syncPolicy") or {}
    op: dict[str, Any] = {
        "initiatedBy": {"username": INITIATOR},
        "info": [
            {"name": SYNC_ID_INFO, "value": sync.sync_id},
            {"name": "reason", "value": f"okra progressive {sync.reason}"},
        ],
        "sync": {"revision": sync.revision},
    }
    if policy.get("syncOptions"):
        op["sync"]["syncOptions"] = list(policy["syncOptions"])
    if policy.get("retry"):
        op["retry"] = policy["retry"]
    return op


class ProgressiveRolloutReconciler:
    def __init__(
        self,
        mgr: Manager,
        events: EventRecorder,
        clock: Callable[[], datetime.datetime] = utcnow,
        *,
        projects: bool = False,
        history: int = ROLLOUT_HISTORY,
    ) -> None:
        self.client: Client = mgr.client
        self.history = history  # revisions the record keeps (`--rollout-history`)
        self.rollouts: Store = mgr.informer_for(PROGRESSIVE_ROLLOUT).store
        self.apps: Store = mgr.informer_for(APPLICATION).store
        self.appsets: Store = mgr.informer_for(APPLICATION_SET).store
        self.secrets: Store = mgr.informer_for(SECRET).store
        self.runs: Store = mgr.informer_for(ANALYSIS_RUN).store
        self.freezes = sources(mgr)
        # Argo CD's AppProjects, when the kind is served (`Settings.argocd_projects`)
        self.projects: Store | None = mgr.informer_for(APP_PROJECT).store if projects else None
        self.events = events
        self.clock = clock
        self.notifier = notifier_for(mgr)
        self.policy: PolicyWatch | None = policy_watch(mgr)  # okra's actor policy

    # -- observe ---------------------------------------------------------------

    def _owner(self, pr: ProgressiveRollout) -> str | None:
        """The ProgressiveRollout rolling the ApplicationSet out, if another one: the oldest
        naming it (then by name)."""
        ns = pr.metadata.namespace or ""
        rivals = [
            r
            for r in self.rollouts.list(ns)
            if ((r.get("spec") or {}).get("sourceRef") or {}).get("name") == pr.spec.source_ref.name
            and not r["metadata"].get("deletionTimestamp")
        ]
        if not rivals:
            return None
        first = min(
            rivals,
            key=lambda r: (r["metadata"].get("creationTimestamp") or "", r["metadata"]["name"]),
        )
        name = str(first["metadata"]["name"])
        return None if name == pr.metadata.name else name

    def _clusters(self, ns: str) -> tuple[dict[str, ClusterView], dict[str, ClusterView]]:
        by_server: dict[str, ClusterView] = {}
        by_name: dict[str, ClusterView] = {}
        for s in self.secrets.list(ns):
            if (s["metadata"].get("labels") or {}).get(SECRET_TYPE_LABEL) != "cluster":
                continue
            try:
                c = parse_cluster_secret(s)
            except ClusterSecretError as e:
                log.warning("unusable cluster secret", error=str(e))
                continue
            view = ClusterView(c.name, c.server, dict(c.labels), _secret_field(s, "project"))
            by_server[c.server] = view
            by_name[c.name] = view
        return by_server, by_name

    def _apps(self, ns: str, appset_uid: str) -> tuple[App, ...]:
        by_server, by_name = self._clusters(ns)
        out = []
        for a in self.apps.by_index(OWNER_INDEX, appset_uid):
            dest = (a.get("spec") or {}).get("destination") or {}
            server = str(dest.get("server") or "").rstrip("/")
            found = by_server.get(server) or by_name.get(str(dest.get("name") or ""))
            cluster = found.name if found else str(dest.get("name") or server)
            labels = dict(found.labels) if found else {}
            out.append(application_view(a, cluster, labels, found))
        return tuple(sorted(out, key=lambda a: a.name))

    def _projects(self, ns: str) -> dict[str, Project] | None:
        if self.projects is None:
            return None
        return {
            str(p["metadata"]["name"]): parse_project(p) for p in self.projects.list(ns, copy=False)
        }

    def observe(self, pr: ProgressiveRollout, raw: dict[str, Any]) -> Observed:
        ns = pr.metadata.namespace or ""
        now = self.clock()
        appset = self.appsets.get(pr.spec.source_ref.name, ns)
        annotations = pr.metadata.annotations
        runs = {
            r["metadata"]["name"]: str((r.get("status") or {}).get("phase") or "")
            for r in self.runs.by_index(OWNER_INDEX, pr.metadata.uid or "")
        }
        return Observed(
            name=pr.metadata.name,
            generation=pr.metadata.generation or 0,
            spec=pr.spec,
            status=pr.status or ProgressiveRolloutStatus(),
            now=now,
            source_found=appset is not None,
            owner=self._owner(pr),
            uid=pr.metadata.uid or "",
            apps=self._apps(ns, appset["metadata"]["uid"]) if appset else (),
            runs=runs,
            requests=Requests(
                promote=annotations.get(PROMOTE),
                abort=annotations.get(ABORT),
                retry=annotations.get(RETRY),
            ),
            freeze=hold_of(self.freezes, raw, now),
            projects=self._projects(ns),
        )

    # -- reconcile -------------------------------------------------------------

    async def reconcile(self, req: Request) -> Result | None:
        raw = self.rollouts.get(req.name, req.namespace)
        if raw is None:
            report_held("ProgressiveRollout", req.namespace or "", req.name, None)
            return None
        if raw["metadata"].get("deletionTimestamp"):
            return await self._finalize(raw)
        if FINALIZER not in (raw["metadata"].get("finalizers") or []):
            raw["metadata"]["finalizers"] = [*(raw["metadata"].get("finalizers") or []), FINALIZER]
            try:
                raw = await self.client.update(raw)
            except ConflictError:
                return Result(requeue=True)
            except NotFoundError:
                return None
        pr = ProgressiveRollout.model_validate(raw)
        observed = self.observe(pr, raw)
        p = plan(observed)
        if p.webhooks:
            # A webhook is not idempotent: call it only from a plan made on the object as it
            # is now (the cache may lag behind this controller's last status write).
            live = await self.client.get(PROGRESSIVE_ROLLOUT, req.name, req.namespace)
            if live["metadata"].get("resourceVersion") != raw["metadata"].get("resourceVersion"):
                return Result(requeue_after=0.2)
            await self._call_webhooks(raw, p)
        # Notifications go out in the same write as the change they report (the outbox),
        # and so does the record of what the rollout did.
        before = pr.status or ProgressiveRolloutStatus()
        enforced = self.policy is not None and self.policy.enforced()
        credit = credit_for(pr.metadata.annotations, enforced, None)  # tokens are fresh
        p.status.history = recorded(before, p.status, self.clock(), self.history, credit)
        fired = rollout_triggers(before, p.status, ((e.reason, e.message) for e in p.events))
        outbox.stage(raw, before, p.status, fired, lambda f: fields(raw, p.status, f), self.clock())
        ns = req.namespace or ""
        written = raw.get("status")
        if not await self._write_status(raw, p.status):
            self.notifier.track(PROGRESSIVE_ROLLOUT, ns, req.name, before.notifications or [])
            return Result(requeue=True)  # changed under us: plan again from fresh state
        self.notifier.track(PROGRESSIVE_ROLLOUT, ns, req.name, p.status.notifications or [])
        await self._act(raw, pr, p, {a.name: a.resource_version for a in observed.apps})
        self._report(raw, p)
        # A rollout that just moved (a stage or cluster changed in its status) is between
        # two hops: its next ones go before first reports on new objects. Its first status
        # is a first report.
        moving = (
            written is not None
            and raw.get("status") is not written
            and p.status.phase == "Progressing"
        )
        after = p.requeue_after
        starts = seconds_to_next(self.freezes, raw, self.clock())
        if starts is not None:  # the moment a freeze starts: held at the next boundary
            after = starts + 0.01 if after is None else min(after, starts + 0.01)
        return Result(requeue_after=after, in_progress=moving)

    # -- act -------------------------------------------------------------------

    async def _act(
        self, raw: dict[str, Any], pr: ProgressiveRollout, p: Plan, seen: Mapping[str, str]
    ) -> None:
        """`seen`: each Application's resourceVersion in the view the plan was made from."""
        ns, name = pr.metadata.namespace or "", pr.metadata.name
        for s in p.syncs:
            app = self.apps.get(s.application, ns)
            if app is None or not seen.get(s.application):
                continue
            # Guarded by the resourceVersion the plan saw, not the cache's now (the cache
            # may have moved on during this reconcile's awaits): if the Application changed
            # since (Argo CD took the operation, or this controller wrote it a moment ago and
            # the cache lagged), the write is refused and the next reconcile decides again.
            # An operation is therefore never written twice, nor over one Argo CD started.
            patch = {
                "metadata": {"resourceVersion": seen[s.application]},
                "operation": sync_operation(s, app),
            }
            try:
                await self.client.patch(APPLICATION, s.application, patch, namespace=ns)
            except (NotFoundError, ConflictError):
                log.debug(
                    "application changed since planned; not written", application=s.application
                )
                continue
            SYNCS.labels(ns, name, s.reason).inc()
            log.info(
                "sync written",
                application=s.application,
                revision=s.revision,
                sync_id=s.sync_id,
                reason=s.reason,
            )
        for run in p.create_runs:
            await self._create_run(raw, pr, run, p)
        for run_name in p.terminate_runs:
            with contextlib.suppress(NotFoundError):
                await self.client.patch(
                    ANALYSIS_RUN, run_name, {"spec": {"terminate": True}}, namespace=ns
                )

    async def _create_run(
        self, raw: dict[str, Any], pr: ProgressiveRollout, run: RunRequest, p: Plan
    ) -> None:
        ns = pr.metadata.namespace or ""
        try:
            obj = await build_run(
                self.client,
                namespace=ns,
                name=run.name,
                templates=[
                    TemplateRef(t.template_name, t.cluster_scope) for t in run.analysis.templates
                ],
                args=run.args,
                labels={
                    "okra.mumo.co/progressiverollout": pr.metadata.name,
                    "okra.mumo.co/revision": (p.status.revision or "")[:63],
                },
                owner=raw,
            )
        except TemplateError as e:
            self.events.event(raw, "Warning", "AnalysisTemplateError", f"stage {run.stage!r}: {e}")
            return
        with contextlib.suppress(AlreadyExistsError):
            await self.client.create(obj)

    async def _call_webhooks(self, raw: dict[str, Any], p: Plan) -> None:
        """Call the webhooks the plan asks for and record their outcome in the status about
        to be written (a crash before that write calls them again: at least once)."""
        if not p.webhooks:
            return
        ns, name = raw["metadata"].get("namespace") or "", raw["metadata"]["name"]
        async with aiohttp.ClientSession() as session:
            for call in p.webhooks:
                result = await _call(session, call, self.clock())
                WEBHOOKS.labels(ns, name, "success" if result.succeeded else "failure").inc()
                stages = p.status.stages or []
                ss = stages[call.stage]
                ss.webhooks = [*(w for w in ss.webhooks or [] if w.name != call.key), result]
                if not result.succeeded:
                    self.events.event(
                        raw, "Warning", "WebhookFailed", f"{call.key}: {result.message}"
                    )

    async def _write_status(self, raw: dict[str, Any], status: ProgressiveRolloutStatus) -> bool:
        return await write_status(self.client, raw, status)

    def _report(self, raw: dict[str, Any], p: Plan) -> None:
        ns, name = raw["metadata"].get("namespace") or "", raw["metadata"]["name"]
        for e in p.events:
            self.events.event(raw, e.type, e.reason, e.message)
            log.info("progressiverollout event", reason=e.reason, message=e.message)
        for phase in PHASES:
            PHASE.labels(ns, name, phase).set(1 if p.status.phase == phase else 0)
        STAGE.labels(ns, name).set(p.status.current_stage or 0)
        held = any(c.type == "Frozen" and c.reason == "Held" for c in p.status.conditions or [])
        report_held("ProgressiveRollout", ns, name, held)
        counts: dict[str, int] = {}
        seen: set[str] = set()
        for ss in p.status.stages or []:
            for c in ss.clusters or []:
                if c.name in seen:
                    continue
                seen.add(c.name)
                counts[c.phase] = counts.get(c.phase, 0) + 1
        for phase in get_args(ClusterPhase):
            CLUSTERS.labels(ns, name, phase).set(counts.get(phase, 0))

    # -- delete ----------------------------------------------------------------

    async def _finalize(self, raw: dict[str, Any]) -> Result | None:
        """Cancel okra's pending syncs, wait for the running ones, then let the object go.

        Read from the API server, never from the cache: a sync this controller wrote a
        moment ago may not be in the cache yet, and one left behind is a sync Argo CD runs
        for a rollout the user deleted. The finalizer stays while any is pending."""
        if FINALIZER not in (raw["metadata"].get("finalizers") or []):
            return None
        ns = raw["metadata"].get("namespace") or ""
        apps = await self._live_apps(raw)
        d = plan_deletion(application_view(a, "", {}) for a in apps.values())
        refused = await self._cancel(raw, d.cancel, apps)
        if refused or d.running:
            await self._report_waiting(raw, waiting_message(d.running, refused))
            # A refused cancel is planned again from a fresh read (backoff); a running sync
            # is looked at when its Application changes, and every POLL seconds at least.
            return Result(requeue=True) if refused else Result(requeue_after=POLL)

        def forget_phases() -> None:
            for phase in PHASES:
                with contextlib.suppress(KeyError):
                    PHASE.remove(ns, raw["metadata"]["name"], phase)

        return await remove_finalizer(self.client, raw, FINALIZER, on_removed=forget_phases)

    async def _live_apps(self, raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The Applications of the rollout's ApplicationSet, as the API server holds them
        (none when another rollout rolls that ApplicationSet out: the syncs are its)."""
        if self._owner(ProgressiveRollout.model_validate(raw)) is not None:
            return {}
        ns = raw["metadata"].get("namespace") or ""
        source = ((raw.get("spec") or {}).get("sourceRef") or {}).get("name") or ""
        return {
            a["metadata"]["name"]: a
            for a in (await self.client.list(APPLICATION, ns)).items
            if any(
                o.get("kind") == APPLICATION_SET.kind and o.get("name") == source
                for o in a["metadata"].get("ownerReferences") or []
            )
        }

    async def _cancel(
        self, raw: dict[str, Any], names: tuple[str, ...], apps: dict[str, dict[str, Any]]
    ) -> list[str]:
        """Remove okra's pending `operation` from `names`; the ones the API server refused.

        A json patch with a test of the operation read: one that Argo CD started, or that
        changed, in between is not removed (the next pass reads it again)."""
        ns = raw["metadata"].get("namespace") or ""
        removed, refused = [], []
        for name in names:
            op = apps[name].get("operation")
            try:
                await self.client.patch(
                    APPLICATION,
                    name,
                    [
                        {"op": "test", "path": "/operation", "value": op},
                        {"op": "remove", "path": "/operation"},
                    ],
                    namespace=ns,
                    patch_type="json",
                )
            except NotFoundError:
                continue  # the Application is gone, and its operation with it
            except ApiError as e:
                log.info("pending sync not cancelled; reading again", application=name, error=e)
                refused.append(name)
                continue
            removed.append(name)
        if removed:
            self.events.event(
                raw, "Normal", "SyncsCancelled", f"removed pending syncs from {', '.join(removed)}"
            )
        return refused

    async def _report_waiting(self, raw: dict[str, Any], message: str) -> None:
        """Say in the status (condition Deleting) and an Event what deletion waits for."""
        status = ProgressiveRolloutStatus.model_validate(raw.get("status") or {})
        before = next((c for c in status.conditions or [] if c.type == "Deleting"), None)
        if before is not None and before.message == message:
            return
        set_condition(
            status,
            "Deleting",
            True,
            "WaitingForSyncs",
            message,
            self.clock(),
            raw["metadata"].get("generation") or 0,
        )
        self.events.event(raw, "Normal", "WaitingForSyncs", f"deletion waits: {message}")
        await self._write_status(raw, status)


async def _call(
    session: aiohttp.ClientSession, call: WebhookCall, now: datetime.datetime
) -> WebhookResult:
    w = call.webhook
    try:
        async with session.request(
            w.method,
            w.url,
            json=dict(call.payload) if w.method != "GET" else None,
            timeout=aiohttp.ClientTimeout(total=w.timeout_seconds),
        ) as resp:
            ok = resp.status == w.expected_status
            return WebhookResult(
                name=call.key,
                status_code=resp.status,
                succeeded=ok,
                message=None
                if ok
                else f"{w.url} answered {resp.status}, expected {w.expected_status}",
                time=now,
            )
    except (aiohttp.ClientError, TimeoutError) as e:
        return WebhookResult(
            name=call.key,
            succeeded=False,
            message=f"{w.url}: {type(e).__name__}: {e}"[:1000],
            time=now,
        )


def fields(raw: dict[str, Any], status: ProgressiveRolloutStatus, fired: Fired) -> dict[str, Any]:
    """The fields of a ProgressiveRollout's notification (body and templates)."""
    return {
        **common_fields(raw, fired),
        "progressiveRollout": raw["metadata"]["name"],
        "phase": status.phase,
        "revision": status.revision,
        "step": fired.step + 1 if fired.step is not None else None,
        "currentStage": status.current_stage,
    }


def rollouts_for_application(
    rollouts: Store, appsets: Store
) -> Callable[[dict[str, Any]], list[Request]]:
    """Map an Application to the ProgressiveRollouts of the ApplicationSet owning it."""

    def mapper(app: dict[str, Any]) -> list[Request]:
        ns = app["metadata"].get("namespace") or ""
        owners = {
            o.get("name")
            for o in app["metadata"].get("ownerReferences") or []
            if o.get("kind") == APPLICATION_SET.kind
        }
        return [
            Request(r["metadata"]["name"], ns)
            for r in rollouts.list(ns)
            if ((r.get("spec") or {}).get("sourceRef") or {}).get("name") in owners
        ]

    return mapper


def rollouts_for_appset(rollouts: Store) -> Callable[[dict[str, Any]], list[Request]]:
    def mapper(appset: dict[str, Any]) -> list[Request]:
        ns = appset["metadata"].get("namespace") or ""
        return [
            Request(r["metadata"]["name"], ns)
            for r in rollouts.list(ns)
            if ((r.get("spec") or {}).get("sourceRef") or {}).get("name")
            == appset["metadata"]["name"]
        ]

    return mapper


def rollouts_in_namespace(rollouts: Store) -> Callable[[dict[str, Any]], list[Request]]:
    """A cluster Secret (labels) or a rival ProgressiveRollout affects every rollout beside it."""

    def mapper(obj: dict[str, Any]) -> list[Request]:
        if (
            obj.get("kind") == SECRET.kind
            and (obj["metadata"].get("labels") or {}).get(SECRET_TYPE_LABEL) != "cluster"
        ):
            return []
        ns = obj["metadata"].get("namespace") or ""
        return [Request(r["metadata"]["name"], ns) for r in rollouts.list(ns)]

    return mapper


def setup(mgr: Manager, settings: Settings) -> None:
    """The manager's entry (`CONTROLLERS["progressiverollout"]`)."""
    rec = ProgressiveRolloutReconciler(
        mgr,
        mgr.event_recorder("progressiverollout-controller"),
        projects=settings.argocd_projects,
        history=settings.rollout_history,
    )
    rollouts = mgr.informer_for(PROGRESSIVE_ROLLOUT).store
    appsets = mgr.informer_for(APPLICATION_SET).store
    b = (
        mgr.builder("progressiverollout")
        .for_(PROGRESSIVE_ROLLOUT, predicates=(Any_(GenerationChanged(), AnnotationsChanged()),))
        .owns(ANALYSIS_RUN)
        .watches(APPLICATION, rollouts_for_application(rollouts, appsets))
        .watches(APPLICATION_SET, rollouts_for_appset(rollouts))
        .watches(SECRET, rollouts_in_namespace(rollouts))
        .watches(FREEZE, objects_for_freeze(rollouts))
        .watches(CLUSTER_FREEZE, objects_for_freeze(rollouts, rec.freezes.namespaces))
        .watches(NAMESPACE, objects_for_namespace(rollouts, rec.freezes.cluster))
        .with_options(max_concurrent_reconciles=settings.concurrency)
    )
    if settings.argocd_projects:
        b = b.watches(APP_PROJECT, rollouts_in_namespace(rollouts))
    b.complete(rec)
