"""The Cell controller's report: the plan's Events (a run's messages added), and the
Cell's metrics from the status it wrote; none of its series once the Cell is gone."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from typing import Any

import structlog
from prometheus_client import Gauge

from okra_controllers.analysis.run_controller import with_run_messages
from okra_controllers.api.v1alpha1.cell import RolloutCellStatus
from okra_controllers.cell import traffic
from okra_controllers.cell.plan import Event, freeze_holds
from okra_controllers.freeze import watch as freezes
from okra_runtime.cache import Store
from okra_runtime.events import EventRecorder
from okra_runtime.metrics import REGISTRY

log = structlog.get_logger("okra.cell")

CANARY_WEIGHT = Gauge(
    "okra_cell_canary_weight",
    "Weight of the canary version (0-100)",
    ["namespace", "cell"],
    registry=REGISTRY,
)
STEP_INDEX = Gauge(
    "okra_cell_step_index", "Current canary step index", ["namespace", "cell"], registry=REGISTRY
)
CELL_INFO = Gauge(
    "okra_cell_info",
    "1 for each Cell, labelled with its phase (Init, Migrating, Completing, Completed, Error), "
    "its health (Progressing, Paused, Healthy, Degraded) and its stable and canary versions",
    ["namespace", "cell", "phase", "health", "stable", "canary"],
    registry=REGISTRY,
)
PROGRESS_DEADLINE_EXCEEDED = Gauge(
    "okra_cell_progress_deadline_exceeded",
    "1 while a Cell's rollout is past its progressDeadlineSeconds (condition Progressing=False,"
    " reason ProgressDeadlineExceeded), else 0",
    ["namespace", "cell"],
    registry=REGISTRY,
)
_INFO_LABELS: dict[tuple[str, str], tuple[str, ...]] = {}  # the series each Cell has now


def report_info(namespace: str, name: str, status: RolloutCellStatus | None) -> None:
    """One `okra_cell_info` series per Cell (none once it is deleted: `status` None)."""
    key = (namespace, name)
    old = _INFO_LABELS.pop(key, None)
    new = None
    if status is not None:
        new = (
            namespace,
            name,
            status.phase or "Pending",
            status.health or "Pending",
            status.stable_version or "",
            status.canary_version or "",
        )
    if old is not None and old != new:
        with contextlib.suppress(KeyError):
            CELL_INFO.remove(*old)
    if new is not None:
        CELL_INFO.labels(*new).set(1)
        _INFO_LABELS[key] = new
    else:
        for gauge in (CANARY_WEIGHT, STEP_INDEX, PROGRESS_DEADLINE_EXCEEDED):
            with contextlib.suppress(KeyError):
                gauge.remove(namespace, name)


def past_deadline(status: RolloutCellStatus) -> int:
    """1 when the status says the rollout is past its progress deadline."""
    return int(
        any(
            c.type == "Progressing"
            and c.status == "False"
            and c.reason == "ProgressDeadlineExceeded"
            for c in status.conditions or []
        )
    )


def report(namespace: str, name: str, status: RolloutCellStatus) -> None:
    """The Cell's series, from the status just written."""
    report_info(namespace, name, status)
    traffic.report(namespace, name, status)
    CANARY_WEIGHT.labels(namespace, name).set(status.canary_weight or 0)
    STEP_INDEX.labels(namespace, name).set(status.current_step_index or 0)
    PROGRESS_DEADLINE_EXCEEDED.labels(namespace, name).set(past_deadline(status))
    freezes.report_held("Cell", namespace, name, freeze_holds(status))


def forget(namespace: str, name: str) -> None:
    """None of the Cell's series stays (it is gone, or no longer this controller's)."""
    report_info(namespace, name, None)
    freezes.report_held("Cell", namespace, name, None)
    traffic.report(namespace, name, None)


def told(planned: Iterable[Event], ns: str, runs: Store) -> list[Event]:
    """The plan's Events as okra says them: each naming a run with what the run said (the
    runs from the cache of namespace `ns`). The Events recorded and the rollout's record
    both hold these words."""
    return [
        Event(e.type, e.reason, with_run_messages(e.message, lambda n: runs.get(n, ns)))
        for e in planned
    ]


def emit(events: EventRecorder, raw: dict[str, Any], said: Iterable[Event]) -> None:
    """The Events `said` (`told`) on the Cell, and in the log."""
    for e in said:
        events.event(raw, e.type, e.reason, e.message)
        log.info("cell event", reason=e.reason, message=e.message)
