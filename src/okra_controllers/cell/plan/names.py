"""Names the plan gives what it creates: rollout IDs, AnalysisRuns, Pauses, Jobs.

Deterministic names are how the Cell keeps no state in memory: a restarted manager
finds a rollout's runs, pauses and check Jobs by name (from the Cell, the version,
the rollout ID and the step) instead of remembering them. `okra` (the CLI) uses the
same names to find what a Cell is waiting on.
"""

from __future__ import annotations

import datetime
import hashlib
import re

from okra_controllers.cell.plan.model import Stage


def dns(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")


def rollout_id(cell_uid: str, spec_hash: str, started: datetime.datetime) -> str:
    """Names one rollout of one Cell: its uid (no two Cells share one, in any namespace),
    its version and steps, and the second it started. Made once, when the rollout starts,
    and kept in `status.rolloutId`; the same observation gives the same ID."""
    text = f"{cell_uid}/{spec_hash}/{started.isoformat()}"
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def run_name(cell: str, version: str, rollout: str, what: str) -> str:
    return f"{dns(cell)[:30]}-{dns(version)[:16]}-{rollout}-{what}".strip("-")


def job_name(cell: str, rollout: str, stage: Stage, check: str) -> str:
    """One Job per rollout and check: a restarted manager finds it by name."""
    return f"{dns(cell)[:24]}-{rollout}-{stage[:4]}-{check}".strip("-")
