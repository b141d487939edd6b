"""The ProgressiveRollout plan, driven through a small simulated Argo CD: a sync okra asks for
is picked up, runs, finishes and is compared a tick at a time (or fails, or never starts), so
the rules are checked step by step and, with hypothesis, over random interleavings."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.progressiverollout import (
    ProgressiveRolloutSpec,
    ProgressiveRolloutStatus,
    SelectorRequirement,
)
from okra_controllers.progressiverollout.plan import (
    App,
    Observed,
    Plan,
    Requests,
    plan,
    rollback_order,
    scaled,
    select_members,
    target_revision,
)

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
OLD, NEW, NEWER = "a" * 40, "b" * 40, "c" * 40

# The seed's topology: EMEA clusters in two regions, plus one in the US.
CLUSTERS = {
    "euw1-a": {"area": "emea", "region": "eu-west-1"},
    "euw1-b": {"area": "emea", "region": "eu-west-1"},
    "euw1-c": {"area": "emea", "region": "eu-west-1"},
    "euc1-a": {"area": "emea", "region": "eu-central-1"},
    "euc1-b": {"area": "emea", "region": "eu-central-1"},
    "use1-a": {"area": "us", "region": "us-east-1"},
}


def seed_spec(**kw: Any) -> ProgressiveRolloutSpec:
    stages: list[dict[str, Any]] = [
        {
            "name": "canary in EMEA",
            "maxUnavailable": 2,
            "maxClusters": 2,
            "clusters": {"selector": {"matchLabels": {"area": "emea"}}},
            "topologyKey": "region",
            "requeue": {
                "selector": {"matchLabels": {"drained": "true"}},
                "attempts": 3,
                "interval": "30m",
            },
        },
        {
            "name": "eu-west-1",
            "maxUnavailable": "25%",
            "maxClusters": "100%",
            "clusters": {"selector": {"matchLabels": {"region": "eu-west-1"}}},
            "requeue": {
                "selector": {"matchLabels": {"drained": "true"}},
                "attempts": 3,
                "interval": "30m",
            },
        },
        {
            "name": "eu-central-1",
            "maxUnavailable": "25%",
            "maxClusters": "100%",
            "clusters": {"selector": {"matchLabels": {"region": "eu-central-1"}}},
        },
    ]
    overrides = kw.pop("stage_overrides", {})
    for i, extra in overrides.items():
        stages[i].update(extra)
    return ProgressiveRolloutSpec.model_validate(
        {"sourceRef": {"name": "web"}, "stages": stages, **kw}
    )


@dataclass
class SimApp:
    """An Application as Argo CD would report it, advanced one step per tick."""

    name: str
    cluster: str
    labels: dict[str, str]
    deployed: str = OLD
    head: str = OLD  # what targetRevision resolves to
    health: str = "Healthy"
    op: tuple[str, str] | None = None  # pending operation (revision, sync id)
    op_state: dict[str, Any] = field(default_factory=dict)
    reconciled_at: datetime.datetime | None = T0
    fail_next: bool = False
    degrade_after_sync: bool = False
    stage: int = 0  # progress of the current operation
    synced_to: list[str] = field(default_factory=list)

    def view(self) -> App:
        return App(
            name=self.name,
            cluster=self.cluster,
            labels=dict(self.labels),
            sync_status="Synced" if self.deployed == self.head else "OutOfSync",
            sync_revision=self.head,
            health=self.health,
            deployed_revision=self.deployed,
            pending_sync_id=self.op[1] if self.op else None,
            operation_pending=self.op is not None,
            op_phase=self.op_state.get("phase", ""),
            op_sync_id=self.op_state.get("id"),
            op_revision=self.op_state.get("revision", ""),
            op_message=self.op_state.get("message", ""),
            op_started_at=self.op_state.get("started"),
            op_finished_at=self.op_state.get("finished"),
            reconciled_at=self.reconciled_at,
        )

    def tick(self, now: datetime.datetime) -> None:
        """One step of Argo CD: pick up, run, finish, compare."""
        if self.op is not None:
            rev, sid = self.op
            self.op = None
            self.op_state = {"phase": "Running", "id": sid, "revision": rev, "started": now}
            self.health = "Progressing" if rev != self.deployed else self.health
            return
        if self.op_state.get("phase") == "Running":
            rev = self.op_state["revision"]
            if self.fail_next:
                self.fail_next = False
                self.op_state.update(phase="Failed", message="one or more objects failed")
            else:
                self.deployed = rev
                self.synced_to.append(rev)
                self.op_state.update(phase="Succeeded")
            self.op_state["finished"] = now
            return
        if self.reconciled_at is None or (
            self.op_state.get("finished") and self.reconciled_at < self.op_state["finished"]
        ):
            self.reconciled_at = now
            self.health = "Degraded" if self.degrade_after_sync else "Healthy"
            return
        self.reconciled_at = now
        if self.health == "Progressing":
            self.health = "Degraded" if self.degrade_after_sync else "Healthy"


@dataclass
class Sim:
    spec: ProgressiveRolloutSpec
    apps: dict[str, SimApp]
    status: ProgressiveRolloutStatus = field(default_factory=ProgressiveRolloutStatus)
    now: datetime.datetime = T0
    runs: dict[str, str] = field(default_factory=dict)
    run_outcome: str = "Successful"
    requests: Requests = field(default_factory=Requests)
    webhook_ok: bool = True
    history: list[Plan] = field(default_factory=list)
    sync_log: list[tuple[str, str]] = field(default_factory=list)  # (cluster, revision)

    @classmethod
    def seed(cls, **kw: Any) -> Sim:
        apps = {f"web-{c}": SimApp(f"web-{c}", c, dict(labels)) for c, labels in CLUSTERS.items()}
        return cls(spec=seed_spec(**kw), apps=apps)

    def observed(self) -> Observed:
        return Observed(
            name="web",
            generation=1,
            spec=self.spec,
            status=self.status,
            now=self.now,
            apps=tuple(a.view() for a in self.apps.values()),
            runs=dict(self.runs),
            requests=self.requests,
        )

    def reconcile(self) -> Plan:
        p = plan(self.observed())
        check_invariants(self, p)
        self.status = p.status
        for s in p.syncs:
            app = self.apps[s.application]
            assert (app.op_state.get("phase") != "Running" and app.op is None) or (
                app.op is not None and app.op[1] == s.sync_id
            ), f"sync written over a running operation on {app.name}"
            app.op = (s.revision, s.sync_id)
            self.sync_log.append((app.cluster, s.revision))
        for r in p.create_runs:
            self.runs.setdefault(r.name, "Running")
        for w in p.webhooks:
            ss = (self.status.stages or [])[w.stage]
            from okra_controllers.api.v1alpha1.progressiverollout import WebhookResult

            ss.webhooks = [
                *(ss.webhooks or []),
                WebhookResult(
                    name=w.key,
                    status_code=200 if self.webhook_ok else 500,
                    succeeded=self.webhook_ok,
                    message="" if self.webhook_ok else "answered 500",
                ),
            ]
        self.history.append(p)
        return p

    def argo(self, *names: str) -> None:
        self.now += datetime.timedelta(seconds=1)
        for n in names or tuple(self.apps):
            self.apps[n].tick(self.now)

    def finish_runs(self) -> None:
        for k, v in self.runs.items():
            if v == "Running":
                self.runs[k] = self.run_outcome

    def run(self, rounds: int = 200) -> None:
        """Reconcile, let Argo CD and the analyses move, until nothing changes."""
        for _ in range(rounds):
            self.reconcile()
            if self.status.phase in ("Completed", "Failed", "RolledBack"):
                return
            self.argo()
            self.finish_runs()
            self.now += datetime.timedelta(seconds=5)

    def commit(self, revision: str) -> None:
        for a in self.apps.values():
            a.head = revision
            a.reconciled_at = self.now + datetime.timedelta(seconds=1)
        self.now += datetime.timedelta(seconds=2)


def phase_of(sim: Sim) -> str:
    """The rollout's phase now (a function, so type narrowing does not outlive a step)."""
    return sim.status.phase


