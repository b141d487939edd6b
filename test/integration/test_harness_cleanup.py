"""Harnesses leave nothing behind: not on a failed test, not on Ctrl-C, and
not even when the harness itself is SIGKILLed (children die with it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from okra_testkit.envtest.leaks import leftover_servers
from support import default_sigint

REPO = Path(__file__).resolve().parents[2]
RUN_ENV = "OKRA_TEST_RUN"

HARNESS = textwrap.dedent("""\
    import json, time
    from okra_testkit.envtest import ControlPlane
    from okra_testkit.emulator import MotoServer
    with ControlPlane(name="sig") as cp, MotoServer() as aws:
        print(json.dumps({"pids": [*cp.pids, aws.pid], "dirs": [str(cp.dir), str(aws.dir)]}),
              flush=True)
        time.sleep(600)
    """)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1]
    except OSError:
        return False
    return state != "Z"


def wait_dead(pids: list[int], timeout: float = 30) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def start_harness(run_id: str) -> tuple[subprocess.Popen[str], dict[str, list[int | str]]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HARNESS],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, RUN_ENV: run_id},
        preexec_fn=default_sigint,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"harness exited early with {proc.wait()}"
    info = json.loads(line)
    assert len(info["pids"]) == 4  # etcd, kube-apiserver, kube-controller-manager, moto
    assert all(alive(p) for p in info["pids"])
    assert len(leftover_servers(RUN_ENV, run_id)) == 4
    return proc, info


def test_ctrl_c_stops_servers_and_removes_dirs() -> None:
    run_id = uuid.uuid4().hex
    proc, info = start_harness(run_id)
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    assert wait_dead([int(p) for p in info["pids"]]) == []
    assert leftover_servers(RUN_ENV, run_id) == []
    assert [d for d in info["dirs"] if Path(str(d)).exists()] == []


def test_sigkilled_harness_takes_its_servers_with_it() -> None:
    run_id = uuid.uuid4().hex
    proc, info = start_harness(run_id)
    proc.kill()
    proc.wait(10)
    try:
        assert wait_dead([int(p) for p in info["pids"]]) == []
        assert leftover_servers(RUN_ENV, run_id) == []
    finally:
        import shutil

        for d in info["dirs"]:  # a SIGKILLed harness cannot clean its temp dirs
            shutil.rmtree(str(d), ignore_errors=True)


@pytest.mark.timeout(600)
def test_failing_suite_leaves_no_server_running(tmp_path: Path) -> None:
    run_id = uuid.uuid4().hex
    pids_file = tmp_path / "pids.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-q",
            str(REPO / "test" / "integration" / "probe_failing_suite.py"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, RUN_ENV: run_id, "OKRA_PROBE_PIDS_FILE": str(pids_file)},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 failed" in result.stdout
    info = json.loads(pids_file.read_text())
    assert len(info["pids"]) == 7  # two control planes of three, and moto
    assert [p for p in info["pids"] if alive(p)] == []
    assert leftover_servers(RUN_ENV, run_id) == []
    assert [d for d in info["dirs"] if Path(d).exists()] == []
