"""The Cell controller's act: a plan's writes, idempotent, in the contract's order.

Durable facts first (the VersionBlocklist), then the status, guarded by the Cell's
resourceVersion and carrying the notifications it fires (the outbox), then everything
that follows from the status: the load balancer config applied server-side when its
weights change, cluster Secrets labelled, AnalysisRuns, check Jobs and Pauses created by
deterministic names, runs terminated and Pauses cancelled when their rollout ends. A plan
made from a stale Cell fails at the status write and does nothing; every later write is
idempotent, so a crash anywhere is repaired by the next reconcile.

The plan is only read: the status written (the plan's, with what a template that cannot
be used says and the outbox) is returned.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import ValidationError

from okra_controllers.actors import PolicyWatch, credit_for
from okra_controllers.analysis.templates import TemplateError, TemplateRef, build_run
from okra_controllers.api.kinds import ANALYSIS_RUN, CELL, PAUSE, SECRET
from okra_controllers.api.v1alpha1.analysis import AnalysisRunStatus
from okra_controllers.api.v1alpha1.cell import Cell, CellStatus, PauseSpec, RolloutCellStatus
from okra_controllers.api.v1alpha1.common import API_VERSION
from okra_controllers.cell.argocd import label_patch
from okra_controllers.cell.blocklist import Blocklists
from okra_controllers.cell.checkjobs import check_job, owner_ref
from okra_controllers.cell.configspec import config_spec
from okra_controllers.cell.history import DEFAULT_LIMIT, FINISHED, recorded, runs_to_read
from okra_controllers.cell.plan import Forward, PauseRequest, Plan, RunRequest
from okra_controllers.cell.reads import Caches
from okra_controllers.cell.report import told
from okra_controllers.notifications import outbox
from okra_controllers.notifications.notifier import Notifier, fields_for
from okra_controllers.notifications.triggers import triggers
from okra_controllers.statuswrite import write_status
from okra_runtime.cache import Store
from okra_runtime.client import Client
from okra_runtime.errors import AlreadyExistsError, NotFoundError
from okra_runtime.events import Event, EventRecorder
from okra_runtime.gvk import GVK

FIELD_MANAGER = "okra-cell-controller"
log = structlog.get_logger("okra.cell")
Obj = dict[str, Any]


@dataclass(frozen=True)
class Acted:
    status: RolloutCellStatus  # the status as written
    replaced: bool  # the write replaced a status the Cell had (not its first, nor the same)
    said: list[Event]  # the plan's Events in okra's words (`report.told`), to record


class Actor:
    def __init__(
        self,
        client: Client,
        events: EventRecorder,
        caches: Caches,
        blocklists: Blocklists,
        notifier: Notifier,
        clock: Callable[[], datetime.datetime],
        history: int = DEFAULT_LIMIT,
        policy: PolicyWatch | None = None,
    ) -> None:
        self.client = client
        self.policy = policy  # okra's actor policy: None, never in force
        self.events = events
        self.caches = caches
        self.blocklists = blocklists
        self.notifier = notifier
        self.clock = clock
        self.history = history

    async def act(self, raw: Obj, cell: Cell, p: Plan, config: Obj | None) -> Acted | None:
        """The plan's writes (`config`: the load balancer config it was made from). None
        when the status write lost a race: the Cell changed, nothing after it was done."""
        ns, name = cell.metadata.namespace or "", cell.metadata.name
        before = (cell.status or CellStatus()).as_rollout()
        if p.block is not None:
            await self.blocklists.append(raw, *p.block)
        # Runs are built (their templates read) before the status is written, so that a
        # template that cannot be used is said in the status message, not only in an Event.
        runs, run_problem = await self._build_runs(raw, cell, p)
        status = p.status.model_copy(update={"message": run_problem} if run_problem else {})
        # Notifications go out in the same write as the change they report (the outbox).
        now = self.clock()
        said = told(p.events, ns, self.caches.runs)
        fired = triggers(before, status, ((e.reason, e.message) for e in p.events))
        outbox.stage(raw, before, status, fired, lambda f: fields_for(raw, status, f), now)
        # The rollout's record too: the change it records and the record, in one write.
        enforced = self.policy is not None and self.policy.enforced()
        credit = credit_for(cell.metadata.annotations, enforced, before.credited_actor)
        status.history = recorded(
            before,
            status,
            said,
            now,
            annotations=cell.metadata.annotations,
            pinned=cell.spec.version,
            steps=len(canary.steps) if (canary := cell.spec.update_strategy.canary) else None,
            limit=self.history,
            runs=self._run_statuses(ns, before, status),
            credit=credit,
        )
        status.credited_actor = credit.spent
        written = raw.get("status")
        if not await self.write_status(raw, status):
            self.notifier.track(CELL, ns, name, before.notifications or [])
            return None
        self.notifier.track(CELL, ns, name, status.notifications or [])
        if p.forward is not None and cell.spec.ingress is not None:
            await self._apply_config(raw, cell, p.forward, config)
        await self._label_clusters(raw, cell, p)
        for obj in runs:
            await self._create(obj)
        if run_problem is not None:
            self.events.event(raw, "Warning", "AnalysisTemplateError", run_problem)
        for job in p.create_jobs:
            await self._create(check_job(raw, job))
        if p.create_pause is not None:
            await self._create(pause_object(raw, ns, name, p.create_pause))
        for run_name in p.terminate_runs:
            await self._stop(ANALYSIS_RUN, self.caches.runs, run_name, ns, "terminate")
        for pause_name in p.cancel_pauses:
            await self._stop(PAUSE, self.caches.pauses, pause_name, ns, "cancelled")
        return Acted(
            status, replaced=written is not None and raw.get("status") is not written, said=said
        )

    def _run_statuses(
        self, ns: str, before: RolloutCellStatus, after: RolloutCellStatus
    ) -> dict[str, AnalysisRunStatus]:
        """The statuses of the runs the record may take (`runs_to_read`), from the cache; a
        run whose status cannot be read is left out (it is recorded when it can be)."""
        got: dict[str, AnalysisRunStatus] = {}
        for name, any_phase in runs_to_read(before, after).items():
            st = (self.caches.runs.get(name, ns) or {}).get("status")
            if isinstance(st, dict) and (any_phase or st.get("phase") in FINISHED):
                with contextlib.suppress(ValidationError):
                    got[name] = AnalysisRunStatus.model_validate(st)
        return got

    async def write_status(self, raw: Obj, status: RolloutCellStatus) -> bool:
        """The status written over `raw`'s (`statuswrite.write_status`)."""
        return await write_status(self.client, raw, status)

    async def _label_clusters(self, raw: Obj, cell: Cell, p: Plan) -> None:
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
        self, raw: Obj, cell: Cell, forward: Iterable[Forward], config: Obj | None
    ) -> None:
        kind, spec = config_spec(cell, forward)
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

    async def _build_runs(self, raw: Obj, cell: Cell, p: Plan) -> tuple[list[Obj], str | None]:
        """The AnalysisRuns the plan starts, built from their templates, in order; at the
        first template that cannot be used, those before it and what is wrong."""
        built: list[Obj] = []
        for run in p.create_runs:
            try:
                built.append(await self._build_run(raw, cell, run, p))
            except TemplateError as e:
                return built, f"cannot start analysis {run.name}: {e}"
        return built, None

    async def _build_run(self, raw: Obj, cell: Cell, run: RunRequest, p: Plan) -> Obj:
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
            pin_from=as_planned(raw, p),
        )

    async def _create(self, obj: Obj) -> None:
        with contextlib.suppress(AlreadyExistsError):
            await self.client.create(obj)


def pause_object(raw: Obj, ns: str, name: str, pause: PauseRequest) -> Obj:
    """The Pause the plan starts, owned by the Cell `raw` (`name` in `ns`)."""
    return {
        "apiVersion": API_VERSION,
        "kind": PAUSE.kind,
        "metadata": {
            "name": pause.name,
            "namespace": ns,
            "labels": {"okra.mumo.co/cell": name},
            "ownerReferences": [owner_ref(raw)],
        },
        "spec": PauseSpec(expire_time=pause.expire_time).model_dump(
            by_alias=True, exclude_none=True, mode="json"
        ),
    }


def as_planned(raw: Obj, p: Plan) -> Obj:
    """The Cell as this pass writes it: its status with the plan's rollout fields (those the
    plan clears, gone), which a run's field references are read from when it is created."""
    status = {**(raw.get("status") or {}), **p.status.model_dump(by_alias=True, mode="json")}
    return {**raw, "status": {k: v for k, v in status.items() if v is not None}}