def in_flight(status: ProgressiveRolloutStatus, stage: int) -> list[str]:
    ss = (status.stages or [])[stage]
    return [c.name for c in ss.clusters or [] if c.phase in ("Syncing", "Baking", "Verifying")]


def check_invariants(sim: Sim, p: Plan) -> None:
    """What must hold after every plan, whatever happened before."""
    status = p.status
    stages = status.stages or []
    for i, (stage, ss) in enumerate(zip(sim.spec.stages, stages, strict=False)):
        members = ss.clusters or []
        limit = max(1, scaled(stage.max_unavailable, len(members), round_up=False))
        flying = in_flight(status, i)
        assert len(flying) <= limit, f"stage {stage.name}: {flying} in flight, limit {limit}"
        if stage.topology_key:
            labels = {a.cluster: a.labels for a in sim.apps.values()}
            domains = [labels.get(c, {}).get(stage.topology_key) for c in flying]
            assert len(domains) == len(set(domains)), f"two in flight in one domain: {flying}"
        if ss.phase != "Pending":
            earlier = stages[:i]
            assert all(e.phase == "Completed" for e in earlier), (
                f"stage {stage.name} is {ss.phase} before earlier stages completed"
            )
        for c in members:
            if c.phase == "Completed" and c.sync_id is not None:
                app = sim.apps[c.application]
                assert app.deployed == status.revision, f"{c.name} completed at {app.deployed}"
    # Syncs only to the revision being rolled out (or back to a previous one when rolling back).
    for s in p.syncs:
        if status.phase != "RollingBack":
            assert s.revision == status.revision


