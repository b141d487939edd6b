"""The ProgressiveRollout's plan: a pure function from what was observed to what should be.

Input: the ProgressiveRollout (spec, status, operator requests), whether its ApplicationSet
exists and who else rolls it out, the ApplicationSet's Applications as Argo CD reports them
(with their cluster's Secret labels), the phases of the rollout's AnalysisRuns, and the time.
Output: the next status, the syncs to start, the AnalysisRuns to create or stop, the webhooks
to call, Events, and when to look again. No I/O, so every rule is tested directly:

- Target revision: the revision Argo CD last resolved for the ApplicationSet's source (the
  `status.sync.revision` of the most recently reconciled Application). A new one restarts the
  rollout at the first stage; one whose rollout failed is not started again.
- Stages run strictly in order: a stage starts only when every earlier one is Completed.
- A stage's clusters: those whose cluster Secret matches its selector, at most `maxClusters`,
  spread over `topologyKey` values; recorded in status so they stay the same on restart; a
  cluster added while the stage runs joins it, a removed one leaves it.
- In flight (syncing, baking or being verified) never more than `maxUnavailable`, and with a
  `topologyKey` never two of one topology value.
- A cluster is done only when Argo CD reports the operation okra started (recognised by the
  sync ID okra wrote into the operation's `info`) Succeeded at the target revision, and the
  Application is Synced at that revision and Healthy in a comparison made after the operation
  finished; then `bakeTime`, then its PerCluster webhooks. Stale Synced/Healthy status (an
  older revision, an older operation, a comparison from before the sync) never completes it.
- Requeue: a cluster matching the requeue selector is skipped and looked at again every
  `interval`; still matching at the `attempts`-th look fails the stage, naming it.
- After every cluster of the stage is done: the analysis (Failed/Error fails the stage,
  Inconclusive pauses until promoted), then PostStage webhooks; PreStage webhooks run before
  the stage syncs anything. A stage whose clusters were all already at the revision (okra
  synced none of them) has nothing to verify and completes without its analysis.
- A cluster whose sync Argo CD started but that is not done within `progressDeadlineSeconds`
  fails the stage. A sync Argo CD has not picked up, or an unreachable cluster, only stalls
  (condition Stalled) and resumes by itself.
- Failure: `Pause` holds everything (phase Failed) until `okra resume` retries the stage or a
  new revision arrives; `Rollback` syncs every cluster this rollout updated back to its
  previous revision, the most recently updated first, one at a time.
"""

from __future__ import annotations

import datetime
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from okra_controllers.analysis.duration import parse_duration
from okra_controllers.api.v1alpha1.analysis import Argument
from okra_controllers.api.v1alpha1.common import Condition
from okra_controllers.api.v1alpha1.progressiverollout import (
    ClusterSelector,
    ClusterStatus,
    Handled,
    ProgressiveRolloutSpec,
    ProgressiveRolloutStatus,
    Stage,
    StageAnalysis,
    StageStatus,
    Webhook,
    WebhookResult,
)
from okra_controllers.templating import Syntax, render
from okra_runtime.labels import selector_from_dict

EventType = Literal["Normal", "Warning"]
IN_FLIGHT = ("Syncing", "Baking", "Verifying")
UPDATED = ("Syncing", "Baking", "Verifying", "Completed", "Failed")
FAILED_RUN = ("Failed", "Error")
STALL_AFTER = 60.0
"""Seconds a sync may wait for Argo CD to pick it up before the rollout reports a stall."""
RESYNC = 60.0
POLL = 5.0
"""Look again this soon while something is in flight (Argo CD's changes also wake the
controller through its watch on Applications; this covers time-based transitions)."""


@dataclass(frozen=True)
class App:
    """One Application of the ApplicationSet, as Argo CD reports it."""

    name: str
    cluster: str
    labels: Mapping[str, str]
    """Labels of the cluster's Argo CD cluster Secret."""
    sync_status: str = ""
    sync_revision: str = ""
    """`status.sync.revision`: the revision Argo CD compared against (the resolved target)."""
    health: str = ""
    deployed_revision: str = ""
    """The revision of the last successful sync (`status.operationState` or history)."""
    automated: bool = False
    pending_sync_id: str | None = None
    """The okra sync ID in `operation.info` (an operation not yet picked up), if any."""
    operation_pending: bool = False
    """`operation` is set (by okra or anyone else)."""
    op_phase: str = ""
    op_sync_id: str | None = None
    """The okra sync ID in `status.operationState.operation.info`."""
    op_revision: str = ""
    op_message: str = ""
    op_started_at: datetime.datetime | None = None
    op_finished_at: datetime.datetime | None = None
    reconciled_at: datetime.datetime | None = None
    unreachable: str | None = None
    """Argo CD's error comparing the Application (cluster unreachable and the like)."""
    multi_source: bool = False
    """`spec.sources` (several sources, several revisions): not rolled out by okra yet."""

    @property
    def operation_running(self) -> bool:
        return self.operation_pending or self.op_phase in ("Running", "Terminating")

    def fresh_at(self, revision: str) -> bool:
        """Synced at `revision` and Healthy, in a comparison made after the last operation."""
        return (
            self.sync_status == "Synced"
            and self.sync_revision == revision
            and self.health == "Healthy"
            and self.reconciled_at is not None
            and (self.op_finished_at is None or self.reconciled_at >= self.op_finished_at)
        )


