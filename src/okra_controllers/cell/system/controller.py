"""The system Cell controller: observe (EKS, the clusters' API servers, Argo CD cluster
Secrets and Applications, the applications' Cells and Checks) → plan
(`cell.system.plan`, pure) → act (status first, then the objects by server-side apply,
what is no longer wanted deleted) → report (status, Events).

Only Cells with `spec.clusters` are this controller's (`cell.system.shape`: its `for_(CELL)`
takes `IsSystemCell`); the Cell controller leaves them alone and runs the applications' Cells
this one makes.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import hashlib
import time
from typing import Any

import structlog
from pydantic import ValidationError

from okra_controllers.api.kinds import (
    APPLICATION,
    CELL,
    CHECK,
    LBC_TARGET_GROUP_BINDING,
    SECRET,
    TARGET_GROUP,
)
from okra_controllers.api.v1alpha1.argocd import CellArgoCD
from okra_controllers.api.v1alpha1.cell import Cell, CellStatus, RolloutCellStatus, SystemCellStatus
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.api.validation import first_problem
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.eks import AwsReadError, EksCluster, observe_eks
from okra_controllers.cell.argocd import SECRET_TYPE_LABEL, observe_clusters
from okra_controllers.cell.checkjobs import owner_ref
from okra_controllers.cell.observe import ABORT, PAUSED, PROMOTE
from okra_controllers.cell.system.children import argocd_spec, with_spec_hash
from okra_controllers.cell.system.model import (
    AppsOn,
    CheckSeen,
    ChildSeen,
    ClusterSeen,
    Obj,
    SystemObserved,
    SystemPlan,
)
from okra_controllers.cell.system.names import APP_LABEL, SYSTEM_LABEL, version_key
from okra_controllers.cell.system.plan import plan
from okra_controllers.cell.system.shape import IsSystemCell, is_system
from okra_controllers.clusters.connect import (
    ArgoCluster,
    AwsAuth,
    ClusterConnections,
    ClusterSecretError,
    parse_cluster_secret,
)
from okra_controllers.notifications.triggers import PREFIX
from okra_controllers.settings import Settings
from okra_controllers.statuswrite import write_status
from okra_runtime.cache import Store
from okra_runtime.client import Client
from okra_runtime.errors import ApiError, ConflictError, NoKindMatchError, NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.gvk import GVK
from okra_runtime.manager import Manager
from okra_runtime.reconcile import Request, Result
from okra_runtime.timeutil import parse_time, utcnow

FIELD_MANAGER = "okra-system-cell-controller"
REACH_TIMEOUT = 5.0
REACH_TTL = 10.0
Bindings = tuple[tuple[dict[str, str], str], ...]
log = structlog.get_logger("okra.system")


class SystemReconciler:
    def __init__(
        self,
        mgr: Manager,
        events: EventRecorder,
        aws: AwsConfig,
        argocd: bool,
        resync: float = 30.0,
    ) -> None:
        """`resync`: EKS and the clusters' API servers have no watch, so a system Cell is
        looked at again this often while nothing else happens."""
        self.resync = resync
        self.client: Client = mgr.client
        self.cells: Store = mgr.informer_for(CELL).store
        self.target_groups: Store = mgr.informer_for(TARGET_GROUP).store
        self.checks: Store = mgr.informer_for(CHECK).store
        self.secrets: Store = mgr.informer_for(SECRET).store
        self.apps: Store | None = mgr.informer_for(APPLICATION).store if argocd else None
        self.events = events
        self.aws = aws
        self.connections = ClusterConnections(aws)
        self._reached: dict[tuple[str, str, bool], tuple[float, Bindings | None]] = {}
        """(cluster, how it is reached, bindings asked) -> when it last answered and its
        bindings: a system Cell is reconciled at every step of its applications' Cells,
        and a cluster that answered less than `REACH_TTL` ago is not asked again."""

    async def reconcile(self, req: Request) -> Result | None:
        raw = self.cells.get(req.name, req.namespace)
        if raw is None or not is_system(raw):
            return None  # gone, or an application's Cell (edited into one, or mapped here)
        try:
            cell = Cell.model_validate(raw)
        except ValidationError as e:  # the CRD's schema lets through what pydantic refuses
            await self._refuse(raw, e)
            return None
        if cell.metadata.generation != (cell.status.observed_generation if cell.status else None):
            for warning in deprecated_spellings("Cell", raw.get("spec")):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)
        o = await self._observe(raw, cell)
        p = plan(o)
        if not await self._write_status(raw, p.status):
            return Result(requeue=True)
        for ev in p.events:
            self.events.event(raw, ev.type, ev.reason, ev.message)
        await self._act(raw, o, p)
        after = self.resync if p.requeue_after is None else min(self.resync, p.requeue_after)
        return Result(requeue_after=after)

    # -- observe ---------------------------------------------------------------

    async def _observe(self, raw: Obj, cell: Cell) -> SystemObserved:
        ns, name = cell.metadata.namespace or "", cell.metadata.name
        mine = {SYSTEM_LABEL: name}
        secrets = self.secrets.list(ns, {"matchLabels": {SECRET_TYPE_LABEL: "cluster"}})
        children = {
            c["metadata"]["labels"].get(APP_LABEL, ""): ChildSeen(
                status=_status(c),
                generation=int(c["metadata"].get("generation") or 0),
                annotations=dict(c["metadata"].get("annotations") or {}),
                spec=dict(c.get("spec") or {}),
                resource_version=str(c["metadata"].get("resourceVersion") or ""),
            )
            for c in self.cells.list(ns, {"matchLabels": mine})
        }
        checks = {
            c["metadata"]["name"]: _check_seen(c)
            for c in self.checks.list(ns, {"matchLabels": mine})
        }
        clusters = await self._clusters(cell, secrets)
        o = SystemObserved(
            name=name,
            namespace=ns,
            generation=int(cell.metadata.generation or 0),
            spec=cell.spec,
            status=(cell.status or CellStatus()).as_system(),
            now=utcnow(),
            clusters=clusters,
            children=children,
            checks=checks,
            secrets={
                s["metadata"]["name"]: dict(s["metadata"].get("labels") or {}) for s in secrets
            },
            paused=(cell.metadata.annotations or {}).get(PAUSED) == "true",
            subscriptions={
                k: v for k, v in (cell.metadata.annotations or {}).items() if k.startswith(PREFIX)
            },
        )
        return _with_argocd(o, secrets, self.apps)

    async def _clusters(self, cell: Cell, secrets: list[Obj]) -> dict[str, ClusterSeen]:
        """Each `spec.clusters` entry: what EKS says, its Argo CD Secret, whether its API
        server answers (through the Secret's credentials if it has one, else EKS's)."""
        entries = cell.spec.clusters or []
        by_name: dict[str, Obj] = {}
        for s in secrets:
            try:
                parsed = parse_cluster_secret(s)
            except ClusterSecretError:
                continue
            for key in (parsed.name, parsed.aws_auth.cluster_name if parsed.aws_auth else ""):
                if key:
                    by_name.setdefault(key, s)
        try:
            found = await observe_eks(self.aws)
        except AwsReadError as e:
            return {c.name: ClusterSeen(problem=f"EKS: {e}") for c in entries}
        eks = {c.name: c for c in found.clusters}
        wants_bindings = any(
            ref[0].targetgroup_binding_selector
            for a in cell.spec.applications or []
            if (ref := a.target_group_ref()) is not None
        )

        async def one(entry_name: str, eks_name: str) -> tuple[str, ClusterSeen]:
            c = eks.get(eks_name)
            secret = by_name.get(entry_name) or by_name.get(eks_name)
            secret_name = secret["metadata"]["name"] if secret is not None else None
            if c is None:
                problem = "EKS DescribeCluster failed" if eks_name in found.unknown else ""
                return entry_name, ClusterSeen(problem=problem, secret=secret_name)
            reachable, problem, bindings = False, "", None
            if c.status == "ACTIVE":
                how = secret["metadata"].get("resourceVersion", "") if secret else c.endpoint
                key = (c.name, str(how), wants_bindings)
                cached = self._reached.get(key)
                if cached is not None and time.monotonic() - cached[0] < REACH_TTL:
                    reachable, bindings = True, cached[1]
                else:
                    reachable, problem, bindings = await self._reach(c, secret, wants_bindings)
                    if reachable:
                        now = time.monotonic()
                        for k in [k for k, v in self._reached.items() if now - v[0] >= REACH_TTL]:
                            del self._reached[k]
                        self._reached[key] = (now, bindings)
                    else:
                        self._reached.pop(key, None)
            return entry_name, ClusterSeen(
                eks_status=c.status,
                tags=dict(c.tags),
                reachable=reachable,
                problem=problem,
                secret=secret_name,
                bindings=bindings,
            )

        pairs = await asyncio.gather(*(one(e.name, e.eks_name) for e in entries))
        return dict(pairs)

    async def _reach(
        self, c: EksCluster, secret: Obj | None, wants_bindings: bool
    ) -> tuple[bool, str, Bindings | None]:
        """Whether the cluster's API server answers, why not, and (if asked) its
        TargetGroupBindings' labels and target groups."""
        try:
            if secret is not None:
                client = await self.connections.client_for(secret)
            else:
                ca = base64.b64decode(c.ca_data, validate=True) if c.ca_data else None
                direct = ArgoCluster(
                    name=c.name, server=c.endpoint, ca_data=ca, aws_auth=AwsAuth(c.name)
                )
                version = hashlib.sha256(f"{c.endpoint}\n{c.ca_data}".encode()).hexdigest()
                client = await self.connections.client_for_cluster(f"eks:{c.name}", version, direct)
            await asyncio.wait_for(client.request("GET", "/version"), REACH_TIMEOUT)
        except TimeoutError:
            return False, f"no answer in {REACH_TIMEOUT:g}s", None
        except binascii.Error:
            return False, "EKS CA data is not base64", None
        except Exception as e:  # one cluster's failure must not stop the others
            return False, f"{type(e).__name__}: {str(e)[:300]}", None
        if not wants_bindings:
            return True, "", None
        try:
            items = await asyncio.wait_for(client.list(LBC_TARGET_GROUP_BINDING), REACH_TIMEOUT)
        except NoKindMatchError:
            return True, "", ()  # no TargetGroupBinding kind there: none
        except Exception as e:  # reported by the application that needs them
            log.info("TargetGroupBindings not read", cluster=c.name, error=str(e)[:300])
            return True, "", None
        return (
            True,
            "",
            tuple(
                (
                    dict(b["metadata"].get("labels") or {}),
                    str((b.get("spec") or {}).get("targetGroupARN") or ""),
                )
                for b in items.items
            ),
        )

    # -- act -------------------------------------------------------------------

    async def _write_status(self, raw: Obj, status: SystemCellStatus) -> bool:
        return await write_status(self.client, raw, status)

    async def _act(self, raw: Obj, o: SystemObserved, p: SystemPlan) -> None:
        owner = owner_ref(raw)
        for kind, store, wanted in (
            (CELL, self.cells, [with_spec_hash(c) for c in p.cells]),
            (TARGET_GROUP, self.target_groups, p.target_groups),
            (CHECK, self.checks, p.checks),
        ):
            await self._converge(raw, owner, kind, store, wanted, p.keep)
        for secret, labels in sorted(p.secret_labels.items()):
            try:
                await self.client.patch(
                    SECRET,
                    secret,
                    {"metadata": {"labels": labels}},
                    namespace=o.namespace,
                    field_manager=FIELD_MANAGER,
                )
            except NotFoundError:
                continue

    async def _converge(
        self,
        raw: Obj,
        owner: Obj,
        kind: GVK,
        store: Store,
        wanted: list[Obj],
        keep: set[tuple[str, str]],
    ) -> None:
        """`wanted` applied (only what differs from the cache), and this system's other
        objects of `kind` deleted unless kept."""
        ns, name = raw["metadata"].get("namespace") or "", raw["metadata"]["name"]
        names = set()
        for obj in wanted:
            obj["metadata"]["ownerReferences"] = [owner]
            names.add(obj["metadata"]["name"])
            have = store.get(obj["metadata"]["name"], ns)
            if have is not None and covers(have, obj):
                continue
            try:
                await self.client.apply(obj, field_manager=FIELD_MANAGER, force=True)
                log.debug("applied", kind=kind.kind, name=obj["metadata"]["name"])
            except ConflictError:  # kept as held, and changed since: its change wakes us
                log.debug("changed since read", kind=kind.kind, name=obj["metadata"]["name"])
            except ApiError as e:
                self.events.event(
                    raw,
                    "Warning",
                    "ApplyFailed",
                    f"{kind.kind} {obj['metadata']['name']}: {e}",
                )
        for have in store.list(ns, {"matchLabels": {SYSTEM_LABEL: name}}):
            n = have["metadata"]["name"]
            if n in names or (kind.kind, n) in keep:
                continue
            with contextlib.suppress(NotFoundError):
                await self.client.delete(kind, n, ns)
                log.info("deleted", kind=kind.kind, name=n, system=name)

    async def _refuse(self, raw: Obj, e: ValidationError) -> None:
        message = f"spec cannot be read: {first_problem(e)}"
        status = {**(raw.get("status") or {}), "phase": "Failed", "health": "Degraded"}
        status["message"] = message
        status["observedGeneration"] = raw["metadata"].get("generation")
        self.events.event(raw, "Warning", "InvalidSpec", message)
        with contextlib.suppress(ApiError):
            await self.client.update_status({**raw, "status": status})


