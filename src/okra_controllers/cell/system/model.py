"""What the system plan reads (`SystemObserved`) and returns (`SystemPlan`): plain data, so
the plan is a pure function the tests can drive through every phase."""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from okra_controllers.api.v1alpha1.cell import CellSpec, RolloutCellStatus, SystemCellStatus
from okra_controllers.cell.plan.model import Event

Obj = dict[str, Any]


@dataclass(frozen=True)
class ClusterSeen:
    """One `spec.clusters` entry as okra found it."""

    eks_status: str = ""  # EKS's status ("ACTIVE", "CREATING", ...); "" not in EKS
    tags: Mapping[str, str] = field(default_factory=dict)
    reachable: bool = False  # its API server answered with the EKS credentials
    problem: str = ""  # why it is not reachable (or what EKS said)
    secret: str | None = None  # its Argo CD cluster Secret in the Cell's namespace
    server: str = ""  # the Secret's server URL
    bindings: tuple[tuple[Mapping[str, str], str], ...] | None = None
    """Its TargetGroupBindings' (labels, target group ARN), read when an application selects
    its target group by them; None: not read."""


@dataclass(frozen=True)
class ChildSeen:
    """An application's Cell, as the API server holds it."""

    status: RolloutCellStatus
    generation: int = 0
    annotations: Mapping[str, str] = field(default_factory=dict)
    spec: Obj | None = None  # None: not known (its last accepted spec, as held)
    resource_version: str = ""


@dataclass(frozen=True)
class CheckSeen:
    """A Check the system Cell made: the hash it was written with and what it last said."""

    hash: str = ""
    observed_hash: str = ""
    last_passed: bool | None = None
    last_run_time: datetime.datetime | None = None
    message: str = ""


@dataclass(frozen=True)
class AppsOn:
    """Argo CD's view of an application on a version's clusters: `ready` when every one of
    them has the application Synced and Healthy; otherwise what is waited for."""

    ready: bool
    waiting: str = ""


@dataclass(frozen=True)
class SystemObserved:
    name: str
    namespace: str
    generation: int
    spec: CellSpec
    status: SystemCellStatus
    now: datetime.datetime
    clusters: Mapping[str, ClusterSeen] = field(default_factory=dict)  # by entry name
    children: Mapping[str, ChildSeen] = field(default_factory=dict)  # by application
    checks: Mapping[str, CheckSeen] = field(default_factory=dict)  # by Check name
    secrets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Argo CD cluster Secrets of the namespace: name -> labels."""
    argocd: Mapping[tuple[str, str], AppsOn] = field(default_factory=dict)
    """(application, version) -> Argo CD's Applications on that version's clusters."""
    paused: bool = False  # the system Cell's okra.mumo.co/pause annotation
    subscriptions: Mapping[str, str] = field(default_factory=dict)
    """The system Cell's notification subscriptions (annotations), which its application
    Cells carry too: each application's Cell says which application changed phase."""


@dataclass
class SystemPlan:
    status: SystemCellStatus
    cells: list[Obj] = field(default_factory=list)  # the applications' Cells
    target_groups: list[Obj] = field(default_factory=list)
    checks: list[Obj] = field(default_factory=list)
    secret_labels: dict[str, dict[str, str | None]] = field(default_factory=dict)
    """Argo CD cluster Secret -> the labels to set (None: remove)."""
    keep: set[tuple[str, str]] = field(default_factory=set)
    """(kind, name) of objects it made that stay as they are (not applied, not pruned)."""
    events: list[Event] = field(default_factory=list)
    requeue_after: float | None = None
