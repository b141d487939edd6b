"""The ProgressiveRollout's record of its rollouts (`status.history`): a pure function of
the status before and after a reconcile, applied in the same status write (the controller,
beside the notifications' outbox), as the Cell's record is (`cell.history`).

One record per revision rolled out: when it began and ended, how it ended, and its stages
with their clusters as the status last had them during that revision. The newest record
changes only when the status's stages, phase or message do, so an idle rollout is never
written for it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from okra_controllers.actors import Credit
from okra_controllers.api.v1alpha1.progressiverollout import (
    MAX_RECORDED_ACTIONS,
    ProgressiveRolloutStatus,
    RecordedAction,
    RevisionRecord,
    WaveOutcome,
)
from okra_controllers.settings import ROLLOUT_HISTORY

ENDS: Mapping[str, WaveOutcome] = {
    "Completed": "Completed",
    "Failed": "Failed",
    "RolledBack": "RolledBack",
}
"""The phases that end a revision's rollout, and how (an aborted one: Aborted, once its
rollback, if any, is done)."""


def recorded(
    before: ProgressiveRolloutStatus,
    after: ProgressiveRolloutStatus,
    now: datetime.datetime,
    limit: int = ROLLOUT_HISTORY,
    credit: Credit | None = None,
) -> list[RevisionRecord] | None:
    """`after.history`: `before`'s with what this reconcile changed, the newest `limit`
    revisions (`credit`: who made the requests it acted on; None: they are not recorded).
    None while nothing has been rolled out."""
    history = list(before.history or [])
    if history:  # only the newest record can change: copy it, share the others
        history[0] = history[0].model_copy(deep=True)
    latest = history[0] if history else None
    if after.revision and _begins(latest, after):
        if latest is not None and latest.outcome is None:
            _end(latest, now, "Superseded", f"superseded by revision {after.revision}")
        again = latest is not None and latest.started_at == after.started
        started = now if again or after.started is None else after.started
        latest = RevisionRecord(revision=after.revision, started_at=started)
        history.insert(0, latest)
    if latest is not None and latest.outcome is None and latest.revision == after.revision:
        stages = [s.model_copy(deep=True) for s in after.stages or []]
        if stages != latest.stages:
            latest.stages = stages
        if credit is not None:
            _acted(latest, before, after, now, credit)
        if after.phase in ENDS:
            outcome = "Aborted" if after.aborted else ENDS[after.phase]
            _end(latest, after.finished or now, outcome, after.message)
    kept = history[: max(limit, 0)]
    return kept or None


ACTIONS = ("promote", "abort", "retry")


def _acted(
    r: RevisionRecord,
    before: ProgressiveRolloutStatus,
    after: ProgressiveRolloutStatus,
    now: datetime.datetime,
    credit: Credit,
) -> None:
    """The requests (annotations) this reconcile acted on: each `status.handled` token that
    changed, with who wrote it."""
    was, now_handled = before.handled, after.handled
    for action in ACTIONS:
        token = getattr(now_handled, action) if now_handled is not None else None
        if token is None or token == (getattr(was, action) if was is not None else None):
            continue
        done = RecordedAction.model_validate(
            {"time": now, "action": action, "user": credit.user(action, token)}
        )
        r.actions = [*(r.actions or []), done][-MAX_RECORDED_ACTIONS:]


def _begins(latest: RevisionRecord | None, after: ProgressiveRolloutStatus) -> bool:
    """Whether `after` is a rollout the newest record is not: another revision, or the same
    one under way again after its record ended (`okra retry`, `okra resume`)."""
    if latest is None or latest.revision != after.revision:
        return True
    return latest.outcome is not None and after.phase not in (*ENDS, "", "Pending")


def _end(
    r: RevisionRecord, when: datetime.datetime, outcome: WaveOutcome, message: str | None
) -> None:
    r.ended_at, r.outcome, r.message = when, outcome, message
