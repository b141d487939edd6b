"""`make demo-fleet` tells the whole standard scenario and ends with exit 0, leaving nothing
running (its links are asserted one by one in test_standard_scenario.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from okra_testkit.envtest.leaks import leftover_servers

RUN_ENV = "OKRA_TEST_RUN"


@pytest.mark.timeout(600)
def test_demo_fleet_runs_the_standard_scenario_to_the_end() -> None:
    run_id = uuid.uuid4().hex
    proc = subprocess.run(
        [sys.executable, "-m", "okra_testkit.demo_fleet"],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, RUN_ENV: run_id, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    for line in (
        "cluster web-1-v2 imported into Argo CD (Secret, version=v2)",
        "app synced onto web-2-v2: ConfigMap, Service, TargetGroupBinding",
        "target group of web-1-v2 discovered (v2)",
        "ALB rule in AWS: web-1-v1=40 web-1-v2=10 web-2-v1=40 web-2-v2=10",
        "ApplicationSet removed Application web-web-1-v1",
        "ALB rule in AWS: web-1-v2=50, web-2-v2=50",
    ):
        assert line in out, out
    assert leftover_servers(RUN_ENV, run_id, ("okra_controllers.manager",)) == []
