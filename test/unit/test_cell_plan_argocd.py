"""Argo CD cluster Secret strategies in the Cell plan (seed 002), through test_cell_plan's
simulated world plus a simulated Argo CD: a cluster Secret with the app labels gets an
Application a tick later (OutOfSync/Missing), which is Synced and Healthy the tick after;
a Secret without them loses its Application a tick later.

CreateBeforeDelete: new clusters labelled → Applications Synced/Healthy → (prechecks →)
traffic → (postchecks →) old clusters unlabelled. DeleteBeforeCreate (no load balancer):
old clusters unlabelled → their Applications gone → new clusters labelled → Synced/Healthy
→ Completed."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from okra_controllers.api.v1alpha1.cell import CellSpec
from okra_controllers.cell.argocd import ClusterView, observe_clusters
from okra_controllers.cell.plan import Plan
from okra_controllers.cell.versions import Grouped, group_target_groups
from unit.test_cell_plan import LABEL, World, spec

APP_LABELS = {"myservice-role": "web"}


def argocd(strategy: str = "CreateBeforeDelete", appset: str | None = "web") -> dict[str, Any]:
    out: dict[str, Any] = {
        "clusterSecret": {"selector": {"matchLabels": {"role": "web"}}, "labels": APP_LABELS},
        "updateStrategy": {"type": strategy},
    }
    if appset:
        out["applicationSet"] = {"name": appset}
    return out


def background_jobs(strategy: str = "DeleteBeforeCreate", **kw: Any) -> CellSpec:
    """A Cell with no load balancer (seed 002's `backgroundjobs`)."""
    return CellSpec.model_validate({"argocd": argocd(strategy), **kw})


@dataclass
class ArgoWorld(World):
    secrets: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> labels
    apps: dict[str, tuple[str, str, str]] = field(
        default_factory=dict
    )  # app -> (secret, sync, health)
    served: bool = True
    log: list[str] = field(default_factory=list)  # what happened, in order
    broken: set[str] = field(default_factory=set)  # clusters whose app never turns Healthy

    def add_cluster(self, name: str, version: str, labelled: bool = False) -> None:
        self.secrets[name] = {
            "argocd.argoproj.io/secret-type": "cluster",
            "role": "web",
            LABEL: version,
            **(APP_LABELS if labelled else {}),
        }
        if labelled:
            self.apps[f"web-{name}"] = (name, "Synced", "Healthy")

    def objects(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        secrets = [
            {
                "metadata": {"name": n, "labels": dict(labels)},
                "data": {
                    "name": base64.b64encode(n.encode()).decode(),
                    "server": base64.b64encode(f"https://{n}.example".encode()).decode(),
                },
            }
            for n, labels in self.secrets.items()
        ]
        apps = [
            {
                "metadata": {
                    "name": a,
                    "ownerReferences": [{"kind": "ApplicationSet", "name": "web"}],
                },
                "spec": {"destination": {"server": f"https://{s}.example"}},
                "status": {"sync": {"status": sync}, "health": {"status": health}},
            }
            for a, (s, sync, health) in self.apps.items()
        ]
        return secrets, apps

    def clusters(self) -> ClusterView | None:
        if self.spec.argocd is None:
            return None
        secrets, apps = self.objects()
        return observe_clusters(self.spec.argocd, [LABEL], secrets, apps if self.served else None)

    def grouped(self) -> Grouped:
        if self.spec.ingress is not None:
            return super().grouped()
        return group_target_groups(((n, "", labels) for n, labels in self.secrets.items()), [LABEL])

    def acted_more(self, p: Plan) -> None:
        # Argo CD acts on what it saw last tick (the ApplicationSet and app controllers lag).
        for a, (s, sync, _) in list(self.apps.items()):
            if not all(self.secrets[s].get(k) == v for k, v in APP_LABELS.items()):
                del self.apps[a]
                self.log.append(f"app gone {s}")
            elif sync != "Synced" and s not in self.broken:
                self.apps[a] = (s, "Synced", "Healthy")
                self.log.append(f"app healthy {s}")
        for s, labels in self.secrets.items():
            if all(labels.get(k) == v for k, v in APP_LABELS.items()) and not any(
                x == s for x, _, _ in self.apps.values()
            ):
                self.apps[f"web-{s}"] = (s, "OutOfSync", "Missing")
                self.log.append(f"app created {s}")
        for name in p.unlabel:
            for k in APP_LABELS:
                self.secrets[name].pop(k, None)
            self.log.append(f"unlabel {name}")
        for name in p.label:
            self.secrets[name].update(APP_LABELS)
            self.log.append(f"label {name}")
        weights = {f.version: f.weight for f in p.forward or () if f.weight}
        if p.forward is not None and f"traffic {weights}" not in self.log[-1:]:
            self.log.append(f"traffic {weights}")

    def labelled(self) -> list[str]:
        return sorted(
            n for n, labels in self.secrets.items() if labels.get("myservice-role") == "web"
        )

    def first(self, entry: str) -> int:
        return next(i for i, e in enumerate(self.log) if e.startswith(entry))


def alb_world(steps: list[Any], **kw: Any) -> ArgoWorld:
    w = ArgoWorld(spec(steps, argocd=argocd(), **kw))
    w.add_cluster("c1-v1", "v1", labelled=True)
    w.add_tg("a-v1", "v1")
    w.run(8)
    assert w.weights() == {"a-v1": 100}
    w.jobs.clear()  # v1's own checks
    return w


def test_create_before_delete_labels_waits_for_argo_cd_then_moves_traffic_then_unlabels() -> None:
    w = alb_world([{"setWeight": 50}])
    w.add_cluster("c1-v2", "v2")
    w.add_cluster("c2-v2", "v2")
    w.add_tg("a-v2", "v2")
    w.run(30)
    assert w.weights() == {"a-v2": 100}
    assert w.labelled() == ["c1-v2", "c2-v2"]
    assert w.apps.keys() == {"web-c1-v2", "web-c2-v2"}
    # In order: new clusters labelled, their apps Synced/Healthy, then traffic, then unlabel.
    labelled = w.first("label c2-v2")
    healthy = max(w.first("app healthy c1-v2"), w.first("app healthy c2-v2"))
    traffic = w.first("traffic {'v1': 50, 'v2': 50}")
    unlabel = w.first("unlabel c1-v1")
    assert labelled < healthy < traffic < unlabel < w.first("app gone c1-v1")
    assert w.status.stable_version == "v2"
    held = [p for p in w.history if "waiting for Argo CD" in (p.status.message or "")]
    assert held
    assert "Application web-c1-v2 on c1-v2 (v2) is OutOfSync/Missing" in "".join(
        p.status.message or "" for p in held
    )
    assert all(p.status.phase == "Init" for p in held)


def test_the_gate_holds_until_every_new_cluster_is_healthy_and_prechecks_wait_for_it() -> None:
    pre = {"name": "run-test", "job": {"template": {"spec": {"image": "x"}}}}
    w = alb_world([{"setWeight": 50}], prechecks=[pre])
    w.broken.add("c2-v2")
    w.add_cluster("c1-v2", "v2")
    w.add_cluster("c2-v2", "v2")
    w.add_tg("a-v2", "v2")
    w.run(20)
    assert w.weights() == {"a-v1": 100}
    assert not w.jobs  # no precheck against clusters Argo CD has not deployed to
    assert "Application web-c2-v2 on c2-v2 (v2) is OutOfSync/Missing" in (w.status.message or "")
    assert w.labelled() == ["c1-v1", "c1-v2", "c2-v2"]
    w.broken.clear()
    w.run(20)
    assert len(w.jobs) == 1
    assert w.weights() == {"a-v2": 100}
    assert w.labelled() == ["c1-v2", "c2-v2"]


def test_old_clusters_keep_the_app_until_postchecks_pass_and_a_failure_gives_it_back() -> None:
    post = {"name": "smoke", "job": {"template": {"spec": {"image": "x"}}}}
    w = alb_world([{"setWeight": 50}], postchecks=[post], rollbackDelaySeconds=3)
    w.job_outcome = lambda name: ("Failed", "exit code 1")
    w.add_cluster("c1-v2", "v2")
    w.add_tg("a-v2", "v2")
    w.run(40)
    # v2 served 100% while the postcheck ran, v1's clusters kept the app all along.
    assert any(e == "traffic {'v2': 100}" for e in w.log)
    assert not any(e.startswith("unlabel c1-v1") for e in w.log)
    assert w.weights() == {"a-v1": 100}
    assert "v2" in w.blocked
    assert w.labelled() == ["c1-v1"]  # the blocked version's clusters lose the app
    assert "app gone c1-v2" in w.log


def test_a_new_version_without_cluster_secrets_is_held() -> None:
    w = alb_world([{"setWeight": 50}])
    w.add_tg("a-v2", "v2")
    w.run(5)
    assert w.weights() == {"a-v1": 100}
    assert "no Argo CD cluster Secret of version v2" in (w.status.message or "")


def test_without_argo_cd_installed_a_cell_with_spec_argocd_says_so() -> None:
    w = alb_world([{"setWeight": 50}])
    w.served = False
    w.add_cluster("c1-v2", "v2")
    w.add_tg("a-v2", "v2")
    w.run(3)
    assert w.status.health == "Degraded"
    assert "Application kind (argoproj.io/v1alpha1) is not served" in (w.status.message or "")
    assert w.weights() == {"a-v1": 100}


def test_a_cell_without_spec_argocd_needs_no_argo_cd() -> None:
    w = ArgoWorld(spec([{"setWeight": 50}]))
    w.served = False
    w.add_tg("a-v1", "v1")
    w.run(3)
    w.add_tg("a-v2", "v2")
    w.run(10)
    assert w.weights() == {"a-v2": 100}


def no_lb_world(strategy: str = "DeleteBeforeCreate", **kw: Any) -> ArgoWorld:
    w = ArgoWorld(background_jobs(strategy, **kw))
    w.add_cluster("c1-v1", "v1")
    w.add_cluster("c2-v1", "v1")
    w.run(6)
    assert w.labelled() == ["c1-v1", "c2-v1"]
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v1")
    w.jobs.clear()  # v1's own checks
    return w


def test_delete_before_create_removes_the_old_app_first() -> None:
    w = no_lb_world()
    w.log.clear()
    w.add_cluster("c1-v2", "v2")
    w.add_cluster("c2-v2", "v2")
    w.run(20)
    assert w.labelled() == ["c1-v2", "c2-v2"]
    assert (w.status.health, w.status.stable_version) == ("Healthy", "v2")
    assert w.status.phase == "Completed"
    gone = max(w.first("app gone c1-v1"), w.first("app gone c2-v1"))
    assert w.first("unlabel c1-v1") < gone < w.first("label c1-v2")
    assert w.first("label c1-v2") < w.first("app healthy c1-v2")
    messages = [p.status.message or "" for p in w.history]
    assert any("removing the app from the clusters of v1 first" in m for m in messages)
    assert any("waiting for Argo CD to deploy onto the clusters of v2" in m for m in messages)


def test_create_before_delete_with_no_load_balancer() -> None:
    w = no_lb_world("CreateBeforeDelete")
    w.log.clear()
    w.add_cluster("c1-v2", "v2")
    w.run(20)
    assert w.labelled() == ["c1-v2"]
    assert w.first("app healthy c1-v2") < w.first("unlabel c1-v1")


def test_no_load_balancer_prechecks_hold_and_a_failed_postcheck_waits_then_gives_it_back() -> None:
    pre = {"name": "run-test", "job": {"template": {"spec": {"image": "x"}}}}
    post = {"name": "smoke", "job": {"template": {"spec": {"image": "x"}}}}
    w = no_lb_world(prechecks=[pre], postchecks=[post], rollbackDelaySeconds=5)
    w.log.clear()
    w.job_outcome = lambda name: ("Failed", "exit 1") if "smoke" in name else ("Succeeded", "")
    w.add_cluster("c1-v2", "v2")
    w.run(12)
    waiting = [
        p
        for p in w.history
        if "Waiting 5 seconds before starting a rollback" in (p.status.message or "")
    ]
    assert waiting
    assert "postcheck smoke failed" in (waiting[0].status.message or "")
    w.run(20)
    assert "v2" in w.blocked
    assert w.labelled() == ["c1-v1", "c2-v1"]
    assert (w.status.stable_version, w.status.phase) == ("v1", "Error")


def test_delete_before_create_with_a_load_balancer_is_refused_by_okra_lint() -> None:
    """The CRD's CEL rule, as `okra lint` evaluates it (the API server's refusal is shown
    in the e2e)."""
    import yaml

    from okra_controllers.cli.lint import lint_texts

    def cell(strategy: str, ingress: bool = True) -> str:
        s = spec([], argocd=argocd(strategy)).model_dump(by_alias=True, mode="json")
        if not ingress:
            s.pop("ingress")
        doc = {"apiVersion": "okra.mumo.co/v1alpha1", "kind": "Cell"}
        return yaml.safe_dump({**doc, "metadata": {"name": "jobs"}, "spec": s})

    refused = lint_texts([("cell.yaml", cell("DeleteBeforeCreate"))]).problems
    assert [p.message for p in refused if "DeleteBeforeCreate" in p.message] == [
        "argocd.updateStrategy.type DeleteBeforeCreate is for apps with no load balancer "
        "(traffic would reach clusters with no app): remove spec.ingress, or use "
        "CreateBeforeDelete"
    ]
    assert lint_texts([("cell.yaml", cell("CreateBeforeDelete"))]).problems == []
    assert lint_texts([("cell.yaml", cell("DeleteBeforeCreate", ingress=False))]).problems == []
    with pytest.raises(ValidationError):
        CellSpec.model_validate({"argocd": {"clusterSecret": {"labels": {}}}})


@settings(max_examples=60, deadline=None)
@given(
    strategy=st.sampled_from(["CreateBeforeDelete", "DeleteBeforeCreate"]),
    old=st.integers(1, 3),
    new=st.integers(1, 3),
    broken_for=st.integers(0, 6),
)
def test_no_load_balancer_rollouts_always_finish_in_strategy_order(
    strategy: str, old: int, new: int, broken_for: int
) -> None:
    w = ArgoWorld(background_jobs(strategy))
    for i in range(old):
        w.add_cluster(f"c{i}-v1", "v1")
    w.run(8)
    w.log.clear()
    for i in range(new):
        w.add_cluster(f"c{i}-v2", "v2")
    w.broken.add("c0-v2")
    w.run(broken_for)
    w.broken.clear()
    w.run(30)
    assert w.labelled() == sorted(f"c{i}-v2" for i in range(new))
    assert (w.status.stable_version, w.status.health) == ("v2", "Healthy")
    labels = [i for i, e in enumerate(w.log) if e.startswith("label ")]
    unlabels = [i for i, e in enumerate(w.log) if e.startswith("unlabel ")]
    gone = [i for i, e in enumerate(w.log) if e.startswith("app gone ")]
    healthy_new = [i for i, e in enumerate(w.log) if e.startswith("app healthy c") and "v2" in e]
    if strategy == "DeleteBeforeCreate":
        # Never both versions at once: every old app gone before any new label.
        assert max(gone) < min(labels)
    else:
        # Never no version: every new app healthy before any old label goes.
        assert max(healthy_new) < min(unlabels)