@dataclass(frozen=True)
class Requests:
    """Operator requests from annotations: each value is a token acted on once."""

    promote: str | None = None
    abort: str | None = None
    retry: str | None = None


@dataclass(frozen=True)
class Observed:
    name: str
    generation: int
    spec: ProgressiveRolloutSpec
    status: ProgressiveRolloutStatus
    now: datetime.datetime
    source_found: bool = True
    owner: str | None = None
    """The ProgressiveRollout that rolls the ApplicationSet out, when it is another one."""
    uid: str = ""
    """This ProgressiveRollout's uid: part of its sync IDs, so that a rollout recreated under
    the same name never takes an earlier object's sync for its own."""
    apps: tuple[App, ...] = ()
    runs: Mapping[str, str] = field(default_factory=dict)
    requests: Requests = Requests()


@dataclass(frozen=True)
class Sync:
    application: str
    revision: str
    sync_id: str
    reason: str


@dataclass(frozen=True)
class RunRequest:
    name: str
    analysis: StageAnalysis
    args: tuple[Argument, ...]
    stage: str


@dataclass(frozen=True)
class WebhookCall:
    key: str
    """Where the result goes: `<webhook>` or `<webhook>/<cluster>`."""
    stage: int
    webhook: Webhook
    payload: Mapping[str, object]


@dataclass(frozen=True)
class Event:
    type: EventType
    reason: str
    message: str


@dataclass
class Plan:
    status: ProgressiveRolloutStatus
    syncs: list[Sync] = field(default_factory=list)
    create_runs: list[RunRequest] = field(default_factory=list)
    terminate_runs: list[str] = field(default_factory=list)
    webhooks: list[WebhookCall] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    requeue_after: float | None = RESYNC

    def wake(self, seconds: float) -> None:
        seconds = max(seconds, 1.0)
        self.requeue_after = (
            seconds if self.requeue_after is None else min(self.requeue_after, seconds)
        )


# -- small pure helpers --------------------------------------------------------------------


def scaled(value: int | str, total: int, *, round_up: bool) -> int:
    """An int, or a percent of `total` (rounded up or down)."""
    if isinstance(value, int):
        return value
    pct = int(value.rstrip("%"))
    exact = pct * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def max_unavailable(stage: Stage, members: int) -> int:
    return max(1, scaled(stage.max_unavailable, members, round_up=False))


def max_clusters(stage: Stage, selected: int) -> int:
    return min(selected, scaled(stage.max_clusters, selected, round_up=True))


def matches(selector: ClusterSelector, labels: Mapping[str, str]) -> bool:
    return selector_from_dict(
        selector.model_dump(by_alias=True, exclude_none=True, mode="json")
    ).matches(labels)


def target_revision(apps: tuple[App, ...]) -> str | None:
    """The revision Argo CD resolved most recently for the ApplicationSet's source."""
    known = [a for a in apps if a.sync_revision]
    if not known:
        return None
    epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    newest = max(known, key=lambda a: (a.reconciled_at or epoch, a.sync_revision))
    return newest.sync_revision


def short(revision: str | None) -> str:
    return (revision or "")[:12]


def select_members(
    stage: Stage, recorded: list[ClusterStatus], apps: Mapping[str, App], *, open_: bool
) -> list[ClusterStatus]:
    """The stage's clusters: those recorded (still existing), then, while the stage is open,
    new ones up to maxClusters, spread over topology values, by name."""
    selected = sorted(
        (a for a in apps.values() if matches(stage.clusters.selector, a.labels)),
        key=lambda a: a.cluster,
    )
    kept = [
        c
        for c in recorded
        if c.application in apps
        and (c.phase != "Pending" or any(a.name == c.application for a in selected))
    ]
    if not open_:
        return kept
    limit = max_clusters(stage, len(selected))
    have = {c.application for c in kept}
    key = stage.topology_key

    def domain(a: App) -> str | None:
        return a.labels.get(key) if key else None

    used: dict[str | None, int] = {}
    for c in kept:
        d = domain(apps[c.application])
        used[d] = used.get(d, 0) + 1
    candidates = [a for a in selected if a.name not in have]
    out = list(kept)
    while len(out) < limit and candidates:
        # The candidate whose topology value is least represented, then by name.
        best = min(candidates, key=lambda a: (used.get(domain(a), 0) if key else 0, a.cluster))
        candidates.remove(best)
        used[domain(best)] = used.get(domain(best), 0) + 1
        out.append(ClusterStatus(name=best.cluster, application=best.name))
    return out


