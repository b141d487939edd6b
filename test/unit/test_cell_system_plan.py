"""The system Cell's plan (seed 002) composed over the Cell engine: a simulated world in
which the system plan's output (the applications' Cells, AWSTargetGroups, Checks) is
carried out and each application's Cell is planned by the real Cell plan
(`test_cell_plan.World`), a tick at a time, AWS applying weights a tick later."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.api.v1alpha1.cell import CellSpec, SystemCellStatus
from okra_controllers.cell.system.model import (
    AppsOn,
    CheckSeen,
    ChildSeen,
    ClusterSeen,
    SystemObserved,
    SystemPlan,
)
from okra_controllers.cell.system.names import version_key
from okra_controllers.cell.system.plan import plan
from okra_controllers.cell.versions import Grouped, group_target_groups
from unit.test_cell_plan import T0, World

LISTENER = "arn:aws:elasticloadbalancing:us-east-1:1:listener/app/sys/1/2"


def tg_arn(name: str) -> str:
    return f"arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/{name}/1"


def cluster(name: str, role: str) -> dict[str, Any]:
    return {"name": name, "eks": {}, "labels": {"role": role, "targetGroupARN": tg_arn(name)}}


def prometheus_check(name: str = "errors") -> dict[str, Any]:
    return {
        "name": name,
        "analysis": {
            "interval": "1s",
            "provider": {"prometheus": {"address": "http://prometheus:9090"}},
            "query": 'errors{cluster="{{.Vars.eksClusterName}}"}',
            "max": 0.1,
        },
    }


def app(name: str, role: str, step: int, checks: bool = False, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "clusterSelector": {"matchEKSTags": {"role": role}},
        "alb": {
            "listenerARN": LISTENER,
            "forwardConfig": {
                "priority": 10 + len(name),
                "targetGroup": {"arnFromLabel": "targetGroupARN"},
            },
            "updateStrategy": {"stepWeight": step, "totalWeight": 100},
        },
        "checks": [prometheus_check()] if checks else [],
        **kw,
    }


def system(clusters: list[dict[str, Any]], apps: list[dict[str, Any]], **kw: Any) -> CellSpec:
    return CellSpec.model_validate({"clusters": clusters, "applications": apps, **kw})


V1 = [cluster("web-1-v1", "web"), cluster("web-2-v1", "web"), cluster("api-v1", "api")]
V2 = [cluster("web-1-v2", "web"), cluster("web-2-v2", "web"), cluster("api-v1", "api")]


class ChildWorld(World):
    """An application's Cell as the engine plans it; its version label is the system's."""

    label: str = ""

    def grouped(self) -> Grouped:
        return group_target_groups(self.tgs, [self.label])


@dataclass
class SystemWorld:
    spec: CellSpec
    status: SystemCellStatus = field(default_factory=SystemCellStatus)
    now: datetime.datetime = T0
    eks: dict[str, ClusterSeen] = field(default_factory=dict)
    children: dict[str, ChildWorld] = field(default_factory=dict)
    checks: dict[str, CheckSeen] = field(default_factory=dict)
    check_passes: Callable[[str], bool] = lambda name: True
    history: list[SystemPlan] = field(default_factory=list)
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    paused: bool = False

    def __post_init__(self) -> None:
        for c in self.spec.clusters or []:
            self.up(c.name, c.labels.get("role", ""))

    def up(self, name: str, role: str) -> None:
        """An EKS cluster, ACTIVE and reachable, tagged with its role."""
        self.eks[name] = ClusterSeen(eks_status="ACTIVE", tags={"role": role}, reachable=True)

    def observed(self) -> SystemObserved:
        return SystemObserved(
            name="sys",
            namespace="ns",
            generation=1,
            spec=self.spec,
            status=self.status,
            now=self.now,
            clusters=dict(self.eks),
            children={
                n: ChildSeen(status=w.status, generation=1) for n, w in self.children.items()
            },
            checks=dict(self.checks),
            paused=self.paused,
        )

    def tick(self) -> SystemPlan:
        p = plan(self.observed())
        self.history.append(p)
        self.status = p.status
        # the API server's AWSTargetGroups: applied, pruned unless kept
        tgs = {t["metadata"]["name"]: t for t in self.objects.get("tgs", [])}
        kept = {n: tgs[n] for kind, n in p.keep if kind == "AWSTargetGroup" and n in tgs}
        tgs = kept | {t["metadata"]["name"]: t for t in p.target_groups}
        self.objects = {"cells": p.cells, "tgs": list(tgs.values()), "checks": p.checks}
        for obj in p.checks:  # each Check runs at once and says whether it passed
            name = obj["metadata"]["name"]
            digest = obj["metadata"]["annotations"]["analysis-hash"]
            self.checks[name] = CheckSeen(
                hash=digest,
                observed_hash=digest,
                last_passed=self.check_passes(name),
                last_run_time=self.now,
            )
        for cell in p.cells:
            name = cell["metadata"]["labels"]["okra.mumo.co/application"]
            spec = CellSpec.model_validate(cell["spec"])
            w = self.children.get(name)
            if w is None:
                w = self.children[name] = ChildWorld(spec)
                w.label = version_key("sys", name)
            w.spec, w.now = spec, self.now
            w.tgs = [
                (t["metadata"]["name"], t["spec"]["arn"], t["metadata"]["labels"])
                for t in self.objects["tgs"]
                if t["metadata"]["labels"]["okra.mumo.co/application"] == name
            ]
            notes = cell["metadata"]["annotations"]
            w.promote = notes.get("okra.mumo.co/promote")
            w.abort = notes.get("okra.mumo.co/abort")
            w.paused = notes.get("okra.mumo.co/pause") == "true"
            w.tick()
            w.status = w.status.model_copy(update={"observed_generation": 1})
        self.now += datetime.timedelta(seconds=1)
        return p

    def run(self, ticks: int) -> None:
        for _ in range(ticks):
            self.tick()

    def app(self, name: str) -> Any:
        return next(a for a in self.status.applications or [] if a.name == name)

    def weights(self, name: str) -> dict[str, int]:
        return self.children[name].weights()

    def events(self) -> list[str]:
        return [f"{e.reason}: {e.message}" for p in self.history for e in p.events]


def rolled_out(
    apps: list[dict[str, Any]],
    first: list[dict[str, Any]] = V1,
    then: list[dict[str, Any]] = V2,
    **kw: Any,
) -> SystemWorld:
    """The system completed on `first`, then given `then` (each of its clusters up)."""
    w = SystemWorld(system(first, apps, **kw))
    w.run(12)
    assert w.status.phase == "Completed", w.status
    for c in then:
        w.up(c["name"], c["labels"]["role"])
    w.spec = system(then, apps, **kw)
    w.history.clear()
    return w


def test_first_rollout_puts_each_application_on_its_clusters() -> None:
    w = SystemWorld(system(V1, [app("web", "web", 10), app("api", "api", 100)]))
    w.run(12)
    assert w.status.phase == "Completed"
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    assert w.weights("api") == {"sys-api-api-v1": 100}
    assert {a.name: (a.phase, a.version, a.serving) for a in w.status.applications or []} == {
        "web": ("Synced", "v1", ["web-1-v1", "web-2-v1"]),
        "api": ("Synced", "v1", ["api-v1"]),
    }
    cells = {c["metadata"]["name"]: c for c in w.objects["cells"]}
    assert set(cells) == {"sys-web", "sys-api"}
    assert cells["sys-web"]["spec"]["ingress"]["awsApplicationLoadBalancer"]["listenerRule"] == {
        "priority": 13,
        "pathPatterns": ["/*"],
    } | {k: [] for k in ("hosts", "methods", "sourceIPs", "headers", "queryStrings")}


def test_a_new_pair_of_web_clusters_is_walked_to_by_step_weight_and_api_stays() -> None:
    w = rolled_out([app("web", "web", 10), app("api", "api", 100)])
    w.run(40)
    web = [sum(v for k, v in p.items() if "v2" in k) for p in _weights_over_time(w, "web")]
    assert web == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert w.weights("web") == {"sys-web-web-1-v2": 50, "sys-web-web-2-v2": 50}
    assert w.weights("api") == {"sys-api-api-v1": 100}
    assert (w.app("web").version, w.app("web").phase) == ("v2", "Synced")
    assert (w.app("api").version, w.app("api").phase) == ("v1", "Synced")
    assert w.status.phase == "Completed"
    # the old clusters' target groups are gone once v2 serves
    assert sorted(t["metadata"]["name"] for t in w.objects["tgs"]) == [
        "sys-api-api-v1",
        "sys-web-web-1-v2",
        "sys-web-web-2-v2",
    ]
    started = [e for e in w.events() if e.startswith("MigrationStarted")]
    assert started == [
        "MigrationStarted: application web: v2 on web-1-v2, web-2-v2 "
        "(from v1 on web-1-v1, web-2-v1)"
    ]


def _weights_over_time(w: SystemWorld, name: str) -> list[dict[str, int]]:
    out: list[dict[str, int]] = []
    child = w.children[name]
    for p in child.history:
        if p.forward is None:
            continue
        now = {f.name: f.weight for f in p.forward}
        if not out or out[-1] != now:
            out.append(now)
    return out


def test_each_step_waits_for_the_checks_to_run_and_pass_since_it_began() -> None:
    w = rolled_out([app("web", "web", 50, checks=True), app("api", "api", 100)])
    w.run(40)
    assert w.app("web").phase == "Synced"
    assert w.weights("web") == {"sys-web-web-1-v2": 50, "sys-web-web-2-v2": 50}
    # one Check per cluster: the rendered queries differ ({{.Vars.eksClusterName}})
    names = sorted(w.checks)
    assert names == ["sys-web-errors-web-1-v2", "sys-web-errors-web-2-v2"]
    query = 'errors{cluster="web-1-v2"}'
    # every promote names a pause step and came after a Check run past that step's start
    promotes = [
        (p.status, c["metadata"]["annotations"]["okra.mumo.co/promote"])
        for p in w.history
        for c in p.cells
        if "okra.mumo.co/promote" in c["metadata"]["annotations"]
    ]
    assert {v.split("/")[1] for _, v in promotes} == {"1", "3"}  # steps: 50, pause, 100, pause
    assert w.objects["checks"] == []
    assert w.status.phase == "Completed"
    assert query in str(next(p.checks for p in w.history))


def test_one_shared_check_when_the_rendered_queries_are_equal() -> None:
    shared = prometheus_check()
    shared["analysis"]["query"] = "sum(errors)"
    w = rolled_out([app("web", "web", 50, checks=True) | {"checks": [shared]}])
    w.tick()
    assert [c["metadata"]["name"] for c in w.history[-1].checks] == ["sys-web-errors"]
    assert w.history[-1].checks[0]["metadata"]["annotations"]["analysis-hash"]


def test_no_weight_moves_until_the_late_cluster_is_ready_then_the_pair_moves() -> None:
    apps = [app("web", "web", 50), app("api", "api", 100)]
    w = SystemWorld(system(V1, apps))
    w.run(12)
    w.spec = system(V2, apps)
    w.up("web-1-v2", "web")  # web-2-v2 is not in EKS yet
    w.run(10)
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    assert w.status.phase == "Pending"
    assert "web-2-v2: not found in EKS" in (w.status.message or "")
    assert (w.app("web").phase, w.app("web").version) == ("Pending", "v1")
    assert [c.name for c in w.status.clusters or [] if not c.ready] == ["web-2-v2"]
    w.up("web-2-v2", "web")
    w.run(20)
    assert w.weights("web") == {"sys-web-web-1-v2": 50, "sys-web-web-2-v2": 50}
    assert w.app("web").phase == "Synced"


def test_past_ready_timeout_the_cell_names_the_missing_cluster_once() -> None:
    apps = [app("web", "web", 50)]
    late = [*V2[:1], V2[1] | {"readyTimeout": "5s"}]
    w = SystemWorld(system(V1[:2], apps))
    w.run(12)
    w.spec = system(late, apps)
    w.up("web-1-v2", "web")
    w.eks["web-2-v2"] = ClusterSeen(eks_status="CREATING")
    w.run(10)
    assert "web-2-v2: not ready after readyTimeout 5s: EKS status CREATING" in (
        w.status.message or ""
    )
    said = [e for e in w.events() if e.startswith("ClusterNotReady")]
    assert said == [
        "ClusterNotReady: cluster web-2-v2 not ready after readyTimeout 5s: EKS status CREATING"
    ]
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}


def test_a_cluster_that_need_not_be_ready_is_left_out_after_its_timeout() -> None:
    apps = [app("web", "web", 50)]
    optional = [*V2[:1], V2[1] | {"requireReady": False, "readyTimeout": "3s"}]
    w = SystemWorld(system(V1[:2], apps))
    w.run(12)
    w.spec = system(optional, apps)
    w.up("web-1-v2", "web")
    w.eks.pop("web-2-v2", None)
    w.run(20)
    assert w.weights("web") == {"sys-web-web-1-v2": 100}
    assert w.app("web").clusters == ["web-1-v2"]
    c = next(c for c in w.status.clusters or [] if c.name == "web-2-v2")
    assert c.message == "left out (requireReady: false): not found in EKS"


def test_a_failed_check_waits_the_delay_then_rolls_that_application_back() -> None:
    apps = [
        app("web", "web", 50, checks=True, failurePolicy={"type": "Rollback", "delaySeconds": 4}),
        app("api", "api", 100),
    ]
    w = rolled_out(apps)
    w.check_passes = lambda name: False
    w.run(30)
    waiting = [
        p
        for p in w.history
        if any(
            a.name == "web"
            and a.phase == "CheckFailed"
            and "Waiting 4 seconds before starting a rollback" in a.message
            for a in p.status.applications or []
        )
    ]
    # a tick a second: the failure's tick and the three after it wait; the rollback starts
    # on the tick 4 s after the failure
    assert len(waiting) == 4
    after = w.history[w.history.index(waiting[-1]) + 1]
    assert next(a.phase for a in after.status.applications or [] if a.name == "web") == "Reverting"
    assert w.app("web").phase == "Reverted"
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    assert w.app("api").phase == "Synced"
    assert w.status.phase == "Failed"
    assert len([e for e in w.events() if e.startswith("CheckFailed")]) == 1


def test_a_failed_check_with_stop_stays_where_it_is_and_others_go_on() -> None:
    apps = [app("web", "web", 50, checks=True, failurePolicy={"type": "Stop"})]
    apps.append(app("api", "api", 100))
    w = SystemWorld(system(V1, apps))
    w.run(12)
    for c in V2:
        w.up(c["name"], c["labels"]["role"])
    api_v2 = [*V2[:2], cluster("api-v2", "api")]
    w.up("api-v2", "api")
    w.spec = system(api_v2, apps)
    w.check_passes = lambda name: False
    w.run(30)
    assert w.app("web").phase == "Stopped"
    assert "failurePolicy Stop" in w.app("web").message
    # held at the step that failed: half the traffic on each pair, nothing aborted
    assert w.weights("web") == {
        "sys-web-web-1-v1": 25,
        "sys-web-web-2-v1": 25,
        "sys-web-web-1-v2": 25,
        "sys-web-web-2-v2": 25,
    }
    assert not any("okra.mumo.co/abort" in c["metadata"]["annotations"] for c in w.objects["cells"])
    assert w.app("api").phase == "Synced"
    assert w.weights("api") == {"sys-api-api-v2": 100}


def test_what_the_cell_cannot_do_is_said_per_application() -> None:
    bad_selector = app("web", "web", 50) | {"clusterSelector": None}
    fixed_arn = app("api", "web", 100)
    fixed_arn["alb"]["forwardConfig"]["targetGroup"] = {"arn": tg_arn("x")}
    w = SystemWorld(system(V1, [bad_selector, fixed_arn]))
    w.run(3)
    assert w.app("web").phase == "Error"
    assert "clusterSelector is required" in w.app("web").message
    assert w.app("api").phase == "Error"
    assert "names one target group, but 2 clusters" in w.app("api").message
    assert w.objects["cells"] == []
    assert w.status.phase == "Failed"


def by_cluster(w: SystemWorld, name: str) -> dict[str, int]:
    """The application's weights as AWS shows them, by ARN's cluster (a kept cluster has
    two objects, one per version, and the rule lists it once)."""
    forward = w.children[name].forward or ()
    out: dict[str, int] = {}
    for f in forward:
        c = f.arn.split("/")[1]
        assert c not in out, f"{c} listed twice: {forward}"
        out[c] = f.weight
    return out


def replacing_one(
    step: int, checks: bool = False, make: Callable[..., dict[str, Any]] = app, **kw: Any
) -> SystemWorld:
    """web on {web-1-v1, web-2-v1}, moved to {web-1-v1, web-3} (`make`: its application,
    behind the ALB unless it says otherwise)."""
    apps = [make("web", "web", step, checks=checks, **kw)]
    w = SystemWorld(system(V1[:2], apps))
    w.run(12)
    assert by_cluster(w, "web") == {"web-1-v1": 50, "web-2-v1": 50}
    w.up("web-3", "web")
    w.spec = system([V1[0], cluster("web-3", "web")], apps)
    w.history.clear()
    return w


def readings(w: SystemWorld, ticks: int) -> list[dict[str, int]]:
    out = [by_cluster(w, "web")]
    for _ in range(ticks):
        w.tick()
        now = by_cluster(w, "web")
        if not out or out[-1] != now:
            out.append(now)
    return out


def test_replacing_one_cluster_keeps_the_other_s_share_and_walks_the_leaving_one_s() -> None:
    w = replacing_one(25)
    seen = readings(w, 40)
    assert seen == [
        {"web-1-v1": 50, "web-2-v1": 50},
        {"web-1-v1": 50, "web-2-v1": 37, "web-3": 13},
        {"web-1-v1": 50, "web-2-v1": 25, "web-3": 25},
        {"web-1-v1": 50, "web-2-v1": 12, "web-3": 38},
        {"web-1-v1": 50, "web-3": 50},
    ]
    assert (w.app("web").version, w.app("web").phase) == ("v2", "Synced")
    assert w.app("web").serving == ["web-1-v1", "web-3"]
    assert w.status.phase == "Completed"
    # once v2 serves, the kept cluster has one object again, with its usual name
    assert sorted(t["metadata"]["name"] for t in w.objects["tgs"]) == [
        "sys-web-web-1-v1",
        "sys-web-web-3",
    ]
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-3": 50}


def test_while_it_walks_the_kept_cluster_has_an_object_per_version() -> None:
    w = replacing_one(50, checks=True)
    w.check_passes = lambda name: not name.endswith("web-3")
    w.run(6)
    tgs = {
        t["metadata"]["name"]: t["metadata"]["labels"][version_key("sys", "web")]
        for t in w.objects["tgs"]
    }
    assert tgs == {
        "sys-web-web-1-v1": "v1",
        "sys-web-web-2-v1": "v1",
        "sys-web-web-1-v1-v2": "v2",
        "sys-web-web-3": "v2",
    }
    assert w.app("web").weight == 50


def test_a_failed_check_restores_the_weights_before_the_walk_exactly() -> None:
    w = replacing_one(25, checks=True, failurePolicy={"type": "Rollback", "delaySeconds": 0})
    passing = {"now": True}
    w.check_passes = lambda name: passing["now"] or not name.endswith("web-3")
    seen = [by_cluster(w, "web")]
    for _ in range(40):
        w.tick()
        now = by_cluster(w, "web")
        if not seen or seen[-1] != now:
            seen.append(now)
        if now.get("web-3") == 25:
            passing["now"] = False  # at half way, web-3's check starts failing
    assert w.app("web").phase == "Reverted", w.app("web")
    assert seen[:3] == [
        {"web-1-v1": 50, "web-2-v1": 50},
        {"web-1-v1": 50, "web-2-v1": 37, "web-3": 13},
        {"web-1-v1": 50, "web-2-v1": 25, "web-3": 25},
    ]
    assert seen[-1] == {"web-1-v1": 50, "web-2-v1": 50}
    assert all(r["web-1-v1"] == 50 for r in seen)


def test_what_aws_cannot_express_or_okra_cannot_yet_do_is_refused_by_name() -> None:
    many = [cluster(f"w{i}", "web") for i in range(6)]
    apps = [app("web", "web", 50)]
    w = SystemWorld(system(many[:3], apps))
    w.run(12)
    for c in many[3:]:
        w.up(c["name"], "web")
    w.spec = system([many[0], *many[3:]], apps)  # 3 serving + 3 arriving: 6 in one rule
    w.run(3)
    assert w.app("web").phase == "Error"
    assert "routes to 6 target groups at once, but an ALB forward action holds at most 5" in (
        w.app("web").message
    )
    assert by_cluster(w, "web") == {"w0": 33, "w1": 33, "w2": 34}
    confirmed = replacing_one(50, trafficConfirmation={"minRequests": 10})
    confirmed.run(3)
    assert confirmed.app("web").phase == "Error"
    assert confirmed.app("web").message.startswith(
        "trafficConfirmation: cluster(s) web-1-v1 serve the application now"
    )


def test_going_back_to_the_serving_set_reuses_its_version() -> None:
    apps = [app("web", "web", 50)]
    w = rolled_out(apps)
    w.tick()
    assert w.app("web").version == "v2"
    w.spec = system(V1, apps)
    w.run(20)
    assert (w.app("web").version, w.app("web").phase) == ("v1", "Synced")
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}


def test_the_plan_is_the_same_from_the_same_observation() -> None:
    w = rolled_out([app("web", "web", 50, checks=True), app("api", "api", 100)])
    for _ in range(15):
        o = w.observed()
        assert plan(o) == plan(o)
        w.tick()


def argocd_app(name: str, role: str, strategy: str = "CreateBeforeDelete") -> dict[str, Any]:
    out = app(name, role, 50)
    out["argocd"] = {
        "clusterSecret": {"labels": {"myservice-role": name}},
        "applicationSet": {"name": name},
        "updateStrategy": {"type": strategy},
    }
    if strategy == "DeleteBeforeCreate":
        del out["alb"]
    return out


def with_secrets(w: SystemWorld, *names: str) -> None:
    for n in names:
        w.eks[n] = dataclasses.replace(w.eks[n], secret=f"cluster-{n}")


def test_argocd_clusters_get_the_member_and_version_labels_and_leave_when_unlabelled() -> None:
    apps = [argocd_app("web", "web")]
    w = SystemWorld(system(V1[:2], apps))
    with_secrets(w, "web-1-v1", "web-2-v1")
    p = w.tick()
    member, version = "web.sys.okra.mumo.co/member", "web.sys.okra.mumo.co/version"
    assert p.secret_labels == {
        "cluster-web-1-v1": {member: "true", version: "v1"},
        "cluster-web-2-v1": {member: "true", version: "v1"},
    }
    cell = p.cells[0]["spec"]["argocd"]
    assert cell["clusterSecret"] == {
        "selector": {"matchLabels": {member: "true"}},
        "labels": {"myservice-role": "web"},
    }
    # A cluster no longer in the system keeps the labels while it still has the app's
    # Argo CD labels (its Cell takes those away first), then loses them.
    o = w.observed()
    labelled = {member: "true", version: "v0", "myservice-role": "web"}
    gone = dataclasses.replace(o, secrets={"cluster-old": labelled})
    assert "cluster-old" not in plan(gone).secret_labels
    unlabelled = {member: "true", version: "v0"}
    gone = dataclasses.replace(o, secrets={"cluster-old": unlabelled})
    assert plan(gone).secret_labels["cluster-old"] == {member: None, version: None}


def test_a_cluster_an_argocd_application_needs_without_a_secret_is_not_ready() -> None:
    w = SystemWorld(system(V1[:2], [argocd_app("web", "web")]))
    with_secrets(w, "web-1-v1")
    w.tick()
    assert w.status.phase == "Pending"
    c = next(c for c in w.status.clusters or [] if c.name == "web-2-v1")
    assert "no Argo CD cluster Secret in ns names it" in c.message


def test_applications_that_have_not_moved_are_held_while_argo_cd_deploys_another() -> None:
    apps = [argocd_app("web", "web"), app("api", "api", 100)]
    w = SystemWorld(system(V1, apps))
    with_secrets(w, "web-1-v1", "web-2-v1", "api-v1")
    w.run(12)
    for c in V2:
        w.up(c["name"], c["labels"]["role"])
    with_secrets(w, "web-1-v2", "web-2-v2", "api-v1")
    w.spec = system(V2, apps)
    o = w.observed()  # web is given v2 in this plan; no Cell has moved yet
    waiting = {("web", "v2"): AppsOn(False, "Application web-web-1-v2 is OutOfSync/Missing")}
    p = plan(dataclasses.replace(o, argocd=waiting))
    held = {c["metadata"]["name"]: c["metadata"]["annotations"] for c in p.cells}
    assert held["sys-web"] == {"okra.mumo.co/pause": "true"}
    assert held["sys-api"] == {"okra.mumo.co/pause": "true"}
    ready = {("web", "v2"): AppsOn(True)}
    p = plan(dataclasses.replace(o, argocd=ready))
    assert all(c["metadata"]["annotations"] == {} for c in p.cells)


def test_the_system_cells_pause_annotation_holds_every_application() -> None:
    w = rolled_out([app("web", "web", 50), app("api", "api", 100)])
    w.paused = True
    w.run(10)
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    w.paused = False
    w.run(10)
    assert w.weights("web") == {"sys-web-web-1-v2": 50, "sys-web-web-2-v2": 50}


def job(name: str) -> dict[str, Any]:
    return {"name": name, "job": {"template": {"spec": {"image": "busybox", "command": ["true"]}}}}


def test_a_failed_precheck_with_rollback_says_it_waits_then_that_application_goes_back() -> None:
    web = app("web", "web", 50, prechecks=[job("run-test")])
    web["failurePolicy"] = {"type": "Rollback", "delaySeconds": 3}
    w = rolled_out([web, app("api", "api", 100)])
    w.children["web"].job_outcome = lambda name: ("Failed", "exit code 1")
    api = [*V2[:2], cluster("api-v2", "api")]
    w.up("api-v2", "api")
    w.spec = system(api, [web, app("api", "api", 100)])
    w.run(15)
    said = [
        a.message
        for p in w.history
        for a in p.status.applications or []
        if a.name == "web" and a.phase == "PrecheckFailed"
    ]
    assert said
    assert "precheck run-test failed" in said[0]
    assert "Waiting 3 seconds before starting a rollback" in said[0]
    # no traffic ever moved to the new pair, and the version is blocked: web stays on v1
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    assert "v2" in w.children["web"].blocked
    assert w.app("api").phase == "Synced"
    assert w.weights("api") == {"sys-api-api-v2": 100}
    assert w.status.phase == "Failed"


def test_a_failed_precheck_with_stop_stays_and_blocks_nothing() -> None:
    web = app("web", "web", 50, prechecks=[job("run-test")])
    web["failurePolicy"] = {"type": "Stop"}
    w = rolled_out([web])
    w.children["web"].job_outcome = lambda name: ("Failed", "exit code 1")
    w.run(15)
    assert w.app("web").phase == "PrecheckFailed"
    assert "failurePolicy Stop" in w.app("web").message
    assert not w.children["web"].blocked
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}


def test_target_groups_from_the_clusters_target_group_bindings() -> None:
    web = app("web", "web", 50)
    web["alb"]["forwardConfig"]["targetGroup"] = {"targetgroupBindingSelector": "svc=web"}
    w = SystemWorld(system(V1[:2], [web]))
    w.tick()
    assert "TargetGroupBindings of cluster web-1-v1 are not read yet" in w.app("web").message
    for n in ("web-1-v1", "web-2-v1"):
        w.eks[n] = dataclasses.replace(
            w.eks[n],
            bindings=(({"svc": "web"}, tg_arn(f"tgb-{n}")), ({"svc": "api"}, tg_arn("other"))),
        )
    w.run(6)
    assert w.weights("web") == {"sys-web-web-1-v1": 50, "sys-web-web-2-v1": 50}
    assert {t["spec"]["arn"] for t in w.objects["tgs"]} == {
        tg_arn("tgb-web-1-v1"),
        tg_arn("tgb-web-2-v1"),
    }
    two = (({"svc": "web"}, tg_arn("a")), ({"svc": "web"}, tg_arn("b")))
    o = dataclasses.replace(
        w.observed(),
        spec=system([*V1[:2], cluster("web-3", "web")], [web]),
        clusters={**w.eks, "web-3": ClusterSeen("ACTIVE", {"role": "web"}, True, bindings=two)},
    )
    web_st = next(a for a in plan(o).status.applications or [] if a.name == "web")
    assert "selected by 'svc=web' name 2 target groups" in web_st.message


def test_pausing_the_system_mid_walk_holds_the_application_that_moved() -> None:
    w = rolled_out([app("web", "web", 25), app("api", "api", 100)])
    for _ in range(30):
        w.tick()
        if w.children["web"].status.canary_weight == 25:
            break
    w.paused = True
    w.run(10)
    assert sum(v for k, v in w.weights("web").items() if "v2" in k) == 25
    assert all(c["metadata"]["annotations"].get("okra.mumo.co/pause") for c in w.objects["cells"])


def settles(w: SystemWorld, ticks: int = 40, idle: int = 20) -> SystemCellStatus:
    """Run `w` until its status stops changing, then `idle` ticks more: the status (the
    system's and each application Cell's) stays exactly as it was and no Event is said.
    A status that changes on every pass is rewritten on every reconcile, without end."""
    w.run(ticks)
    settled = w.status.model_copy(deep=True)
    children = {n: c.status.model_copy(deep=True) for n, c in w.children.items()}
    w.history.clear()
    w.run(idle)
    assert w.status == settled, (settled, w.status)
    assert {n: c.status for n, c in w.children.items()} == children
    assert w.events() == []
    return settled


def ends_with_web_failing(policy: dict[str, Any], precheck: bool = False) -> SystemWorld:
    web = app("web", "web", 50, checks=not precheck, failurePolicy=policy)
    if precheck:
        web["prechecks"] = [job("run-test")]
    w = rolled_out([web, app("api", "api", 100)])
    w.check_passes = lambda name: False
    if precheck:
        w.children["web"].job_outcome = lambda name: ("Failed", "exit code 1")
    return w


def test_every_end_a_system_can_reach_is_still() -> None:
    """Completed, Reverted after a failed check, Stopped, and a failed precheck either way:
    once there, the plan returns the status it was given (a fixed point)."""
    ends = {
        "Synced": rolled_out([app("web", "web", 50, checks=True), app("api", "api", 100)]),
        "Reverted": ends_with_web_failing({"type": "Rollback", "delaySeconds": 2}),
        "Stopped": ends_with_web_failing({"type": "Stop"}),
        "PrecheckFailed": ends_with_web_failing({"type": "Stop"}, precheck=True),
        "PrecheckFailed, then rolled back": ends_with_web_failing(
            {"type": "Rollback", "delaySeconds": 2}, precheck=True
        ),
    }
    for end, w in ends.items():
        st = settles(w)
        web = next(a for a in st.applications or [] if a.name == "web")
        assert web.phase == end.split(",")[0], (end, web)
        assert st.phase == ("Completed" if end == "Synced" else "Failed"), (end, st)
        # no Check left measuring (each would write its status every interval, forever)
        assert w.objects["checks"] == [], (end, w.objects["checks"])
        if end == "Reverted":
            assert web.message.count("rolled back") == 1, web.message
            assert (st.message or "").count("rolled back") == 1, st.message


def test_traffic_confirmation_is_per_application() -> None:
    """An application with `trafficConfirmation` has its Cell confirm each weight step by
    traffic (it asks for a reading once the window after the change has passed); one
    without walks on the weights alone."""
    confirm = {"window": "2s", "tolerance": 5, "minRequests": 10, "deadline": "10s"}
    w = rolled_out([app("web", "web", 50, trafficConfirmation=confirm), app("api", "api", 100)])
    cells = {c["metadata"]["name"]: c for c in w.objects["cells"]}
    assert cells["sys-web"]["spec"]["trafficConfirmation"] == confirm
    assert "trafficConfirmation" not in cells["sys-api"]["spec"]
    w.run(15)
    web = w.children["web"]
    assert any(p.needs_traffic is not None for p in web.history)  # no reading comes here
    assert web.status.traffic is not None
    assert web.status.traffic.verdict == "Waiting"
    assert w.weights("web") == {
        "sys-web-web-1-v1": 25,
        "sys-web-web-1-v2": 25,
        "sys-web-web-2-v1": 25,
        "sys-web-web-2-v2": 25,
    }  # held at the first step: it is never confirmed without traffic
    assert not any(p.needs_traffic is not None for p in w.children["api"].history)


def test_the_systems_notification_subscriptions_go_onto_every_application_cell() -> None:
    w = rolled_out([app("web", "web", 50), app("api", "api", 100)])
    subs = {"notifications.okra.mumo.co/subscribe.on-rollout-failed.team": "#deploys"}
    o = dataclasses.replace(w.observed(), subscriptions=subs, paused=True)
    notes = {c["metadata"]["name"]: c["metadata"]["annotations"] for c in plan(o).cells}
    held = {**subs, "okra.mumo.co/pause": "true"}
    assert notes == {"sys-web": held, "sys-api": held}
    o = dataclasses.replace(o, subscriptions={}, paused=False)
    assert all(c["metadata"]["annotations"] == {} for c in plan(o).cells)


def test_an_application_is_synced_only_once_its_cell_shows_its_weights() -> None:
    """A first rollout: the Cell writes the weights of v1, AWS takes them a tick later. Until
    the Cell says so (Healthy), its application is Syncing and the system is not Completed
    (judged against the Cell's status the system's tick read)."""
    w = SystemWorld(system(V1, [app("web", "web", 10), app("api", "api", 100)]))
    seen = []
    for _ in range(12):
        read = {n: c.status.health for n, c in w.children.items()}
        w.tick()
        for a in w.status.applications or []:
            seen.append((a.name, a.phase, read.get(a.name)))
            if a.phase == "Synced":
                assert read.get(a.name) == "Healthy", seen
        if w.status.phase == "Completed":
            assert set(read.values()) == {"Healthy"}, seen
    assert w.status.phase == "Completed", seen
    assert ("web", "Syncing", "Progressing") in seen, seen


def test_a_new_set_not_looked_up_in_eks_yet_is_waited_for_not_failed() -> None:
    """spec.clusters changed, the new clusters' EKS tags not read yet: the applications that
    select by EKS tags select none of them *yet*; the system waits (Pending), never Failed,
    and moves once EKS has answered."""
    apps = [app("web", "web", 50), app("api", "api", 100)]
    w = SystemWorld(system(V1, apps))
    w.run(12)
    assert w.status.phase == "Completed"
    fresh = [c for c in V2 if c["name"] not in w.eks]
    w.spec = system([c for c in V2 if c["name"] in w.eks] + fresh, apps)
    for c in V2:  # api-v1 stays; the web pair is not looked up yet
        if c in fresh:
            assert c["name"] not in w.eks
    for _ in range(3):
        st = w.tick().status
        assert st.phase == "Pending", st
        phases = {a.name: a.phase for a in st.applications or []}
        assert "Error" not in phases.values(), st
    assert not [e for e in w.events() if "selects none" in e], w.events()
    for c in fresh:
        w.up(c["name"], c["labels"]["role"])
    w.run(20)
    assert w.status.phase == "Completed", w.status
    assert w.weights("web") == {"sys-web-web-1-v2": 50, "sys-web-web-2-v2": 50}