def _status(cell: Obj) -> RolloutCellStatus:
    try:
        return CellStatus.model_validate(cell.get("status") or {}).as_rollout()
    except ValidationError:
        return RolloutCellStatus()


def _check_seen(check: Obj) -> CheckSeen:
    st = check.get("status") or {}
    results = (st.get("analysis") or {}).get("results") or []
    last = results[-1] if results else {}
    return CheckSeen(
        hash=(check["metadata"].get("annotations") or {}).get("analysis-hash", ""),
        observed_hash=str((st.get("analysis") or {}).get("observedHash") or ""),
        last_passed=st.get("lastPassed"),
        last_run_time=parse_time(st.get("lastRunTime")),
        message=str(last.get("message") or last.get("value") or ""),
    )


def covers(have: Obj, want: Obj) -> bool:
    """The object in the cache already says everything `want` says. An application's Cell
    carries the hash of the spec okra applied (`SPEC_HASH`), so a spec that leaves out a
    field okra wrote before is not covered by the Cell that still has it."""
    return (
        _subset(want.get("spec"), have.get("spec"))
        and all(
            _subset(want["metadata"].get(k), have["metadata"].get(k))
            for k in ("labels", "annotations", "ownerReferences")
        )
        and _same_keys(want["metadata"].get("annotations"), have["metadata"].get("annotations"))
    )