# -- small rules ---------------------------------------------------------------------------


def test_percentages_scale_down_for_unavailable_and_up_for_clusters() -> None:
    assert scaled("25%", 3, round_up=False) == 0
    assert scaled("25%", 3, round_up=True) == 1
    assert scaled("100%", 3, round_up=True) == 3
    assert scaled(2, 10, round_up=True) == 2


def test_the_target_is_the_revision_of_the_most_recently_compared_application() -> None:
    t = datetime.timedelta(seconds=1)
    apps = (
        App("a", "a", {}, sync_revision=OLD, reconciled_at=T0),
        App("b", "b", {}, sync_revision=NEW, reconciled_at=T0 + t),
        App("c", "c", {}, sync_revision="", reconciled_at=T0 + 2 * t),
    )
    assert target_revision(apps) == NEW
    assert target_revision(()) is None


def test_topology_key_picks_one_cluster_per_region_first() -> None:
    spec = seed_spec()
    apps = {f"web-{c}": SimApp(f"web-{c}", c, dict(lb)).view() for c, lb in CLUSTERS.items()}
    members = select_members(spec.stages[0], [], apps, open_=True)
    regions = sorted(CLUSTERS[m.name]["region"] for m in members)
    assert regions == ["eu-central-1", "eu-west-1"]


# -- the seed's rollout --------------------------------------------------------------------


def test_the_seed_example_rolls_out_in_order_to_every_selected_cluster() -> None:
    sim = Sim.seed()
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed", sim.status.message
    stages = sim.status.stages or []
    assert [s.phase for s in stages] == ["Completed"] * 3
    assert sorted(CLUSTERS[c.name]["region"] for c in stages[0].clusters or []) == [
        "eu-central-1",
        "eu-west-1",
    ]
    # Every EMEA cluster is at NEW; the US cluster is in no stage and untouched.
    for name, app in sim.apps.items():
        expected = OLD if app.labels["area"] == "us" else NEW
        assert app.deployed == expected, name
    assert sim.status.unmanaged_clusters == ["use1-a"]
    # Each cluster was synced exactly once.
    synced = [c for c, _ in sim.sync_log]
    assert sorted(synced) == sorted(set(synced))
    # Stage order in the sync log: the two canaries first, then eu-west-1, then eu-central-1.
    canaries = {c.name for c in stages[0].clusters or []}
    assert set(synced[:2]) == canaries
    rest = [c for c in synced[2:]]
    west = [i for i, c in enumerate(rest) if CLUSTERS[c]["region"] == "eu-west-1"]
    central = [i for i, c in enumerate(rest) if CLUSTERS[c]["region"] == "eu-central-1"]
    assert max(west) < min(central)


def test_nothing_happens_until_argo_cd_resolves_a_new_revision() -> None:
    sim = Sim.seed()
    p = sim.reconcile()
    # First sight: the current revision is adopted; every cluster is already there.
    sim.run()
    assert phase_of(sim) == "Completed"
    assert sim.sync_log == []
    assert p.status.revision == OLD


