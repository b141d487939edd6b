"""A Cell's analysis whose template cannot be used (missing, say) is said where a person looks
first: the Cell's status message, as well as a Warning Event. The run is built before the
status is written, so the message reaches the status in the same write. Against a real
apiserver; the manager is not started, the reconciler acts on one plan."""

from __future__ import annotations

from pathlib import Path

import yaml

from okra_controllers.api.kinds import ANALYSIS_RUN, CELL
from okra_controllers.api.v1alpha1.cell import Cell, CellStatus
from okra_controllers.api.v1alpha1.strategy import StepAnalysis
from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.controller import CellReconciler
from okra_controllers.cell.plan import Plan, RunRequest
from okra_runtime.client import Client
from okra_runtime.manager import Manager
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[2]


async def test_a_template_that_cannot_be_used_is_said_in_the_cells_status(
    control_plane: ControlPlane, rt_client: Client, namespace: str
) -> None:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    mgr = Manager(rt_client, namespace=namespace, metrics_address=None, probe_address=None)
    rec = CellReconciler(mgr, mgr.event_recorder("cell-test"), AwsConfig())
    sample = yaml.safe_load((REPO / "config" / "samples" / "okra_v1alpha1_cell.yaml").read_text())
    sample["metadata"]["namespace"] = namespace
    raw = await rt_client.create(sample)
    cell = Cell.model_validate(raw)
    analysis = StepAnalysis.model_validate({"templates": [{"templateName": "no-such-template"}]})
    p = Plan(
        forward=None,
        status=CellStatus(phase="Migrating", message="canary v2: step 4 of 5 (analysis)"),
        create_runs=[RunRequest("web-v2-0123abcd-step-3", analysis, False)],
    )

    acted = await rec.actor.act(raw, cell, p, None)

    assert acted is not None
    assert acted.status.message is not None
    assert acted.status.message.startswith("cannot start analysis web-v2-0123abcd-step-3: ")
    assert p.status.message == "canary v2: step 4 of 5 (analysis)"  # the plan is only read

    live = await rt_client.get(CELL, "web", namespace)
    message = live["status"]["message"]
    assert message.startswith("cannot start analysis web-v2-0123abcd-step-3: "), message
    assert "no-such-template" in message
    assert (await rt_client.list(ANALYSIS_RUN, namespace)).items == []
