"""hack/check-kinds.py, the lint step that keeps okra_controllers.api.kinds the one place kind
names are spelled: it fails on a controller's own kind constant or a spelled-out kind, and
passes the tree as it is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "hack" / "check-kinds.py"


def run(*roots: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHECK), *map(str, roots)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )


def test_a_controller_defining_its_own_kind_name_fails(tmp_path: Path) -> None:
    controller = tmp_path / "widget" / "controller.py"
    controller.parent.mkdir()
    controller.write_text(
        "from okra_runtime.gvk import GVK\n"
        "SECRET = GVK('', 'v1', 'Secret')\n"
        "async def f(client):\n"
        "    return await client.list(GVK('okra.mumo.co', 'v1alpha1', 'Cell'))\n"
        "def g(kind):\n"
        "    return GVK('okra.mumo.co', 'v1alpha1', kind)\n"
    )
    result = run(tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 2  # the constant and the spelled kind; the run-time kind passes
    assert f"{controller}:2: kind-name constant SECRET" in lines[0]
    assert f"{controller}:4: kind 'Cell' spelled here" in lines[1]


def test_the_registry_itself_may_spell_kinds(tmp_path: Path) -> None:
    registry = tmp_path / "api" / "kinds.py"
    registry.parent.mkdir()
    registry.write_text("from okra_runtime.gvk import GVK\nSECRET = GVK('', 'v1', 'Secret')\n")
    assert run(tmp_path).returncode == 0


def test_okra_controllers_passes() -> None:
    result = run(REPO / "src" / "okra_controllers")
    assert result.returncode == 0, result.stderr