def test_stale_synced_healthy_status_never_completes_a_cluster() -> None:
    """Argo CD still shows Synced/Healthy for the old revision (no refresh yet): okra must
    not count the cluster done, nor anything in a later stage (argo-cd#29410)."""
    sim = Sim.seed()
    sim.run()
    # A new commit that only one Application has been compared against so far.
    first = sim.apps["web-euw1-a"]
    first.head = NEW
    first.reconciled_at = sim.now + datetime.timedelta(seconds=1)
    sim.now += datetime.timedelta(seconds=2)
    p = sim.reconcile()
    assert p.status.revision == NEW
    stage0 = (p.status.stages or [])[0]
    assert all(c.phase != "Completed" for c in stage0.clusters or [])
    # Argo CD picks up the syncs but the health is still the old Healthy until compared.
    for name in [c.application for c in stage0.clusters or []]:
        sim.apps[name].tick(sim.now)  # picked up
        sim.apps[name].tick(sim.now)  # Succeeded; the comparison is older than the sync
        sim.apps[name].health = "Healthy"  # stale health left over from before
    p = sim.reconcile()
    stage0 = (p.status.stages or [])[0]
    assert [c.phase for c in stage0.clusters or []] == ["Syncing", "Syncing"]
    assert (p.status.stages or [])[1].phase == "Pending"


def test_a_completed_operation_from_before_does_not_complete_the_cluster() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    p = sim.reconcile()
    c = ((p.status.stages or [])[0].clusters or [])[0]
    app = sim.apps[c.application]
    # An old operation state at NEW from someone else, Succeeded and compared: not okra's.
    app.op = None
    app.op_state = {
        "phase": "Succeeded",
        "id": "someone-else",
        "revision": NEW,
        "finished": sim.now,
    }
    app.deployed = NEW
    app.reconciled_at = sim.now + datetime.timedelta(seconds=1)
    sim.now += datetime.timedelta(seconds=2)
    p = sim.reconcile()
    c = ((p.status.stages or [])[0].clusters or [])[0]
    assert c.phase == "Syncing"
    # ... and okra writes its own operation again.
    assert [s.application for s in p.syncs] == [c.application]


def test_a_new_revision_mid_rollout_restarts_at_the_first_stage() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    for _ in range(12):
        sim.reconcile()
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
        if (sim.status.stages or [])[1].phase != "Pending":
            break
    assert (sim.status.stages or [])[1].phase != "Pending"
    sim.commit(NEWER)
    p = sim.reconcile()
    assert p.status.revision == NEWER
    assert [s.phase for s in p.status.stages or []][1:] == ["Pending", "Pending"]
    assert any(e.reason == "RevisionChanged" for e in p.events)
    sim.run()
    assert phase_of(sim) == "Completed"
    assert all(a.deployed == NEWER for a in sim.apps.values() if a.labels["area"] == "emea")


def test_a_drained_cluster_is_requeued_and_done_after_its_label_is_removed() -> None:
    sim = Sim.seed()
    sim.run()
    drained = sim.apps["web-euc1-a"]
    drained.labels["drained"] = "true"
    sim.apps["web-euc1-b"].labels["drained"] = "true"
    sim.commit(NEW)
    for _ in range(20):
        sim.reconcile()
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
    stage0 = (sim.status.stages or [])[0]
    requeued = [c for c in stage0.clusters or [] if c.phase == "Requeued"]
    assert requeued, [c.phase for c in stage0.clusters or []]
    assert requeued[0].attempts == 1
    assert stage0.phase == "Progressing"
    drained.labels.pop("drained")
    sim.apps["web-euc1-b"].labels.pop("drained")
    sim.now += datetime.timedelta(minutes=31)
    sim.run()
    assert phase_of(sim) == "Completed", sim.status.message
    assert drained.deployed == NEW


def test_exhausting_requeue_attempts_fails_the_stage_naming_the_cluster() -> None:
    sim = Sim.seed()
    sim.run()
    for name in ("web-euc1-a", "web-euc1-b"):
        sim.apps[name].labels["drained"] = "true"
    sim.commit(NEW)
    for _ in range(10):
        for _ in range(5):  # Argo CD keeps up with the syncs
            sim.reconcile()
            sim.argo()
        sim.now += datetime.timedelta(minutes=31)
        if sim.status.phase == "Failed":
            break
    assert phase_of(sim) == "Failed"
    assert "euc1-" in (sim.status.message or "")
    assert "3 attempts" in (sim.status.message or "")


def test_bake_time_holds_the_cluster_until_it_has_passed_and_promote_skips_it() -> None:
    sim = Sim.seed(stage_overrides={0: {"bakeTime": "10m"}})
    sim.run()
    sim.commit(NEW)
    for _ in range(10):
        sim.reconcile()
        sim.argo()
    stage0 = (sim.status.stages or [])[0]
    assert [c.phase for c in stage0.clusters or []] == ["Baking", "Baking"]
    assert (sim.status.stages or [])[1].phase == "Pending"
    sim.requests = Requests(promote="1")
    p = sim.reconcile()
    assert [c.phase for c in (p.status.stages or [])[0].clusters or []] == ["Completed"] * 2
    # A promote acts once: the next stage's bake is not skipped by the same request.
    assert p.status.handled is not None
    assert p.status.handled.promote == "1"