def set_condition(
    status: ProgressiveRolloutStatus,
    type_: str,
    value: bool,
    reason: str,
    message: str,
    now: datetime.datetime,
    generation: int,
) -> None:
    conds = list(status.conditions or [])
    text: Literal["True", "False"] = "True" if value else "False"
    for i, c in enumerate(conds):
        if c.type == type_:
            conds[i] = Condition(
                type=type_,
                status=text,
                reason=reason,
                message=message,
                last_transition_time=c.last_transition_time if c.status == text else now,
                observed_generation=generation,
            )
            break
    else:
        conds.append(
            Condition(
                type=type_,
                status=text,
                reason=reason,
                message=message,
                last_transition_time=now,
                observed_generation=generation,
            )
        )
    status.conditions = conds


# -- the plan ------------------------------------------------------------------------------


class _Planner:
    def __init__(self, o: Observed) -> None:
        self.o = o
        self.now = o.now
        self.st = o.status.model_copy(deep=True)
        self.st.observed_generation = o.generation
        self.p = Plan(status=self.st)
        self.apps = {a.name: a for a in o.apps}
        self.promoted = False
        self.stalls: list[str] = []
        self.no_clusters: str | None = None

    # -- reporting helpers
    def event(self, type_: EventType, reason: str, message: str) -> None:
        self.p.events.append(Event(type_, reason, message))

    def cond(self, type_: str, value: bool, reason: str, message: str) -> None:
        set_condition(self.st, type_, value, reason, message, self.now, self.o.generation)

    def error(self, reason: str, message: str) -> Plan:
        if self.st.phase != "Error" or self.st.message != message:
            self.event("Warning", reason, message)
        self.st.phase, self.st.message = "Error", message
        self.cond("Ready", False, reason, message)
        self.cond("Progressing", False, reason, message)
        return self.p

    # -- entry
    def run(self) -> Plan:
        o, spec = self.o, self.o.spec
        name = spec.source_ref.name
        if not o.source_found:
            return self.error(
                "SourceNotFound",
                f"ApplicationSet {name!r} not found in this namespace: create it, or set "
                "spec.sourceRef.name to an existing ApplicationSet",
            )
        if o.owner is not None:
            return self.error(
                "SourceTaken",
                f"ApplicationSet {name!r} is already rolled out by ProgressiveRollout "
                f"{o.owner!r}: only one ProgressiveRollout may reference an ApplicationSet; "
                "delete this one or point it at another ApplicationSet",
            )
        automated = sorted(a.name for a in o.apps if a.automated)
        if automated:
            self.cond(
                "AutomatedSyncDisabled",
                False,
                "AutomatedSyncEnabled",
                f"automated sync is on for {', '.join(automated)}: remove "
                "syncPolicy.automated from the ApplicationSet's template; okra syncs them",
            )
            return self.error(
                "AutomatedSyncEnabled",
                f"automated sync is on for Applications {', '.join(automated)}: Argo CD "
                "would update every cluster at once; remove syncPolicy.automated from the "
                f"template of ApplicationSet {name!r}",
            )
        self.cond("AutomatedSyncDisabled", True, "AutomatedSyncOff", "okra syncs every Application")
        multi = sorted(a.name for a in o.apps if a.multi_source)
        if multi:
            return self.error(
                "MultiSourceUnsupported",
                f"Applications {', '.join(multi)} have several sources (spec.sources): okra "
                "rolls out single-source Applications only; use spec.source in the template",
            )
        if not o.apps:
            self.st.phase = "Pending"
            self.st.message = f"ApplicationSet {name!r} has no Applications yet"
            self.cond("Ready", False, "NoApplications", self.st.message)
            return self.p
        revision = target_revision(o.apps)
        if revision is None:
            self.st.phase = "Pending"
            self.st.message = "waiting for Argo CD to resolve the ApplicationSet's revision"
            self.cond("Ready", False, "RevisionUnknown", self.st.message)
            self.p.wake(POLL)
            return self.p
        self._requests()
        if self.st.phase in ("RollingBack",):
            self._rollback()
            return self._finish()
        if revision != self.st.revision and revision != self.st.failed_revision:
            self._restart(revision)
        elif revision != self.st.revision:
            return self._finish()  # the failed revision: hold until a newer one
        self._align_stages()
        if self.st.phase in ("Completed", "RolledBack") or (
            self.st.phase == "Failed" and not self.st.aborted
        ):
            return self._finish()
        if self.st.aborted:
            return self._finish()
        self._progress()
        return self._finish()

    # -- operator requests
    def _requests(self) -> None:
        r, st = self.o.requests, self.st
        handled = st.handled or Handled()
        if r.promote and r.promote != handled.promote:
            handled.promote = r.promote
            self.promoted = True
            self.event("Normal", "Promoted", "bake time and inconclusive analysis skipped")
        if r.abort and r.abort != handled.abort:
            handled.abort = r.abort
            if st.phase not in ("Completed", "RolledBack", "RollingBack", ""):
                st.aborted = True
                self.event("Warning", "Aborted", "rollout aborted by the operator")
                if self.o.spec.failure_policy == "Rollback":
                    self._start_rollback("aborted by the operator")
                else:
                    st.phase = "Failed"
                    st.message = "aborted: no further syncs; `okra resume` to continue"
        if r.retry and r.retry != handled.retry:
            handled.retry = r.retry
            self._retry()
        st.handled = handled if (handled.promote or handled.abort or handled.retry) else None

    def _retry(self) -> None:
        st = self.st
        if st.phase == "RolledBack" or (st.phase == "Failed" and st.failed_revision):
            st.failed_revision = None
            st.revision = None  # restarts from the first stage
            st.aborted = None
            self.event("Normal", "Retried", "rollout retried from the first stage")
            return
        if st.phase != "Failed" and not st.aborted:
            return
        st.aborted = None
        for ss in st.stages or []:
            if ss.phase == "Failed":
                ss.phase, ss.message = "Progressing", None
                ss.analysis_run, ss.analysis_phase = None, None
                ss.webhooks = [w for w in ss.webhooks or [] if w.succeeded] or None
                for c in ss.clusters or []:
                    if c.phase == "Failed":
                        c.phase, c.message, c.sync_id = "Pending", None, None
                        c.attempts, c.next_attempt = None, None
        st.phase, st.message = "Progressing", "retrying"
        self.event("Normal", "Retried", "failed stage retried")

    # -- revision changes
    def _restart(self, revision: str) -> None:
        st = self.st
        old = st.revision
        for ss in st.stages or []:
            if ss.analysis_run and ss.analysis_phase not in ("Successful", *FAILED_RUN):
                self.p.terminate_runs.append(ss.analysis_run)
        st.revision = revision
        st.failed_revision = None
        st.aborted = None
        st.stages = [StageStatus(name=s.name) for s in self.o.spec.stages]
        st.current_stage = 0
        st.started, st.finished = self.now, None
        st.phase = "Progressing"
        st.message = f"rolling out {short(revision)}"
        if old:
            self.event(
                "Normal",
                "RevisionChanged",
                f"new revision {short(revision)} (was {short(old)}): restarting at the first stage",
            )
        else:
            self.event("Normal", "RolloutStarted", f"rolling out {short(revision)}")

    def _align_stages(self) -> None:
        """Status stages follow spec stages by name (the spec may change mid-rollout)."""
        by_name = {s.name: s for s in self.st.stages or []}
        self.st.stages = [
            by_name.get(s.name) or StageStatus(name=s.name) for s in self.o.spec.stages
        ]

    # -- the stages
    def _progress(self) -> None:
        st, spec = self.st, self.o.spec
        assert st.stages is not None
        assert st.revision is not None
        managed: set[str] = set()
        for i, (stage, ss) in enumerate(zip(spec.stages, st.stages, strict=True)):
            open_ = ss.phase != "Completed"
            ss.clusters = (
                select_members(stage, list(ss.clusters or []), self.apps, open_=open_) or None
            )
            managed.update(c.application for c in ss.clusters or [])
            managed.update(
                a.name for a in self.o.apps if matches(stage.clusters.selector, a.labels)
            )
            if ss.phase == "Completed":
                continue
            st.current_stage = i
            self._stage(i, stage, ss, st.revision)
            if not completed(ss):
                break
        unmanaged = sorted(a.cluster for a in self.o.apps if a.name not in managed)
        st.unmanaged_clusters = unmanaged or None
        done = all(ss.phase == "Completed" for ss in st.stages)
        if done and st.phase not in ("Failed", "Completed"):
            st.phase = "Completed"
            st.finished = self.now
            st.current_stage = len(st.stages) - 1
            st.message = f"every stage is at {short(st.revision)}"
            self.event("Normal", "RolloutCompleted", st.message)

    def _stage(self, i: int, stage: Stage, ss: StageStatus, revision: str) -> None:
        st, spec = self.st, self.o.spec
        paused = spec.paused
        members = ss.clusters or []
        if ss.phase == "Pending":
            if paused:
                st.phase, st.message = "Paused", f"paused before stage {stage.name!r}"
                return
            if not members:
                self._nothing_selected(stage)
                return
            ss.phase, ss.started = "Progressing", self.now
            self.event("Normal", "StageStarted", f"stage {stage.name!r}: {len(members)} clusters")
        if ss.phase == "Failed":
            return
        if not members:
            self._nothing_selected(stage)
            return
        if self._needs_sync(members, revision) and not self._webhooks(
            i, stage, ss, "PreStage", revision
        ):
            return
        st.phase = "Paused" if paused else "Progressing"
        for c in members:
            self._cluster(i, stage, ss, c, revision)
        failed = [c for c in members if c.phase == "Failed"]
        if failed:
            self._fail(
                ss,
                "; ".join(f"{c.name}: {c.message}" for c in failed),
            )
            return
        self._start_syncs(stage, members, revision, paused)
        if paused:
            st.message = f"paused in stage {stage.name!r}"
        if any(c.phase != "Completed" for c in members):
            if not paused:
                self._progress_message(stage, members)
            return
        if all(c.sync_id is None for c in members):
            # Nothing changed in this stage (every cluster was already there, e.g. the first
            # look at an ApplicationSet already rolled out): there is nothing to verify.
            ss.phase, ss.finished = "Completed", self.now
            ss.message = f"{len(members)} clusters already at {short(revision)}"
            return
        ss.phase = "Verifying"
        if not self._analysis(i, stage, ss, revision):
            return
        if not self._webhooks(i, stage, ss, "PostStage", revision):
            return
        ss.phase, ss.finished = "Completed", self.now
        ss.message = f"{len(members)} clusters at {short(revision)}"
        self.event("Normal", "StageCompleted", f"stage {stage.name!r}: {ss.message}")

    def _needs_sync(self, members: list[ClusterStatus], revision: str) -> bool:
        """Whether okra has synced or will sync a cluster of the stage (PreStage webhooks
        run only then)."""
        for c in members:
            if c.sync_id is not None:
                return True
            app = self.apps.get(c.application)
            if c.phase != "Completed" and app is not None and not _at(app, revision):
                return True
        return False

    def _nothing_selected(self, stage: Stage) -> None:
        sel = stage.clusters.selector.model_dump(by_alias=True, exclude_none=True)
        message = (
            f"stage {stage.name!r}: no cluster of the ApplicationSet matches selector {sel}: "
            "label the Argo CD cluster Secrets or fix the stage's clusters.selector"
        )
        if self.st.message != message:
            self.event("Warning", "NoClusters", message)
        self.st.phase, self.st.message = "Progressing", message
        self.no_clusters = message

    def _progress_message(self, stage: Stage, members: list[ClusterStatus]) -> None:
        counts: dict[str, int] = {}
        for c in members:
            counts[c.phase] = counts.get(c.phase, 0) + 1
        parts = ", ".join(f"{n} {phase}" for phase, n in sorted(counts.items()))
        self.st.message = f"stage {stage.name!r}: {parts}"

    # -- one cluster
    def _cluster(
        self, i: int, stage: Stage, ss: StageStatus, c: ClusterStatus, revision: str
    ) -> None:
        app = self.apps.get(c.application)
        if app is None:
            return
        if c.phase in ("Pending", "Requeued"):
            self._waiting(stage, c, app, revision)
        elif c.phase == "Syncing":
            self._syncing(c, app, revision)
        if c.phase == "Baking":
            self._baking(stage, c, app, revision)
        if c.phase == "Verifying":
            self._verifying(i, stage, ss, c, revision)

    def _waiting(self, stage: Stage, c: ClusterStatus, app: App, revision: str) -> None:
        if _at(app, revision):
            c.phase, c.revision, c.finished = "Completed", revision, self.now
            c.message = f"already at {short(revision)}"
            return
        rq = stage.requeue
        if rq is not None and rq.selector != ClusterSelector() and matches(rq.selector, app.labels):
            if c.next_attempt is not None and self.now < c.next_attempt:
                self.p.wake((c.next_attempt - self.now).total_seconds())
                return
            attempts = (c.attempts or 0) + 1
            c.attempts = attempts
            if attempts >= rq.attempts:
                c.phase = "Failed"
                c.message = (
                    f"still matches the requeue selector after {attempts} attempts: remove "
                    "the label from its Argo CD cluster Secret and resume"
                )
                return
            interval = parse_duration(rq.interval)
            c.phase = "Requeued"
            c.next_attempt = self.now + datetime.timedelta(seconds=interval)
            c.message = (
                f"requeued (attempt {attempts} of {rq.attempts}): matches the requeue selector"
            )
            self.event("Normal", "ClusterRequeued", f"cluster {c.name}: {c.message}")
            self.p.wake(interval)
            return
        if c.phase == "Requeued":
            c.phase, c.next_attempt = "Pending", None
            c.message = "no longer matches the requeue selector"

    def _syncing(self, c: ClusterStatus, app: App, revision: str) -> None:
        started = c.started or self.now
        elapsed = (self.now - started).total_seconds()
        deadline = float(self.o.spec.progress_deadline_seconds)
        if app.op_sync_id == c.sync_id and c.sync_id is not None:
            # The deadline runs from when Argo CD started the sync: time spent waiting for a
            # stopped Argo CD is a stall, not a failure of the revision.
            if app.op_started_at is not None:
                elapsed = (self.now - max(started, app.op_started_at)).total_seconds()
            if app.op_phase in ("Failed", "Error"):
                c.phase = "Failed"
                c.message = f"sync {app.op_phase.lower()}: {app.op_message}".rstrip(": ")
                return
            if (
                app.op_phase == "Succeeded"
                and app.op_revision == revision
                and app.fresh_at(revision)
            ):
                c.phase, c.healthy_since = "Baking", self.now
                c.message = f"Synced and Healthy at {short(revision)}"
                return
            if app.unreachable:
                self._stall(c, f"cluster {c.name} unreachable: {app.unreachable}")
                return
            if elapsed > deadline:
                c.phase = "Failed"
                c.message = (
                    f"not Synced and Healthy at {short(revision)} within "
                    f"{self.o.spec.progress_deadline_seconds}s (sync {app.op_phase or 'pending'}, "
                    f"{app.sync_status or 'Unknown'}, {app.health or 'Unknown'})"
                )
                return
            c.message = f"sync {app.op_phase or 'started'}; {app.sync_status}/{app.health}"
            self.p.wake(min(POLL, max(deadline - elapsed, 1.0)))
            return
        if app.pending_sync_id == c.sync_id and c.sync_id is not None:
            if elapsed > STALL_AFTER:
                self._stall(
                    c,
                    f"Argo CD has not started the sync of {app.name} for {int(elapsed)}s: is its "
                    "application-controller running?",
                )
            else:
                self.p.wake(POLL)
            return
        # The operation was never written (the write was lost) or was replaced: write it,
        # unless another operation is running, which Argo CD must finish first.
        if app.operation_running:
            self._stall(c, f"waiting for another operation on {app.name} to finish")
            return
        assert c.sync_id is not None
        self.p.syncs.append(Sync(app.name, revision, c.sync_id, "rollout"))
        self.p.wake(POLL)

    def _sync_id(self, revision: str, *, rollback: bool = False) -> str:
        """A new sync's ID: `<revision>-<uid>-<n>` (`rollback-...` for a rollback), `n`
        counting the syncs this object has started (`status.syncsStarted`, written before
        the operation). Unique per sync, also for clusters synced in the same second, and
        made only from what the API server holds: a manager that restarts before writing
        the operation plans the same ID from the same status."""
        n = (self.st.syncs_started or 0) + 1
        self.st.syncs_started = n
        who = (self.o.uid or self.o.name)[:8]
        return f"{'rollback-' if rollback else ''}{short(revision)}-{who}-{n}"

    def _stall(self, c: ClusterStatus, message: str) -> None:
        c.message = message
        self.stalls.append(message)
        self.p.wake(POLL)

    def _baking(self, stage: Stage, c: ClusterStatus, app: App, revision: str) -> None:
        if app.health == "Degraded" or (
            app.sync_revision == revision and app.sync_status == "OutOfSync"
        ):
            c.phase = "Failed"
            c.message = f"{app.health}/{app.sync_status} while baking"
            return
        bake = parse_duration(stage.bake_time) if stage.bake_time else 0.0
        since = c.healthy_since or self.now
        left = bake - (self.now - since).total_seconds()
        if left > 0 and not self.promoted:
            c.message = f"baking, {math.ceil(left)}s left"
            self.p.wake(left)
            return
        c.phase = "Verifying"

    def _verifying(
        self, i: int, stage: Stage, ss: StageStatus, c: ClusterStatus, revision: str
    ) -> None:
        hooks = [w for w in stage.webhooks or [] if w.type == "PerCluster"]
        results = {r.name: r for r in ss.webhooks or []}
        waiting = False
        for w in hooks:
            key = f"{w.name}/{c.name}"
            r = results.get(key)
            if r is None:
                self.p.webhooks.append(
                    WebhookCall(key, i, w, self._payload(stage, revision, [c.name]))
                )
                waiting = True
            elif not r.succeeded:
                c.phase, c.message = "Failed", f"webhook {w.name}: {r.message}"
                return
        if waiting:
            c.message = "calling webhooks"
            self.p.wake(POLL)
            return
        c.phase, c.finished = "Completed", self.now
        c.message = f"at {short(revision)}"
        self.event("Normal", "ClusterCompleted", f"cluster {c.name} at {short(revision)}")

    # -- starting syncs, within maxUnavailable and one per topology value
    def _start_syncs(
        self, stage: Stage, members: list[ClusterStatus], revision: str, paused: bool
    ) -> None:
        if paused:
            return
        limit = max_unavailable(stage, len(members))
        key = stage.topology_key
        in_flight = [c for c in members if c.phase in IN_FLIGHT]
        busy = {
            self.apps[c.application].labels.get(key)
            for c in in_flight
            if key and c.application in self.apps
        }
        for c in members:
            if len(in_flight) >= limit:
                break
            if c.phase != "Pending":
                continue
            app = self.apps.get(c.application)
            if app is None or app.operation_running:
                continue
            domain = app.labels.get(key) if key else None
            if key and domain in busy:
                continue
            c.phase, c.started = "Syncing", self.now
            c.revision = revision
            c.previous_revision = app.deployed_revision or None
            c.healthy_since, c.finished, c.next_attempt = None, None, None
            c.sync_id = self._sync_id(revision)
            c.message = f"syncing to {short(revision)}"
            self.p.syncs.append(Sync(app.name, revision, c.sync_id, "rollout"))
            self.event(
                "Normal",
                "SyncStarted",
                f"cluster {c.name}: syncing {app.name} to {short(revision)}",
            )
            in_flight.append(c)
            if key:
                busy.add(domain)
        if in_flight:
            self.p.wake(POLL)

    # -- gates after the clusters
    def _analysis(self, i: int, stage: Stage, ss: StageStatus, revision: str) -> bool:
        if stage.analysis is None:
            return True
        retry = (self.st.handled.retry if self.st.handled else None) or ""
        name = run_name(self.o.name, revision, i, retry)
        if ss.analysis_run != name:
            ss.analysis_run, ss.analysis_phase = name, None
        phase = self.o.runs.get(name)
        if phase is None:
            clusters = ",".join(c.name for c in ss.clusters or [])
            args = tuple(
                a.model_copy(update={"value": _fill(a.value, revision, stage.name, clusters)})
                if a.value is not None
                else a
                for a in stage.analysis.args or ()
            )
            self.p.create_runs.append(RunRequest(name, stage.analysis, args, stage.name))
            ss.message = f"analysis {name} started"
            return False
        ss.analysis_phase = phase or None
        if phase == "Successful" or (phase == "Inconclusive" and self.promoted):
            return True
        if phase in FAILED_RUN:
            self._fail(ss, f"analysis {name} {phase}")
            return False
        if phase == "Inconclusive":
            self.st.phase = "Paused"
            self.st.message = (
                f"stage {stage.name!r}: analysis {name} is Inconclusive: `okra promote` to "
                "accept it, `okra abort` to stop"
            )
            return False
        ss.message = f"analysis {name} {phase or 'Pending'}"
        return False

    def _webhooks(self, i: int, stage: Stage, ss: StageStatus, kind: str, revision: str) -> bool:
        hooks = [w for w in stage.webhooks or [] if w.type == kind]
        results = {r.name: r for r in ss.webhooks or []}
        waiting = False
        for w in hooks:
            r = results.get(w.name)
            if r is None:
                names = [c.name for c in ss.clusters or []]
                self.p.webhooks.append(
                    WebhookCall(w.name, i, w, self._payload(stage, revision, names))
                )
                waiting = True
            elif not r.succeeded:
                self._fail(ss, f"{kind} webhook {w.name}: {r.message}")
                return False
        if waiting:
            ss.message = f"calling {kind} webhooks"
            self.p.wake(POLL)
        return not waiting

    def _payload(self, stage: Stage, revision: str, clusters: list[str]) -> dict[str, object]:
        return {
            "progressiveRollout": self.o.name,
            "applicationSet": self.o.spec.source_ref.name,
            "stage": stage.name,
            "revision": revision,
            "clusters": clusters,
        }

    # -- failure and rollback
    def _fail(self, ss: StageStatus, message: str) -> None:
        st = self.st
        ss.phase, ss.finished, ss.message = "Failed", self.now, message
        text = f"stage {ss.name!r} failed: {message}"
        self.event("Warning", "StageFailed", text)
        if self.o.spec.failure_policy == "Rollback":
            self._start_rollback(text)
        else:
            st.phase = "Failed"
            st.message = (
                f"{text}; fix it and `okra resume` to retry the stage, or push a new revision"
            )

    def _start_rollback(self, cause: str) -> None:
        st = self.st
        st.failed_revision = st.revision
        st.phase = "RollingBack"
        st.message = f"rolling back: {cause}"
        self.event("Warning", "RollbackStarted", st.message)
        self._rollback()

    def _rollback(self) -> None:
        st = self.st
        order = rollback_order(st)
        for c in order:
            if c.phase == "RolledBack":
                continue
            app = self.apps.get(c.application)
            if app is None:
                c.phase, c.message = "RolledBack", "Application gone"
                continue
            prev = c.previous_revision
            assert prev is not None
            if c.phase != "RollingBack":
                if app.operation_running and app.op_sync_id != c.sync_id:
                    self._stall(c, f"waiting for the running operation on {app.name} to finish")
                    return
                if app.operation_running:
                    c.message = "waiting for the rollout's sync to finish before rolling back"
                    self.p.wake(POLL)
                    return
                c.phase = "RollingBack"
                c.sync_id = self._sync_id(prev, rollback=True)
                c.started = self.now
                c.message = f"rolling back to {short(prev)}"
                self.p.syncs.append(Sync(app.name, prev, c.sync_id, "rollback"))
                self.event("Warning", "ClusterRollingBack", f"cluster {c.name}: {c.message}")
                self.p.wake(POLL)
                return
            if app.op_sync_id == c.sync_id:
                if app.op_phase == "Succeeded":
                    c.phase, c.finished = "RolledBack", self.now
                    c.message = f"rolled back to {short(prev)}"
                    self.event("Normal", "ClusterRolledBack", f"cluster {c.name}: {c.message}")
                    continue
                if app.op_phase in ("Failed", "Error"):
                    c.phase, c.finished = "RolledBack", self.now
                    c.message = (
                        f"rollback to {short(prev)} {app.op_phase.lower()}: {app.op_message}"
                    )
                    self.event("Warning", "RollbackFailed", f"cluster {c.name}: {c.message}")
                    continue
                self.p.wake(POLL)
                return
            if app.pending_sync_id != c.sync_id and not app.operation_running:
                assert c.sync_id is not None
                self.p.syncs.append(Sync(app.name, prev, c.sync_id, "rollback"))
            self.p.wake(POLL)
            return
        st.phase = "RolledBack"
        st.finished = self.now
        done = [c.name for c in order]
        st.message = (
            f"rolled back {', '.join(done) or 'nothing'} after {short(st.failed_revision)} failed; "
            "a new revision starts a new rollout"
        )
        self.event("Normal", "RolledBack", st.message)

    # -- report
    def _finish(self) -> Plan:
        st = self.st
        if self.stalls:
            self.cond("Stalled", True, "Waiting", "; ".join(self.stalls))
        else:
            self.cond("Stalled", False, "NotStalled", "")
        ready = st.phase == "Completed"
        reason = {
            "Completed": "RolloutCompleted",
            "Failed": "StageFailed",
            "RollingBack": "RollingBack",
            "RolledBack": "RolledBack",
            "Paused": "Paused",
        }.get(st.phase, "Progressing")
        if self.no_clusters:
            reason = "NoClusters"
        self.cond("Ready", ready, reason, st.message or "")
        progressing = st.phase in ("Progressing", "RollingBack")
        self.cond("Progressing", progressing, reason, st.message or "")
        if st.phase in ("Completed", "RolledBack"):
            self.p.requeue_after = None if not self.p.syncs else self.p.requeue_after
        return self.p


