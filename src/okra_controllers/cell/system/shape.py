"""Which of the two Cell controllers a Cell is for. A system Cell and an application's Cell
share the `Cell` kind: one with `spec.clusters` or `spec.applications` is a system Cell (the
CRD's rules let a Cell be one or the other, never both), the system Cell controller's; any
other is the Cell controller's.

`IsSystemCell` and `IsApplicationCell` are the predicates each controller's `for_(CELL)`
takes, so that neither queues the other's Cells. A Cell's spec may be edited from one shape
to the other: on an update each passes when the old or the new object is its shape, so the
controller that now owns the Cell reconciles it and the one that owned it sees it once more
and lets it go (each reconcile still checks the shape it reads: a Request can also come from
a watch of another kind, or have been queued before the edit).
"""

from __future__ import annotations

from typing import Any

from okra_runtime.predicates import Predicate

Obj = dict[str, Any]


def is_system(cell: Obj) -> bool:
    """A system Cell (`spec.clusters`, `spec.applications`), not an application's."""
    spec = cell.get("spec") or {}
    return "clusters" in spec or "applications" in spec


class IsSystemCell(Predicate):
    """System Cells only; on an update, also one that was a system Cell before the edit."""

    def create(self, obj: Obj) -> bool:
        return is_system(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return is_system(new) or is_system(old)

    def delete(self, obj: Obj) -> bool:
        return is_system(obj)


class IsApplicationCell(Predicate):
    """Application Cells only; on an update, also one that was one before the edit."""

    def create(self, obj: Obj) -> bool:
        return not is_system(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return not is_system(new) or not is_system(old)

    def delete(self, obj: Obj) -> bool:
        return not is_system(obj)