def test_bake_ends_by_itself() -> None:
    sim = Sim.seed(stage_overrides={0: {"bakeTime": "10m"}})
    sim.run()
    sim.commit(NEW)
    for _ in range(10):
        sim.reconcile()
        sim.argo()
    p = sim.reconcile()
    assert p.requeue_after is not None
    assert p.requeue_after <= 600
    sim.now += datetime.timedelta(minutes=10)
    p = sim.reconcile()
    assert [c.phase for c in (p.status.stages or [])[0].clusters or []] == ["Completed"] * 2


def test_analysis_gates_the_stage_and_a_failed_run_pauses_with_policy_pause() -> None:
    analysis = {
        "templates": [{"templateName": "success-rate"}],
        "args": [{"name": "clusters", "value": "{{clusters}}"}],
    }
    sim = Sim.seed(stage_overrides={1: {"analysis": analysis}})
    sim.run()
    sim.commit(NEW)
    sim.run_outcome = "Failed"
    sim.run()
    assert phase_of(sim) == "Failed"
    stages = sim.status.stages or []
    assert stages[1].phase == "Failed"
    assert stages[2].phase == "Pending"
    assert "analysis" in (sim.status.message or "")
    run = next(r for p in sim.history for r in p.create_runs)
    assert run.args[0].value
    assert "euw1-" in run.args[0].value
    # No cluster of stage 3 was ever synced.
    assert all(
        a.deployed == OLD
        for a in sim.apps.values()
        if a.labels["region"] == "eu-central-1"
        and a.name not in {c.application for c in stages[0].clusters or []}
    )


def test_a_failed_analysis_rolls_back_stage_1_and_2_clusters_in_reverse_order() -> None:
    analysis = {"templates": [{"templateName": "success-rate"}]}
    sim = Sim.seed(failurePolicy="Rollback", stage_overrides={1: {"analysis": analysis}})
    sim.run()
    sim.commit(NEW)
    sim.run_outcome = "Failed"
    sim.run()
    assert phase_of(sim) == "RolledBack", sim.status.message
    assert sim.status.failed_revision == NEW
    assert all(a.deployed == OLD for a in sim.apps.values())
    # Rolled back most recently updated first.
    forward = [c for c, r in sim.sync_log if r == NEW]
    back = [c for c, r in sim.sync_log if r == OLD]
    assert back == list(reversed(forward))
    # The failed revision is not rolled out again.
    sim.reconcile()
    assert phase_of(sim) == "RolledBack"
    assert not sim.history[-1].syncs
    # A newer one is.
    sim.commit(NEWER)
    sim.run_outcome = "Successful"
    sim.run()
    assert phase_of(sim) == "Completed"


def test_a_failed_sync_fails_the_stage() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    p = sim.reconcile()
    first = ((p.status.stages or [])[0].clusters or [])[0]
    sim.apps[first.application].fail_next = True
    sim.run()
    assert phase_of(sim) == "Failed"
    assert first.name in (sim.status.message or "")
    assert "failed" in (sim.status.message or "")


def test_progress_deadline_fails_a_cluster_that_never_gets_healthy() -> None:
    sim = Sim.seed(progressDeadlineSeconds=60)
    sim.run()
    sim.commit(NEW)
    for a in sim.apps.values():
        a.degrade_after_sync = True
    sim.run()
    assert phase_of(sim) == "Failed"
    assert "within 60s" in (sim.status.message or "")


def test_argo_cd_down_stalls_without_failing_and_resumes() -> None:
    sim = Sim.seed(progressDeadlineSeconds=60)
    sim.run()
    sim.commit(NEW)
    sim.reconcile()
    sim.now += datetime.timedelta(minutes=10)  # Argo CD never picks the syncs up
    p = sim.reconcile()
    assert p.status.phase == "Progressing"
    stalled = [c for c in p.status.conditions or [] if c.type == "Stalled"]
    assert stalled[0].status == "True"
    assert "application-controller" in stalled[0].message
    sim.run()
    assert phase_of(sim) == "Completed"
    stalled = [c for c in sim.status.conditions or [] if c.type == "Stalled"]
    assert stalled[0].status == "False"


