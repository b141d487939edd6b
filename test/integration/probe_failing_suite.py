"""A deliberately failing suite, run only by test_harness_cleanup as a nested
pytest: it starts every kind of server through the shared fixtures, records
their pids, and fails, so the outer test can check nothing is left behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane

PIDS_FILE = os.environ.get("OKRA_PROBE_PIDS_FILE", "")
pytestmark = pytest.mark.skipif(not PIDS_FILE, reason="run only by test_harness_cleanup")


def test_fails_with_servers_running(
    control_plane: ControlPlane, workload_plane: ControlPlane, moto: MotoServer
) -> None:
    Path(PIDS_FILE).write_text(
        json.dumps(
            {
                "pids": [*control_plane.pids, *workload_plane.pids, moto.pid],
                "dirs": [str(control_plane.dir), str(workload_plane.dir), str(moto.dir)],
            }
        )
    )
    raise AssertionError("this failure is the point of the probe")
