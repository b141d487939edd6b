"""The ClusterSet controller: EKS clusters found by tag become Argo CD cluster Secrets.

observe: the ClusterSet from the cache; EKS `ListClusters` (every page) and `DescribeCluster`
per cluster (`aws.eks.observe_eks`: one walk shared by the sets reconciled within a few
seconds); the Secrets carrying this ClusterSet's label, from the manager's Secret cache (which
holds only Argo CD cluster Secrets, `registry.CACHE_SELECTORS`: every Secret a ClusterSet writes
is one). A cache a moment behind costs nothing: a create of a Secret that exists already is
adopted (`_adopt_existing`), an update of a stale copy conflicts and is retried.
plan: `okra_controllers.clusterset.plan.plan`, pure.
act: create, update (only when content differs) and delete Secrets it owns; never touches
one it does not own.
report: status (clusters, secretsWritten, notOwned, errors, Ready condition,
observedGeneration), only written when it changed, and Events for every write.

EKS has no watch, so every ClusterSet is reconciled again every `requeue_after` seconds. A
failed AWS read changes no Secret: a cluster that cannot be seen is not a deleted cluster.
Certificate data and the rendered `config` never reach a log line or an Event.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from okra_controllers.api.kinds import CLUSTERSET, SECRET
from okra_controllers.api.v1alpha1.clusterset import ClusterSet, ClusterSetStatus
from okra_controllers.api.v1alpha1.common import with_condition
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_controllers.api.validation import load_or_report
from okra_controllers.aws.config import AwsConfig
from okra_controllers.aws.eks import SHARE_SECONDS, AwsReadError, observe_eks
from okra_controllers.clusterset.plan import (
    CLUSTERSET_LABEL,
    Obj,
    Owner,
    Plan,
    differs,
    merged,
    not_owned_message,
    owned_by,
    plan,
)
from okra_runtime import GenerationChanged
from okra_runtime.cache import Store
from okra_runtime.client import Client
from okra_runtime.errors import AlreadyExistsError, ApiError, ConflictError, NotFoundError
from okra_runtime.events import EventRecorder
from okra_runtime.informer import Informer
from okra_runtime.labels import selector_from_dict
from okra_runtime.reconcile import Request, Result
from okra_runtime.timeutil import utcnow

if TYPE_CHECKING:
    from okra_controllers.settings import Settings
    from okra_runtime import Manager

REQUEUE_AFTER = 60.0
log = structlog.get_logger("okra.clusterset")


class ClusterSetReconciler:
    def __init__(
        self,
        client: Client,
        informer: Informer,
        secrets: Informer,
        events: EventRecorder,
        aws: AwsConfig,
        *,
        requeue_after: float = REQUEUE_AFTER,
        page_size: int = 100,
        clock: Callable[[], datetime.datetime] = utcnow,
    ) -> None:
        self.client = client
        self.clustersets = informer.store
        self.secrets: Store = secrets.store
        self.events = events
        self.aws = aws
        self.requeue_after = requeue_after
        # EKS is read again at each poll; an answer shared for a sixth of the period at most
        self.eks_max_age = min(SHARE_SECONDS, requeue_after / 6)
        self.page_size = page_size
        self.clock = clock

    async def reconcile(self, req: Request) -> Result | None:
        # None when deleted (garbage collection removes its Secrets) or invalid (reported)
        loaded = load_or_report(
            self.clustersets, req, ClusterSet, self.events, reason="InvalidClusterSet"
        )
        if loaded is None:
            return None
        raw, cs = loaded
        if raw["metadata"].get("generation") != (raw.get("status") or {}).get("observedGeneration"):
            for warning in deprecated_spellings("ClusterSet", raw.get("spec")):
                self.events.event(raw, "Warning", "DeprecatedSpelling", warning)
        if len(req.name) > 63:
            problem = (
                f"name {req.name!r} is longer than 63 characters: it labels the ClusterSet's "
                f"Secrets ({CLUSTERSET_LABEL}), and label values are at most 63; use a shorter name"
            )
            status = ClusterSetStatus(errors=[problem])
            await self._report(raw, cs, status, "InvalidName", problem)
            return None
        owner = Owner(req.name, req.namespace, cs.metadata.uid or "")
        try:
            seen = await observe_eks(self.aws, self.page_size, max_age=self.eks_max_age)
        except AwsReadError as e:
            log.warning("cannot list EKS clusters; Secrets left as they are", error=str(e))
            previous = cs.status or ClusterSetStatus()
            status = previous.model_copy(update={"errors": [str(e)]})
            await self._report(raw, cs, status, "AWSError", str(e))
            return Result(requeue_after=self.requeue_after)
        existing = self.secrets.list(
            req.namespace, selector_from_dict({"matchLabels": {CLUSTERSET_LABEL: req.name}})
        )
        p = plan(owner, cs.spec, seen.clusters, existing, seen.unknown)
        written, conflict = await self._act(raw, owner, p)
        errors = sorted(set(seen.errors + p.errors))
        status = ClusterSetStatus(
            clusters=p.clusters,
            secrets_written=sorted(written),
            not_owned=sorted(set(p.foreign)) or None,
            errors=errors or None,
        )
        if errors:
            reason = "SyncFailed"
            message = errors[0] if len(errors) == 1 else f"{len(errors)} problems: {errors[0]}; ..."
        else:
            reason = "Synced"
            message = f"{len(written)} Argo CD cluster Secret(s) in sync"
        await self._report(raw, cs, status, reason, message)
        return Result(requeue=True) if conflict else Result(requeue_after=self.requeue_after)

    async def _act(self, raw: Obj, owner: Owner, p: Plan) -> tuple[set[str], bool]:
        """Carry out the plan; returns the Secret names now in sync and whether a write
        lost a race (retry soon). Each failure is recorded in `p.errors`, never raised,
        so one bad Secret does not keep the others from being written."""
        written = set(p.in_sync)
        conflict = False
        for secret in p.create:
            name = secret["metadata"]["name"]
            try:
                await self.client.create(secret)
            except AlreadyExistsError:
                ok, lost = await self._adopt_existing(raw, owner, secret, p)
                conflict |= lost
                if ok:
                    written.add(name)
                continue
            except ApiError as e:
                p.errors.append(f"creating Secret {name}: {e}")
                continue
            written.add(name)
            log.info("created Argo CD cluster secret", resource=name)
            self.events.event(raw, "Normal", "SecretCreated", f"created cluster Secret {name}")
        for secret in p.update:
            name = secret["metadata"]["name"]
            if await self._update(raw, secret, p):
                written.add(name)
            else:
                conflict = True
        for secret in p.delete:
            meta = secret["metadata"]
            try:
                await self.client.delete(
                    SECRET, meta["name"], meta["namespace"], uid=meta.get("uid"), missing_ok=True
                )
            except ConflictError:
                conflict = True
                continue
            except ApiError as e:
                p.errors.append(f"deleting Secret {meta['name']}: {e}")
                continue
            log.info("deleted Argo CD cluster secret of a gone cluster", resource=meta["name"])
            self.events.event(
                raw, "Normal", "SecretDeleted", f"deleted cluster Secret {meta['name']}"
            )
        return written, conflict

    async def _adopt_existing(
        self, raw: Obj, owner: Owner, want: Obj, p: Plan
    ) -> tuple[bool, bool]:
        """A Secret with the wanted name exists without this ClusterSet's label: update it if
        this ClusterSet owns it (someone removed the label), else leave it alone."""
        name = want["metadata"]["name"]
        try:
            have = await self.client.get(SECRET, name, owner.namespace)
        except NotFoundError:
            return False, True  # deleted meanwhile: create on the retry
        if not owned_by(have, owner):
            p.foreign.append(name)
            p.errors.append(not_owned_message(name, owner.name))
            return False, False
        if not differs(have, want):
            return True, False
        ok = await self._update(raw, merged(have, want), p)
        return ok, not ok

    async def _update(self, raw: Obj, secret: Obj, p: Plan) -> bool:
        name = secret["metadata"]["name"]
        try:
            await self.client.update(secret)
        except (ConflictError, NotFoundError):
            return False
        except ApiError as e:
            p.errors.append(f"updating Secret {name}: {e}")
            return True  # not a race: retrying at once would fail the same way
        log.info("updated Argo CD cluster secret", resource=name)
        self.events.event(raw, "Normal", "SecretUpdated", f"updated cluster Secret {name}")
        return True

    async def _report(
        self, raw: Obj, cs: ClusterSet, status: ClusterSetStatus, reason: str, message: str
    ) -> None:
        """Write status when it changed; the condition keeps its transition time unless
        its status flips. A Warning Event is emitted for each problem when it first appears,
        not on every resync."""
        previous = cs.status or ClusterSetStatus()
        old = next((c for c in previous.conditions or [] if c.type == "Ready"), None)
        gen = status.observed_generation = cs.metadata.generation
        status.conditions = with_condition(
            [old] if old else [], "Ready", reason == "Synced", reason, message, self.clock(), gen
        )
        for problem in sorted(set(status.errors or []) - set(previous.errors or [])):
            self.events.event(raw, "Warning", reason, problem[:1024])
        dump = status.model_dump(by_alias=True, exclude_none=True, mode="json")
        if dump == previous.model_dump(by_alias=True, exclude_none=True, mode="json"):
            return
        raw["status"] = dump
        # On a conflict or a deleted ClusterSet, the next reconcile (requeued anyway) writes it.
        with contextlib.suppress(ConflictError, NotFoundError):
            await self.client.update_status(raw)


def setup(mgr: Manager, settings: Settings) -> None:
    rec = ClusterSetReconciler(
        mgr.client,
        mgr.informer_for(CLUSTERSET),
        mgr.informer_for(SECRET),
        mgr.event_recorder("clusterset-controller"),
        settings.aws,
        requeue_after=settings.eks_poll_interval,
    )
    (
        mgr.builder("clusterset")
        .for_(CLUSTERSET, predicates=(GenerationChanged(),))
        .with_options(max_concurrent_reconciles=settings.concurrency)
        .complete(rec)
    )