def test_a_lost_operation_write_is_written_again() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    p = sim.reconcile()
    for s in p.syncs:
        sim.apps[s.application].op = None  # the write never reached the API server
    p = sim.reconcile()
    assert sorted(s.application for s in p.syncs) == sorted(
        c.application for c in (p.status.stages or [])[0].clusters or []
    )


def test_clusters_synced_in_the_same_second_get_their_own_sync_ids() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    p = sim.reconcile()
    assert len(p.syncs) == 2  # one per region of the first stage, in one plan, one instant
    ids = [s.sync_id for s in p.syncs]
    assert len(set(ids)) == 2, ids
    members = (p.status.stages or [])[0].clusters or []
    assert sorted(c.sync_id or "" for c in members if c.sync_id) == sorted(ids)


def test_every_sync_of_a_rollout_and_its_rollback_has_its_own_id() -> None:
    analysis = {"templates": [{"templateName": "success-rate"}]}
    sim = Sim.seed(failurePolicy="Rollback", stage_overrides={1: {"analysis": analysis}})
    sim.run()
    sim.commit(NEW)
    sim.run_outcome = "Failed"
    sim.run()
    assert phase_of(sim) == "RolledBack", sim.status.message
    apps_of: dict[str, set[str]] = {}
    for p in sim.history:
        for s in p.syncs:
            apps_of.setdefault(s.sync_id, set()).add(f"{s.application}@{s.revision}")
    assert all(len(v) == 1 for v in apps_of.values()), apps_of
    started = sum(1 for _, r in sim.sync_log if r in (NEW, OLD))
    assert len(apps_of) == started  # no sync written twice (no lost writes here)


def test_a_sync_id_is_planned_again_the_same_from_the_same_status() -> None:
    """The ID comes from the status (`syncsStarted`), not the clock: a manager restarted
    after the status write and before the operation write writes the same ID, and a plan
    made again from the status before the write starts the same syncs with the same IDs."""
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    before = sim.observed()
    first = plan(before)
    again = plan(dataclasses.replace(before, now=before.now + datetime.timedelta(seconds=3)))
    assert [s.sync_id for s in again.syncs] == [s.sync_id for s in first.syncs]
    sim.reconcile()
    for s in first.syncs:
        sim.apps[s.application].op = None  # the manager stopped before writing them
    sim.now += datetime.timedelta(seconds=1)
    p = sim.reconcile()
    assert [s.sync_id for s in p.syncs] == [s.sync_id for s in first.syncs]
    assert p.status.syncs_started == first.status.syncs_started


def test_a_recreated_rollout_never_reuses_an_earlier_objects_sync_id() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    one = plan(dataclasses.replace(sim.observed(), uid="11111111-aaaa"))
    two = plan(dataclasses.replace(sim.observed(), uid="22222222-bbbb"))
    assert not {s.sync_id for s in one.syncs} & {s.sync_id for s in two.syncs}


def test_a_restarted_manager_does_not_resync_finished_clusters() -> None:
    """All state is in status: planning again from the stored status (a new process) starts
    nothing twice."""
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    for _ in range(25):
        sim.reconcile()
        sim.argo()
        # the status round-trips through the API server as JSON
        sim.status = ProgressiveRolloutStatus.model_validate(
            sim.status.model_dump(by_alias=True, exclude_none=True, mode="json")
        )
    sim.run()
    synced = [c for c, _ in sim.sync_log]
    assert sorted(synced) == sorted(set(synced))


def test_pause_holds_new_syncs_and_resume_continues() -> None:
    sim = Sim.seed(paused=True)
    sim.run()
    sim.commit(NEW)
    for _ in range(10):
        sim.reconcile()
        sim.argo()
    assert sim.sync_log == []
    assert phase_of(sim) == "Paused"
    sim.spec = sim.spec.model_copy(update={"paused": False})
    sim.run()
    assert phase_of(sim) == "Completed"


def test_abort_with_rollback_policy_rolls_back() -> None:
    sim = Sim.seed(failurePolicy="Rollback")
    sim.run()
    sim.commit(NEW)
    for _ in range(8):
        sim.reconcile()
        sim.argo()
    sim.requests = Requests(abort="x")
    sim.run()
    assert phase_of(sim) == "RolledBack"
    assert all(a.deployed == OLD for a in sim.apps.values())


