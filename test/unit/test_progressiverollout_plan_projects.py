"""Argo CD projects in the ProgressiveRollout plan (progressiverollout/plan/projects.py),
through test_progressiverollout_plan's simulated Argo CD: a sync window that refuses a manual
sync holds its cluster in its stage while the others go on, and its end lets it sync; a
destination the project does not permit is never synced and is reported; a sync Argo CD holds
for a window waits without failing on its deadline."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.progressiverollout.plan import Observed
from okra_controllers.progressiverollout.plan.appproject import Destination, Project, SyncWindow
from unit.test_progressiverollout_plan import NEW, OLD, T0, Sim, phase_of

OPEN = Destination("*", "", "*")


def deny(*clusters: str, schedule: str = "0 0 * * *", **kw: Any) -> SyncWindow:
    """A window from midnight UTC for 2 h (T0 is midnight) over the given clusters."""
    return SyncWindow(
        "deny",
        schedule,
        "2h",
        clusters=tuple(f"https://{c}.example" for c in clusters),
        description="nightly backups",
        **kw,
    )


@dataclass
class ProjectSim(Sim):
    projects: dict[str, Project] | None = field(
        default_factory=lambda: {"web": Project("web", (OPEN,))}
    )

    def observed(self) -> Observed:
        o = super().observed()
        apps = tuple(
            dataclasses.replace(
                a,
                project="web",
                dest_server=f"https://{a.cluster}.example",
                dest_namespace="web",
                cluster_server=f"https://{a.cluster}.example",
            )
            for a in o.apps
        )
        return dataclasses.replace(o, apps=apps, projects=self.projects)


def project_sim(project: Project | None = None, **kw: Any) -> ProjectSim:
    base = Sim.seed(**kw)
    sim = ProjectSim(spec=base.spec, apps=base.apps)
    if project is not None:
        sim.projects = {"web": project}
    return sim


def phases(sim: Sim) -> dict[str, str]:
    return {c.name: c.phase for ss in sim.status.stages or [] for c in ss.clusters or []}


def cluster(sim: Sim, name: str) -> Any:
    return next(c for ss in sim.status.stages or [] for c in ss.clusters or [] if c.name == name)


def events(sim: Sim, reason: str) -> list[str]:
    return [e.message for p in sim.history for e in p.events if e.reason == reason]


def condition(sim: Sim) -> Any:
    return next(c for c in sim.status.conditions or [] if c.type == "AppProjects")


def step(sim: Sim, rounds: int = 1) -> None:
    for _ in range(rounds):
        sim.reconcile()
        sim.argo()
        sim.finish_runs()
        sim.now += datetime.timedelta(seconds=5)


def test_a_deny_window_holds_its_cluster_while_the_stage_goes_on_and_its_end_syncs_it() -> None:
    sim = project_sim(Project("web", (OPEN,), (deny("euw1-a"),)))
    sim.commit(NEW)
    step(sim, 30)
    stage = (sim.status.stages or [])[0]
    assert {c.name for c in stage.clusters or []} == {"euw1-a", "euc1-a"}
    assert phases(sim)["euc1-a"] == "Completed"  # the other canary went on
    held = cluster(sim, "euw1-a")
    assert held.phase == "Pending"
    assert held.message == (
        "held by AppProject 'web' in a deny window (deny window 0 ('0 0 * * *' for 2h): "
        "nightly backups) until 2026-01-01T02:00:00Z"
    )
    assert stage.phase == "Progressing"  # the stage waits for it
    assert ("euw1-a", NEW) not in sim.sync_log
    assert sim.status.message is not None
    assert "euw1-a held by a sync window of its AppProject" in sim.status.message
    assert len(events(sim, "SyncWindowHeld")) == 1
    c = condition(sim)
    assert (c.status, c.reason) == ("False", "SyncWindow")
    assert c.message == "held by a sync window: euw1-a"
    wake = sim.history[-1].requeue_after
    assert wake is not None
    assert wake <= (T0 + datetime.timedelta(hours=2) - sim.now).total_seconds() + 0.02
    # the window ends: the cluster syncs, and the rollout completes with one sync per cluster
    sim.now = T0 + datetime.timedelta(hours=2)
    sim.run()
    assert phase_of(sim) == "Completed"
    assert all(a.deployed == NEW for a in sim.apps.values() if a.cluster != "use1-a")
    assert sim.sync_log.count(("euw1-a", NEW)) == 1
    assert condition(sim).status == "True"


def test_a_deny_window_with_manual_sync_lets_okra_sync() -> None:
    sim = project_sim(Project("web", (OPEN,), (deny("euw1-a", manual_sync=True),)))
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed"
    assert ("euw1-a", NEW) in sim.sync_log
    assert not events(sim, "SyncWindowHeld")


def test_outside_every_allow_window_holds_until_the_next_one_opens() -> None:
    allow = SyncWindow("allow", "0 6 * * *", "1h", namespaces=("web",))
    sim = project_sim(Project("web", (OPEN,), (allow,)))
    sim.commit(NEW)
    step(sim, 10)
    assert not [s for s in sim.sync_log if s[1] == NEW]
    assert cluster(sim, "euw1-a").message.startswith(
        "held by AppProject 'web' outside every allow window"
    )
    assert cluster(sim, "euw1-a").message.endswith("until 2026-01-01T06:00:00Z")
    sim.now = T0 + datetime.timedelta(hours=6)
    sim.run()
    assert phase_of(sim) == "Completed"


def test_a_window_argo_cd_cannot_read_holds_every_cluster_it_matches() -> None:
    bad = SyncWindow("deny", "* 10 * * 7", "1h", namespaces=("web",))
    sim = project_sim(Project("web", (OPEN,), (bad,)))
    sim.commit(NEW)
    step(sim, 10)
    assert not [s for s in sim.sync_log if s[1] == NEW]
    assert "sync window 0 is invalid: cannot parse schedule" in cluster(sim, "euw1-a").message


def test_a_destination_the_project_forbids_is_never_synced_and_is_reported() -> None:
    sim = project_sim(Project("web", (OPEN, Destination("!https://euc1-b.example", "", "*"))))
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed"
    assert phases(sim)["euc1-b"] == "Forbidden"
    assert all(c != "euc1-b" for c, _ in sim.sync_log)
    assert sim.apps["web-euc1-b"].deployed == OLD
    said = cluster(sim, "euc1-b").message
    assert said.startswith("AppProject 'web' does not permit destination euc1-b")
    assert len(events(sim, "DestinationNotPermitted")) == 1
    assert sim.status.message == (
        f"every stage is at {NEW[:12]} but euc1-b, which their AppProject does not permit "
        "(never synced)"
    )
    last = (sim.status.stages or [])[-1]  # euc1-a was done in the canary stage
    assert last.message == (
        f"1 clusters already at {NEW[:12]}; not permitted by their AppProject, never synced: euc1-b"
    )
    c = condition(sim)
    assert (c.status, c.reason) == ("False", "Forbidden")
    assert "euc1-b" in c.message


def test_a_forbidden_cluster_permitted_again_while_its_stage_runs_is_synced() -> None:
    # stage 2 (eu-west-1) syncs one cluster at a time: euw1-c is found forbidden while
    # euw1-b syncs, and the project permits it before the stage completes
    sim = project_sim(Project("web", (OPEN, Destination("!https://euw1-c.example", "", "*"))))
    sim.commit(NEW)
    for _ in range(100):
        step(sim)
        if phases(sim).get("euw1-c") == "Forbidden":
            break
    assert (sim.status.stages or [])[1].phase == "Progressing"
    sim.projects = {"web": Project("web", (OPEN,))}
    sim.run()
    assert phase_of(sim) == "Completed"
    assert ("euw1-c", NEW) in sim.sync_log
    assert phases(sim)["euw1-c"] == "Completed"
    assert len(events(sim, "DestinationPermitted")) == 1


def test_an_application_whose_project_does_not_exist_is_forbidden() -> None:
    sim = project_sim()
    sim.projects = {}
    sim.commit(NEW)
    sim.run()
    assert not [s for s in sim.sync_log if s[1] == NEW]
    assert cluster(sim, "euw1-a").message.startswith("AppProject 'web' not found")


def test_without_the_appproject_kind_nothing_is_checked_and_the_status_says_so() -> None:
    sim = project_sim()
    sim.projects = None
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed"
    c = condition(sim)
    assert (c.status, c.reason) == ("False", "NotChecked")


def test_a_sync_argo_cd_holds_for_a_window_waits_past_its_deadline() -> None:
    sim = project_sim()
    sim.commit(NEW)
    running: list[Any] = []
    for _ in range(50):
        sim.reconcile()
        running = [a for a in sim.apps.values() if a.op_state.get("phase") == "Running"]
        if running:
            break
        sim.argo()
        sim.now += datetime.timedelta(seconds=5)
    assert running
    for app in running:  # a deny window opened: Argo CD holds the running syncs
        app.op_state["message"] = "Sync operation blocked by sync window"
    sim.now += datetime.timedelta(seconds=sim.spec.progress_deadline_seconds * 2)
    sim.reconcile()
    held = sim.status.model_dump()
    for _ in range(10):  # waiting writes nothing: the status stays as it is, tick after tick
        sim.now += datetime.timedelta(seconds=5)
        sim.reconcile()
        assert sim.status.model_dump() == held
    for app in running:
        c = cluster(sim, app.cluster)
        assert c.phase == "Syncing"
        assert c.message.startswith("held by a sync window: Argo CD holds the sync")
    assert condition(sim).reason == "SyncWindow"
    # the window ends, Argo CD runs the syncs, the rollout completes
    for app in running:
        app.op_state["message"] = ""
    sim.run()
    assert phase_of(sim) == "Completed"
    for app in running:
        assert sim.sync_log.count((app.cluster, NEW)) == 1


def test_a_stage_whose_only_cluster_to_sync_is_forbidden_calls_no_pre_stage_webhook() -> None:
    # stage 3: euc1-a is already there (the canary stage), euc1-b is forbidden
    hook = {"name": "pre", "type": "PreStage", "url": "https://hooks.example/pre"}
    sim = project_sim(
        Project("web", (OPEN, Destination("!https://euc1-b.example", "", "*"))),
        stage_overrides={2: {"webhooks": [hook]}},
    )
    sim.commit(NEW)
    sim.run()
    assert phase_of(sim) == "Completed"
    assert not [w for p in sim.history for w in p.webhooks if w.stage == 2]
    # permitted, the same stage would sync euc1-b and call it first
    sim = project_sim(stage_overrides={2: {"webhooks": [hook]}})
    sim.commit(NEW)
    sim.run()
    assert [w.key for p in sim.history for w in p.webhooks if w.stage == 2] == ["pre"]
