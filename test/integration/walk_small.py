"""Pause, VersionBlocklist and ClusterSet: shapes and judges for the field walk
(test_every_field_acts.py).

A Pause is judged by its phase, and the time to its timer, over half an hour
(`pause_controller.pause_phase`); a VersionBlocklist by what the Cell plan reads of it
(`observe.blocked_versions`: each version with its cause) and what `okra get cell` shows
(`cell_view.blocked_lines`: each version, how long ago, why); a ClusterSet by its plan
over a few EKS clusters as the EKS walk describes them.
"""

from __future__ import annotations

import datetime
from typing import Any

from okra_controllers.api.v1alpha1.cell import Pause
from okra_controllers.api.v1alpha1.clusterset import ClusterSet
from okra_controllers.aws.eks import EksCluster
from okra_controllers.cell.observe import blocked_versions
from okra_controllers.cell.pause_controller import pause_phase
from okra_controllers.cli.render.cell_view import blocked_lines
from okra_controllers.cli.render.common import Paint
from okra_controllers.clusterset.plan import Owner
from okra_controllers.clusterset.plan import plan as clusterset_plan

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
TIMES = [T0 + datetime.timedelta(minutes=m) for m in range(0, 35, 5)]

PAUSE_SHAPES: dict[str, dict[str, Any]] = {
    "until-promoted": {},
    "timed": {"expireTime": "2026-01-01T00:10:00Z"},
}
BLOCKLIST_SHAPES: dict[str, dict[str, Any]] = {
    "two-versions": {
        "items": [
            {
                "version": "v2",
                "cause": "analysis analysis-v2-1 Failed",
                "time": "2026-01-01T00:00:00Z",
            },
            {"version": "v3"},
        ]
    },
}


def pause_outputs(raw: dict[str, Any]) -> list[Any]:
    spec = Pause.model_validate(raw).spec
    return [pause_phase(spec, now) for now in TIMES]


def blocklist_outputs(raw: dict[str, Any]) -> list[Any]:
    return [blocked_versions(raw), blocked_lines(raw, Paint(), TIMES[-1])]


# -- ClusterSet -----------------------------------------------------------------------------

EKS = [
    EksCluster("web-1", "ACTIVE", "https://web-1.eks", "Y2E=", {"role": "web", "env": "prod"}),
    EksCluster("web-2", "CREATING", "https://web-2.eks", "Y2E=", {"role": "web"}),
    EksCluster("api-1", "ACTIVE", "https://api-1.eks", "Y2E=", {"role": "api"}),
]
"""What the EKS walk (aws.eks.observe_eks) describes: clusters of two roles, one not yet
ACTIVE."""
CLUSTERSET_SHAPES: dict[str, dict[str, Any]] = {
    "by-role": {
        "generators": [{"awseks": {"clusterSelector": {"matchTags": {"role": "web"}}}}],
        "template": {"metadata": {"labels": {"app": "web"}}},
    },
}


def clusterset_outputs(raw: dict[str, Any]) -> list[Any]:
    """The ClusterSet's plan (clusterset/plan.py) over those clusters: which it selects
    and the Argo CD cluster Secret it writes for each."""
    spec = ClusterSet.model_validate(raw).spec
    owner = Owner("walked", "walked", "u-1")
    return [repr(clusterset_plan(owner, spec, EKS, []))]
