"""Deleting a rollout: which of okra's syncs to cancel, which to wait for, and when the
finalizer may go.

A sync okra wrote stays okra's until Argo CD has finished it: one Argo CD has not picked up
(`operation` carries okra's sync ID, `status.operationState` is of another operation) is
cancelled by removing the `operation`; one Argo CD is running (its `operationState` is of
okra's sync and Running or Terminating) is left to finish and waited for. The finalizer goes
only when the Applications, as the API server holds them, show neither: a cancel refused
(the Application changed in between) is planned again from a fresh read, never counted done.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from okra_controllers.progressiverollout.plan.model import App

RUNNING = ("Running", "Terminating")


@dataclass(frozen=True)
class Deletion:
    """What deleting the rollout still needs, by Application name (sorted)."""

    cancel: tuple[str, ...] = ()
    """okra's syncs Argo CD has not started: their `operation` is removed."""
    running: tuple[str, ...] = ()
    """okra's syncs Argo CD is running: left to finish, and waited for."""

    @property
    def done(self) -> bool:
        """Nothing of okra's is pending: the finalizer may go."""
        return not self.cancel and not self.running


def running(app: App) -> bool:
    """Argo CD has started okra's pending sync on `app` and not finished it."""
    return (
        app.pending_sync_id is not None
        and app.op_sync_id == app.pending_sync_id
        and app.op_phase in RUNNING
    )


def plan_deletion(apps: Iterable[App]) -> Deletion:
    """The syncs okra wrote that are still pending on `apps` (read from the API server)."""
    mine = sorted((a for a in apps if a.pending_sync_id is not None), key=lambda a: a.name)
    return Deletion(
        cancel=tuple(a.name for a in mine if not running(a)),
        running=tuple(a.name for a in mine if running(a)),
    )


def waiting_message(in_argocd: Iterable[str], refused: Iterable[str]) -> str:
    """What a deleted rollout still waits for, in one line ("" when nothing): the syncs
    Argo CD is running (`in_argocd`) and the cancels the API server refused (`refused`)."""
    parts = []
    if names := sorted(refused):
        parts.append(f"cancelling okra's pending sync on {', '.join(names)} (retrying)")
    if names := sorted(in_argocd):
        parts.append(f"okra's sync running in Argo CD on {', '.join(names)}")
    return "; ".join(parts)