def test_resume_retries_a_failed_stage() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    p = sim.reconcile()
    first = ((p.status.stages or [])[0].clusters or [])[0]
    sim.apps[first.application].fail_next = True
    sim.run()
    assert phase_of(sim) == "Failed"
    sim.requests = Requests(retry="1")
    sim.run()
    assert phase_of(sim) == "Completed"


def test_a_cluster_added_mid_rollout_joins_its_stage_and_a_removed_one_leaves() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    sim.reconcile()
    sim.apps["web-euc1-z"] = SimApp(
        "web-euc1-z", "euc1-z", {"area": "emea", "region": "eu-central-1"}, head=NEW
    )
    del sim.apps["web-euw1-c"]
    sim.run()
    assert phase_of(sim) == "Completed"
    assert sim.apps["web-euc1-z"].deployed == NEW
    names = {c.name for s in sim.status.stages or [] for c in s.clusters or []}
    assert "euw1-c" not in names


def test_bad_input_gets_a_message_saying_what_to_fix() -> None:
    base = Sim.seed()
    o = base.observed()
    p = plan(dataclasses.replace(o, source_found=False))
    assert p.status.phase == "Error"
    assert "not found" in (p.status.message or "")
    assert "sourceRef" in (p.status.message or "")
    p = plan(dataclasses.replace(o, owner="other"))
    assert "already rolled out by ProgressiveRollout 'other'" in (p.status.message or "")
    multi = tuple(dataclasses.replace(a, multi_source=True) for a in o.apps[:1])
    p = plan(dataclasses.replace(o, apps=multi + o.apps[1:]))
    assert p.status.phase == "Error"
    assert "spec.sources" in (p.status.message or "")
    assert not p.syncs
    auto = tuple(dataclasses.replace(a, automated=True) for a in o.apps[:1])
    p = plan(dataclasses.replace(o, apps=auto + o.apps[1:]))
    assert "syncPolicy.automated" in (p.status.message or "")
    assert p.events
    assert p.events[0].type == "Warning"


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"key": "tier", "operator": "In"}, "operator In on 'tier' needs values"),
        ({"key": "tier", "operator": "NotIn", "values": []}, "operator NotIn on 'tier' needs"),
        ({"key": "tier", "operator": "Exists", "values": ["a"]}, "'tier' takes no values"),
    ],
)
def test_a_selector_requirement_takes_values_as_its_operator_says(
    bad: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValidationError, match=said):
        SelectorRequirement.model_validate(bad)
    SelectorRequirement.model_validate({"key": "tier", "operator": "DoesNotExist"})


def test_a_stage_selecting_nothing_holds_with_a_message_and_never_skips_ahead() -> None:
    sim = Sim.seed(
        stage_overrides={1: {"clusters": {"selector": {"matchLabels": {"region": "eu-wst-1"}}}}}
    )
    sim.run()
    sim.commit(NEW)
    sim.run(rounds=40)
    assert "no cluster of the ApplicationSet matches" in (sim.status.message or "")
    assert (sim.status.stages or [])[2].phase == "Pending"
    ready = [c for c in sim.status.conditions or [] if c.type == "Ready"]
    assert ready[0].reason == "NoClusters"


def test_webhooks_gate_the_stage_and_a_failing_one_fails_it() -> None:
    hooks = [
        {"name": "pre", "type": "PreStage", "url": "http://hooks/pre"},
        {"name": "smoke", "type": "PerCluster", "url": "http://hooks/smoke"},
        {"name": "post", "type": "PostStage", "url": "http://hooks/post"},
    ]
    sim = Sim.seed(stage_overrides={0: {"webhooks": hooks}})
    sim.run()
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed"
    called = [w.key for p in sim.history for w in p.webhooks]
    assert called[0] == "pre"
    assert called[-1] == "post"
    assert sorted(k for k in called if k.startswith("smoke/")) == sorted(
        f"smoke/{c.name}" for c in (sim.status.stages or [])[0].clusters or []
    )
    sim2 = Sim.seed(stage_overrides={0: {"webhooks": hooks[:1]}})
    sim2.run()
    sim2.commit(NEW)
    sim2.webhook_ok = False
    sim2.run()
    assert phase_of(sim2) == "Failed"
    assert sim2.sync_log == []


def test_rollback_order_is_reverse_of_update_order() -> None:
    sim = Sim.seed()
    sim.run()
    sim.commit(NEW)
    sim.run()
    order = [c.name for c in rollback_order(sim.status)]
    forward = [c for c, _ in sim.sync_log]
    assert order == list(reversed(forward))


