"""`okra get progressiverollout` shows what each cluster's AppProject does to it: a cluster
held by a sync window, one the project does not permit, and the condition saying so."""

from __future__ import annotations

import datetime
from typing import Any

from okra_controllers.cli.progressive import render

HELD = "held by AppProject 'web' in a deny window (deny window 0 ('0 22 * * *' for 2h))"
FORBIDDEN = "AppProject 'web' does not permit destination euc1-b"


def test_get_shows_held_and_forbidden_clusters_and_the_condition() -> None:
    condition = {
        "type": "AppProjects",
        "status": "False",
        "reason": "Forbidden",
        "message": "not permitted by their AppProject, never synced: euc1-b; "
        "held by a sync window: euw1-a",
    }
    pr: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "argocd"},
        "spec": {"sourceRef": {"name": "web"}, "stages": [{"name": "eu"}]},
        "status": {
            "phase": "Progressing",
            "stages": [
                {
                    "name": "eu",
                    "phase": "Progressing",
                    "clusters": [
                        {"name": "euw1-a", "application": "web-euw1-a", "message": HELD},
                        {
                            "name": "euc1-b",
                            "application": "web-euc1-b",
                            "phase": "Forbidden",
                            "message": FORBIDDEN,
                        },
                    ],
                }
            ],
            "conditions": [condition],
        },
    }
    out = render(pr, {}, {}, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  euc")}
    assert "Forbidden" in rows["euc1-b"]
    assert FORBIDDEN in rows["euc1-b"]
    assert HELD in out
    assert (
        "AppProjects:   not permitted by their AppProject, never synced: euc1-b; "
        "held by a sync window: euw1-a" in out
    )
    condition["status"] = "True"
    assert "AppProjects:" not in render(pr, {}, {}, datetime.datetime.now(datetime.UTC))
