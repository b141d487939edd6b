"""Under `CI=true` a skip fails the run unless its reason is allowed (test/conftest.py's
`CI_SKIPS_ALLOWED`): a nested pytest on probe modules that skip (probe_skipping_suite.py,
probe_skipped_module.py), on one process and on xdist workers, and without `CI`, where a
skip is only a skip."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import CI_SKIPS_ALLOWED, RUN_ENV, unlisted_skips

REPO = Path(__file__).resolve().parents[2]
PROBES = ["test/integration/probe_skipping_suite.py", "test/integration/probe_skipped_module.py"]
NAMED = [
    "FAILED: skipped under CI=true: test/integration/probe_skipping_suite.py::test_skips_itself:"
    " needs a tool this machine lacks",
    "FAILED: skipped under CI=true: test/integration/probe_skipping_suite.py"
    "::test_skipped_by_its_mark: needs another tool",
    "FAILED: skipped under CI=true: test/integration/probe_skipped_module.py:"
    " the whole module needs a tool",
]


def nested(ci: bool, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    env[RUN_ENV] = uuid.uuid4().hex  # its own run: the servers of this one are not its leftovers
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args, *PROBES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_skip_under_ci_fails_the_run_naming_the_test_and_its_reason(workers: str) -> None:
    out = nested(True, "-n", workers)
    assert out.returncode == 1, out.stdout + out.stderr
    found = [line for line in out.stdout.splitlines() if line.startswith("FAILED: skipped")]
    assert sorted(found) == sorted(NAMED), out.stdout
    assert "1 passed, 3 skipped" in out.stdout, out.stdout


@pytest.mark.timeout(300)
def test_without_ci_a_skip_is_only_a_skip() -> None:
    out = nested(False, "-n", "0")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAILED" not in out.stdout, out.stdout
    assert "1 passed, 3 skipped" in out.stdout, out.stdout


def test_an_allowed_reason_passes_and_every_allowance_says_why() -> None:
    skips = [("t::a", "needs a tool this machine lacks"), ("t::b", "needs another tool")]
    allowed = {"needs another tool": "why it is not a gap"}
    assert unlisted_skips(skips, allowed) == [("t::a", "needs a tool this machine lacks")]
    assert unlisted_skips(skips, {}) == skips
    assert all(why.strip() for why in CI_SKIPS_ALLOWED.values())
