"""Freeze and ClusterFreeze: "no releases now", for the Cells and ProgressiveRollouts they select.

A Freeze is either manual (no `windows`: it applies from `start`, or at once, until `until`,
or until it is deleted — `okra freeze` / `okra unfreeze`) or recurring (`windows`: cron
schedules in a time zone, each opening a window of `duration`; `start` and `until` then
bound the windows). It applies to the Cells and ProgressiveRollouts of its namespace whose
labels match `selector` (empty: every one). While one applies, they hold at their next step
boundary: no new step starts and no new rollout begins; rollbacks and aborts proceed.

A ClusterFreeze is the same for a fleet: cluster-scoped, it applies to the Cells and
ProgressiveRollouts its `selector` picks in every namespace its `namespaceSelector` picks.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from typing import ClassVar

from croniter import croniter
from pydantic import Field, field_validator, model_validator

from okra_controllers.api.v1alpha1.analysis import DURATION_PATTERN
from okra_controllers.api.v1alpha1.common import (
    ApiModel,
    OkraObject,
    okra_crd,
)
from okra_controllers.api.v1alpha1.progressiverollout import SelectorRequirement
from okra_runtime.crdgen import CRDInfo, PrinterColumn

CRON_PATTERN = r"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|\S+( +\S+){4})$"
"""Five cron fields (minute hour day-of-month month day-of-week) or a `@daily`-style macro."""


class FreezeWindow(ApiModel):
    """A recurring window: it opens at each time `schedule` names, on the wall clock of
    `timeZone`, and stays open for `duration`, counted on that wall clock too (a window
    from 18:00 Friday for 62h ends at 08:00 Monday, also over a weekend the clocks change).
    A start the clocks skip (the hour lost in spring) opens the window as much later as the
    clocks moved; a time the clocks pass twice (autumn) opens it the first time and, as an
    end, closes it the second time."""

    schedule: str = Field(pattern=CRON_PATTERN, max_length=256)
    """Cron: minute hour day-of-month month day-of-week (`0 18 * * 5`: Fridays at 18:00)."""
    duration: str = Field(pattern=DURATION_PATTERN, max_length=64)
    """How long each window stays open (`30m`, `62h`), more than 0."""
    time_zone: str = Field(default="UTC", min_length=1, max_length=64)
    """An IANA time zone (`Europe/Paris`, `America/New_York`); UTC when left out."""

    @field_validator("schedule")
    @classmethod
    def _cron(cls, v: str) -> str:
        if not croniter.is_valid(v) or len(v.split()) not in (1, 5):
            raise ValueError(f"{v!r} is not a cron schedule of five fields")
        return v

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, v: str) -> str:
        try:
            zoneinfo.ZoneInfo(v)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as e:
            raise ValueError(f"{v!r} is not a known time zone (IANA, e.g. Europe/Paris)") from e
        return v

    @field_validator("duration")
    @classmethod
    def _positive(cls, v: str) -> str:
        if not re.search(r"[1-9]", v):
            raise ValueError(f"{v!r}: a window lasts more than 0")
        return v


class FreezeSelector(ApiModel):
    """A label selector over Cells and ProgressiveRollouts (empty selects every one)."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[SelectorRequirement] | None = None


class FreezeSpec(ApiModel):
    reason: str = Field(min_length=1, max_length=1024)
    """Why: said in the status and Events of every rollout the freeze holds."""
    author: str = Field(default="", max_length=256)
    """Who froze (`okra freeze` writes the user it runs as)."""
    selector: FreezeSelector = Field(default_factory=FreezeSelector)
    """The Cells and ProgressiveRollouts of this namespace the freeze holds (empty: all)."""
    windows: list[FreezeWindow] = Field(default_factory=list, max_length=16)
    """Recurring windows; none: a manual freeze, which applies from `start` to `until`."""
    start: datetime.datetime | None = None
    """Not before this time (a manual freeze: from then; recurring: windows from then)."""
    until: datetime.datetime | None = None
    """Not from this time on; a manual freeze with none applies until it is deleted."""

    @model_validator(mode="after")
    def _order(self) -> FreezeSpec:
        if self.start is not None and self.until is not None and self.start >= self.until:
            raise ValueError("spec.until must be after spec.start")
        return self


COLUMNS = (
    PrinterColumn("Reason", "string", ".spec.reason"),
    PrinterColumn("Author", "string", ".spec.author"),
    PrinterColumn("Until", "string", ".spec.until"),
    PrinterColumn("Windows", "string", ".spec.windows[*].schedule", priority=1),
)
"""`kubectl get freezes` and `kubectl get clusterfreezes`: the same columns."""


class Freeze(OkraObject):
    """A change freeze: manual or recurring windows, over selected Cells and
    ProgressiveRollouts of its namespace."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "Freeze",
        "freezes",
        *COLUMNS,
    )
    kind: str = "Freeze"
    spec: FreezeSpec


class NamespaceSelector(ApiModel):
    """A label selector over Namespaces (empty selects every namespace)."""

    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[SelectorRequirement] | None = None


class ClusterFreezeSpec(FreezeSpec):
    selector: FreezeSelector = Field(default_factory=FreezeSelector)
    """The Cells and ProgressiveRollouts the freeze holds in the namespaces it selects
    (empty: all)."""
    namespace_selector: NamespaceSelector = Field(default_factory=NamespaceSelector)
    """The namespaces whose labels match (empty: every namespace)."""


class ClusterFreeze(OkraObject):
    """A change freeze across namespaces: a Freeze for the Cells and ProgressiveRollouts of
    every namespace `namespaceSelector` picks (all when empty)."""

    __crd__: ClassVar[CRDInfo] = okra_crd(
        "ClusterFreeze",
        "clusterfreezes",
        *COLUMNS,
        scope="Cluster",
    )
    kind: str = "ClusterFreeze"
    spec: ClusterFreezeSpec


FREEZE_MODELS: tuple[type[ApiModel], ...] = (Freeze, ClusterFreeze)