def _at(app: App, revision: str) -> bool:
    """Deployed at `revision`, compared since, Synced and Healthy, nothing running."""
    return (
        app.deployed_revision == revision and app.fresh_at(revision) and not app.operation_running
    )


def completed(ss: StageStatus) -> bool:
    return ss.phase == "Completed"


def rollback_order(status: ProgressiveRolloutStatus) -> list[ClusterStatus]:
    """Clusters this rollout updated, the most recently updated first; a cluster in several
    stages counts once (the stage that synced it)."""
    seen: dict[str, tuple[int, ClusterStatus]] = {}
    for i, ss in enumerate(status.stages or []):
        for c in ss.clusters or []:
            if c.sync_id is None or c.previous_revision is None:
                continue
            if c.previous_revision == c.revision:
                continue
            if c.phase in (*UPDATED, "RollingBack", "RolledBack") and c.application not in seen:
                seen[c.application] = (i, c)
    epoch = datetime.datetime.min.replace(tzinfo=datetime.UTC)
    ordered = sorted(
        seen.values(), key=lambda t: (t[0], t[1].started or epoch, t[1].name), reverse=True
    )
    return [c for _, c in ordered]


def run_name(rollout: str, revision: str, stage: int, retry: str) -> str:
    suffix = f"-{_hash(retry)}" if retry else ""
    return f"{rollout[:200]}-{revision[:7]}-s{stage}{suffix}".lower()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


_WEBHOOK_FIELDS = Syntax(dot="none", roots=frozenset({"revision", "stage", "clusters"}))


def _fill(value: str, revision: str, stage: str, clusters: str) -> str:
    fields = {"revision": revision, "stage": stage, "clusters": clusters}
    return render(value, fields, _WEBHOOK_FIELDS)


def plan(o: Observed) -> Plan:
    """What to do next for one ProgressiveRollout; see the module docstring."""
    return _Planner(o).run()


__all__ = [
    "App",
    "Event",
    "Observed",
    "Plan",
    "Requests",
    "RunRequest",
    "Sync",
    "WebhookCall",
    "WebhookResult",
    "max_clusters",
    "max_unavailable",
    "plan",
    "rollback_order",
    "run_name",
    "scaled",
    "select_members",
    "target_revision",
]
