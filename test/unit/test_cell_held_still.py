"""A Cell held Degraded by a gate (its spec.argocd needs Argo CD, which is not installed)
stays still pass after pass: a condition's transition time moves only when its status
does, so an idle Degraded Cell, and a system over one, writes no status."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from okra_controllers.api.v1alpha1.cell import CellStatus, RolloutCellStatus
from okra_controllers.api.v1alpha1.common import Condition
from okra_controllers.cell.argocd import ClusterView
from okra_controllers.cell.plan import Plan
from okra_controllers.cell.plan.status import hold, set_phase
from okra_controllers.cell.system.names import version_key
from unit.test_cell_plan import T0, World, spec
from unit.test_cell_system_plan import V1, ChildWorld, SystemWorld, app, settles, system

ARGOCD: dict[str, Any] = {
    "clusterSecret": {"labels": {"myservice-role": "web"}},
    "updateStrategy": {"type": "CreateBeforeDelete"},
}


def no_argocd(w: World) -> ClusterView | None:
    """Argo CD not installed (no Application kind): the view a Cell with spec.argocd has."""
    return ClusterView((), (), served=False) if w.spec.argocd is not None else None


class NoArgoCD(World):
    """A Cell where Argo CD is not installed."""

    def clusters(self) -> ClusterView | None:
        return no_argocd(self)


class NoArgoCDChild(ChildWorld):
    """An application's Cell where Argo CD is not installed."""

    def clusters(self) -> ClusterView | None:
        return no_argocd(self)


def test_a_degraded_cell_keeps_its_conditions_transition_times_pass_after_pass() -> None:
    """A Cell on v1 whose spec.argocd needs Argo CD, which is not there: Degraded, and
    from then on every pass returns the status it was given."""
    w = NoArgoCD(spec([{"setWeight": 50}]))
    w.add_tg("web-v1", "v1")
    w.run(5)
    assert w.status.phase == "Completed"
    w.spec = spec(
        [{"setWeight": 50}],
        argocd={
            "clusterSecret": {"selector": {"matchLabels": {"a": "b"}}, "labels": {"app": "web"}}
        },
    )
    w.run(2)
    assert w.status.health == "Degraded", w.status
    before = w.status.model_copy(deep=True)
    w.run(10)
    assert w.status == before, (before.conditions, w.status.conditions)


def conditions(st: RolloutCellStatus) -> dict[str, tuple[str, datetime.datetime]]:
    return {c.type: (c.status, c.last_transition_time) for c in st.conditions or []}


def test_hold_moves_a_condition_s_transition_time_only_when_its_status_moves() -> None:
    """The phase's plan may flip a condition (Healthy True) that the hold then flips back
    (Degraded): the status the pass observed is what a transition is measured from."""
    w = World(spec([{"setWeight": 50}]))
    o = w.observed()
    since = T0 - datetime.timedelta(hours=1)
    observed_status = CellStatus(
        conditions=[
            Condition(
                type=t,
                status="True" if t == "Degraded" else "False",
                reason="Degraded",
                message="m",
                last_transition_time=since,
            )
            for t in ("Progressing", "Healthy", "Paused", "Degraded")
        ]
    )
    o = dataclasses.replace(o, status=observed_status)
    p = Plan(forward=None, status=observed_status.model_copy(deep=True))
    set_phase(p, o, "Healthy", "v1 serves 100%")  # what the phase alone would say
    held = hold(p, o, "Degraded", "spec.argocd needs Argo CD", None)
    assert conditions(held.status) == conditions(observed_status)
    # a condition whose status does move gets the pass's time
    healthy = hold(p, o, "Progressing", "waiting", None)
    assert conditions(healthy.status)["Progressing"] == ("True", o.now)
    assert conditions(healthy.status)["Healthy"] == ("False", since)


class SystemWithoutArgoCD(SystemWorld):
    """A system whose applications' Cells run where Argo CD is not installed."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for a in self.spec.applications or []:
            child = self.children[a.name] = NoArgoCDChild(self.spec)
            child.label = version_key("sys", a.name)


def test_a_system_whose_application_cell_is_degraded_is_still() -> None:
    """web's Cell held Degraded (its spec.argocd needs Argo CD, which is not installed):
    the system is Failed, and once there neither the system's status nor its application
    Cells' change (each pass would otherwise be a status write, without end)."""
    web = app("web", "web", 50, argocd=ARGOCD)
    w = SystemWithoutArgoCD(system(V1[:2], [web]))
    for n in ("web-1-v1", "web-2-v1"):
        w.eks[n] = dataclasses.replace(w.eks[n], secret=f"cluster-{n}")
    st = settles(w)
    assert st.phase == "Failed", st
    assert "spec.argocd needs Argo CD" in (st.message or ""), st.message
    assert w.children["web"].status.health == "Degraded"