def _subset(want: Any, have: Any) -> bool:
    if want in ({}, []) and have is None:
        return True  # the server leaves an empty map or list out
    if isinstance(want, dict):
        return isinstance(have, dict) and all(_subset(v, have.get(k)) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(want) == len(have)
            and all(_subset(a, b) for a, b in zip(want, have, strict=True))
        )
    return bool(want == have)


def _same_keys(want: Any, have: Any) -> bool:
    """The hold annotations (pause, promote, abort) the system sets are all there is of
    them, and so are the notification subscriptions it copies from the system Cell: one it
    no longer wants is removed by applying again."""
    keys = {PAUSED, PROMOTE, ABORT}

    def mine(k: str) -> bool:
        return k in keys or k.startswith(PREFIX)

    return {k for k in want or {} if mine(k)} == {k for k in have or {} if mine(k)}


def _with_argocd(o: SystemObserved, secrets: list[Obj], apps_store: Store | None) -> SystemObserved:
    """Argo CD's Applications on each application's new clusters (CreateBeforeDelete with an
    ApplicationSet): whether they are all Synced and Healthy."""
    if apps_store is None:
        return o
    apps = apps_store.list(o.namespace)
    out: dict[tuple[str, str], AppsOn] = {}
    prior = {a.name: a for a in o.status.applications or []}
    for app in o.spec.applications or []:
        a = prior.get(app.name)
        if app.argocd is None or app.argocd.application_set is None or a is None or not a.version:
            continue
        spec = CellArgoCD.model_validate(argocd_spec(o, app.name, app.argocd))
        view = observe_clusters(spec, [version_key(o.name, app.name)], secrets, apps)
        ok, why = view.ready(a.version)
        out[(app.name, a.version)] = AppsOn(ok, why)
    return dataclasses.replace(o, argocd=out)


def setup(mgr: Manager, settings: Settings) -> None:
    rec = SystemReconciler(
        mgr,
        mgr.event_recorder("system-cell-controller"),
        settings.aws,
        settings.argocd,
        resync=settings.cluster_poll_interval,
    )
    cells = mgr.informer_for(CELL).store

    def system_of(obj: Obj) -> list[Request]:
        owner = (obj["metadata"].get("labels") or {}).get(SYSTEM_LABEL)
        ns = obj["metadata"].get("namespace") or ""
        return [Request(owner, ns)] if owner else []

    def systems_in(obj: Obj) -> list[Request]:
        ns = obj["metadata"].get("namespace") or ""
        return [
            Request(c["metadata"]["name"], ns) for c in cells.list(ns, copy=False) if is_system(c)
        ]

    builder = (
        mgr.builder("system-cell")
        .for_(CELL, predicates=(IsSystemCell(),))
        .watches(CELL, system_of)
        .watches(CHECK, system_of)
        .watches(SECRET, systems_in)
        .with_options(max_concurrent_reconciles=settings.concurrency)
    )
    if settings.argocd:
        builder = builder.watches(APPLICATION, systems_in)
    builder.complete(rec)
    mgr.add_closer("system-cell-connections", rec.connections.close)