# -- properties ----------------------------------------------------------------------------

Action = st.one_of(
    st.tuples(st.just("argo"), st.sampled_from(sorted(CLUSTERS))),
    st.tuples(st.just("argo-all"), st.just("")),
    st.tuples(st.just("time"), st.integers(1, 4000).map(str)),
    st.tuples(st.just("drain"), st.sampled_from(sorted(CLUSTERS))),
    st.tuples(st.just("undrain"), st.sampled_from(sorted(CLUSTERS))),
    st.tuples(st.just("commit"), st.sampled_from([NEW, NEWER])),
    st.tuples(st.just("fail"), st.sampled_from(sorted(CLUSTERS))),
    st.tuples(st.just("runs"), st.sampled_from(["Successful", "Failed", "Inconclusive"])),
    st.tuples(st.just("stale"), st.sampled_from(sorted(CLUSTERS))),
)


@settings(max_examples=150, deadline=None)
@given(
    actions=st.lists(Action, max_size=60),
    policy=st.sampled_from(["Pause", "Rollback"]),
    bake=st.sampled_from([None, "2m"]),
)
def test_invariants_hold_under_any_interleaving(
    actions: list[tuple[str, str]], policy: str, bake: str | None
) -> None:
    """maxUnavailable never exceeded, one in flight per region in stage 1, stages never out of
    order, a completed cluster really runs the target, syncs never written over a running
    operation (checked in Sim.reconcile), and with everything healthy it always finishes."""
    analysis = {"templates": [{"templateName": "t"}]}
    sim = Sim.seed(
        failurePolicy=policy,
        stage_overrides={0: {"bakeTime": bake} if bake else {}, 1: {"analysis": analysis}},
    )
    sim.run()
    sim.commit(NEW)
    for kind, arg in actions:
        sim.reconcile()
        app = sim.apps.get(f"web-{arg}")
        if kind == "argo" and app:
            sim.now += datetime.timedelta(seconds=1)
            app.tick(sim.now)
        elif kind == "argo-all":
            sim.argo()
        elif kind == "time":
            sim.now += datetime.timedelta(seconds=int(arg))
        elif kind == "drain" and app:
            app.labels["drained"] = "true"
        elif kind == "undrain" and app:
            app.labels.pop("drained", None)
        elif kind == "commit":
            sim.commit(arg)
        elif kind == "fail" and app:
            app.fail_next = True
        elif kind == "runs":
            sim.run_outcome = arg
            sim.finish_runs()
        elif kind == "stale" and app:
            app.health = "Healthy"  # a stale Healthy report
    # Let it settle with a healthy world: it must reach an end state.
    for a in sim.apps.values():
        a.labels.pop("drained", None)
        a.fail_next = False
    sim.run_outcome = "Successful"
    sim.finish_runs()
    for _ in range(300):
        sim.reconcile()
        if sim.status.phase in ("Completed", "Failed", "RolledBack"):
            break
        sim.argo()
        sim.finish_runs()
        sim.now += datetime.timedelta(minutes=1)
    assert sim.status.phase in ("Completed", "Failed", "RolledBack", "Paused"), sim.status
    if sim.status.phase == "Completed":
        target = sim.status.revision
        for s in sim.status.stages or []:
            for c in s.clusters or []:
                assert sim.apps[c.application].deployed == target
    if sim.status.phase == "RolledBack":
        for c in rollback_order(sim.status):
            assert sim.apps[c.application].deployed == c.previous_revision


def test_a_stage_with_nothing_to_sync_runs_no_analysis_and_calls_no_webhooks() -> None:
    hooks = [
        {"name": "pre", "type": "PreStage", "url": "http://hooks/pre"},
        {"name": "post", "type": "PostStage", "url": "http://hooks/post"},
    ]
    analysis = {"templates": [{"templateName": "t"}]}
    sim = Sim.seed(stage_overrides={0: {"webhooks": hooks, "analysis": analysis}})
    sim.run()  # the first look: every cluster is already at OLD
    assert phase_of(sim) == "Completed"
    assert [w for p in sim.history for w in p.webhooks] == []
    assert [r for p in sim.history for r in p.create_runs] == []
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed"
    assert [w.key for p in sim.history for w in p.webhooks] == ["pre", "post"]
    assert len([r for p in sim.history for r in p.create_runs]) == 1
