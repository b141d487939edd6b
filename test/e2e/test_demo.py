"""`make demo` runs the whole story and ends with exit 0; Ctrl-C leaves nothing running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

from okra_testkit.envtest.leaks import leftover_servers
from support import default_sigint

RUN_ENV = "OKRA_TEST_RUN"


def demo(run_id: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "okra_testkit.demo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, RUN_ENV: run_id, "PYTHONUNBUFFERED": "1"},
        preexec_fn=default_sigint,
    )


def test_demo_rolls_out_v2_and_rolls_back_v3() -> None:
    run_id = uuid.uuid4().hex
    proc = demo(run_id)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, out
    assert "== v2 comes up" in out
    assert "canary v2 at 20%" in out
    assert "canary v2 at 60%" in out
    assert "final weights in AWS: web-1-v2=50, web-2-v2=50" in out
    assert "blocked: v3 (analysis" in out
    # replicas: 2 — a version gets traffic only on both its clusters at once, never one first.
    weights = [line.split("AWS: ", 1)[1] for line in out.splitlines() if "AWS: " in line]
    for version in ("v2", "v3"):
        serving = [w for w in weights if f"-{version}=" in w]
        assert serving, weights
        assert all(f"web-1-{version}=" in w and f"web-2-{version}=" in w for w in serving), weights
    assert leftover_servers(RUN_ENV, run_id, ("okra_controllers.manager",)) == []


def test_ctrl_c_stops_the_demo_and_everything_it_started() -> None:
    run_id = uuid.uuid4().hex
    proc = demo(run_id)
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        if "== v2 comes up" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    assert "interrupted; cleaning up" in rest
    assert leftover_servers(RUN_ENV, run_id, ("okra_controllers.manager",)) == []
