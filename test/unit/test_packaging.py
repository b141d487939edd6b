"""Packaging: the `okra` distribution holds okra and nothing of the test harness, which is a
distribution of its own (`okra-testkit`, under `testkit/`), and the lock files say nothing of the
machine they were made on.

What is built is checked in the image suite (`test_image.py`: the image cannot import
`okra_testkit`, has no moto or cryptography); this checks the sources the builds start from.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
HARNESS_DEPENDENCIES = {"moto", "cryptography"}


def _pyproject(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = tomllib.loads(path.read_text())
    return data


def find_packages(where: Path) -> set[str]:
    """What `[tool.setuptools.packages.find] where = [...]` finds: every directory with an
    `__init__.py` below `where`, as a dotted name."""
    return {".".join(init.parent.relative_to(where).parts) for init in where.rglob("__init__.py")}


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;@]", r, maxsplit=1)[0].lower() for r in requirements}


def test_okra_packages_hold_no_harness_and_testkit_holds_only_the_harness() -> None:
    okra = find_packages(REPO / "src")
    testkit = find_packages(REPO / "testkit" / "src")
    assert {"okra_runtime", "okra_controllers"} <= okra
    assert not {p for p in okra if p.startswith("okra_testkit") or p.endswith(".envtest")}
    assert testkit
    assert all(p.split(".")[0] == "okra_testkit" for p in testkit)
    assert "okra_testkit.envtest" in testkit


def test_harness_dependencies_are_the_testkits_not_okras() -> None:
    okra = _pyproject(REPO / "pyproject.toml")["project"]
    testkit = _pyproject(REPO / "testkit" / "pyproject.toml")["project"]
    for extra, requirements in {
        "runtime": okra["dependencies"],
        **okra.get("optional-dependencies", {}),
    }.items():
        leaked = _names(requirements) & HARNESS_DEPENDENCIES
        assert not leaked, f"okra's {extra} dependencies list {leaked}: they are okra-testkit's"
    assert _names(testkit["dependencies"]) >= HARNESS_DEPENDENCIES
    # The harness starts okra-manager and reads okra's models: it needs this very okra.
    assert f"okra=={okra['version']}" in testkit["dependencies"]


def test_both_distributions_build_with_a_backend_that_accepts_their_license_field() -> None:
    # An SPDX `license = "..."` string needs setuptools 77 (PEP 639); older ones reject it.
    for path in (REPO / "pyproject.toml", REPO / "testkit" / "pyproject.toml"):
        data = _pyproject(path)
        assert isinstance(data["project"]["license"], str)
        assert "setuptools>=77" in data["build-system"]["requires"], path


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-dev.lock"])
def test_lock_files_carry_no_machine_path(lock: str) -> None:
    text = (REPO / lock).read_text()
    machine = re.findall(r"(?m)(?:file:|--find-links|-f |--index-url|(?<![\w.])/[\w.-]+/).*$", text)
    assert not machine, f"{lock} names paths or indexes of the machine it was made on: {machine}"
    assert "#    make lock" in text, f"{lock} says how to remake it"


def test_lock_runtime_pins_are_the_dev_pins_and_hold_no_harness() -> None:
    def pins(lock: str) -> dict[str, str]:
        text = (REPO / lock).read_text()
        return dict(re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+)", text))

    runtime, dev = pins("requirements.lock"), pins("requirements-dev.lock")
    assert not HARNESS_DEPENDENCIES & set(runtime), "the image's lock holds harness dependencies"
    assert set(dev) >= HARNESS_DEPENDENCIES
    assert {name: dev.get(name) for name in runtime} == runtime


def test_okra_demo_says_what_is_missing_without_the_testkit() -> None:
    # `okra_testkit` made unimportable (a None entry in sys.modules), as in an installation
    # of okra alone.
    code = (
        "import sys; sys.modules['okra_testkit'] = None\n"
        "from okra_controllers.cli import main\n"
        "sys.exit(main(['demo']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "okra demo is not available: it needs okra-testkit" in out.stderr
    assert "Traceback" not in out.stderr
