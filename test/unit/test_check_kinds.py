"""hack/check-kinds.py, the lint step that keeps okra_controllers.api.kinds the one place kind
names are spelled: it fails on a controller's own kind constant, a spelled-out kind, or a kind
api/kinds.py defines compared or keyed as a bare string, and passes the tree as it is."""

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


def test_a_kind_compared_or_keyed_as_a_string_fails(tmp_path: Path) -> None:
    controller = tmp_path / "widget" / "controller.py"
    controller.parent.mkdir()
    controller.write_text(
        "def f(obj, k, make):\n"
        "    a = obj['kind'] == 'Cell'\n"
        "    b = 'Pause' != k\n"
        "    c = k in ('Cell', 'NotAKind')\n"
        "    d = {'apiVersion': 'v1', 'kind': 'Secret'}\n"
        "    obj['kind'] = 'AWSApplicationLoadBalancerConfig'\n"
        "    return make(kind='AWSTargetGroupSet'), a, b, c, d\n"
    )
    result = run(tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    expected = [
        (2, "'Cell' compared", "CELL.kind"),
        (3, "'Pause' compared", "PAUSE.kind"),
        (4, "'Cell' compared", "CELL.kind"),
        (5, "'Secret' the value of a 'kind' key", "SECRET.kind"),
        (6, "'AWSApplicationLoadBalancerConfig' the value of a 'kind' key", "ALB_CONFIG.kind"),
        (7, "'AWSTargetGroupSet' passed as kind=", "TARGET_GROUP_SET.kind"),
    ]
    assert len(lines) == len(expected), lines
    for line, (number, what, fix) in zip(lines, expected, strict=True):
        assert line.startswith(f"{controller}:{number}: kind {what}"), line
        assert f"use {fix} " in line, line


def test_a_kind_of_two_groups_names_both(tmp_path: Path) -> None:
    (tmp_path / "lint.py").write_text("def f(k):\n    return k == 'AnalysisTemplate'\n")
    result = run(tmp_path)
    assert "use ANALYSIS_TEMPLATE.kind or ARGO_ANALYSIS_TEMPLATE.kind " in result.stderr


def test_a_kind_in_prose_or_through_its_name_passes(tmp_path: Path) -> None:
    controller = tmp_path / "widget" / "controller.py"
    controller.parent.mkdir()
    controller.write_text(
        '"""Cell"""\n'
        "from okra_controllers.api.kinds import CELL\n"
        "def f(obj, k, log, events, name):\n"
        '    """Cell"""\n'
        "    log.info('Cell', name=name)\n"
        "    events.event(obj, 'Normal', 'Cell', 'Cell')\n"
        "    a = f'{k}' == f'Cell {name}'\n"
        "    b = obj['kind'] == CELL.kind and k in (CELL.kind, 'NotAKind')\n"
        "    c = {'kind': CELL.kind, 'reason': 'Cell'}\n"
        "    d = 'Cell' + k, ['Cell']\n"
        "    return a, b, c, d\n"
    )
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr


def test_the_api_package_may_name_its_kinds(tmp_path: Path) -> None:
    model = tmp_path / "api" / "v1alpha1" / "cell.py"
    model.parent.mkdir(parents=True)
    model.write_text(
        "class Cell:\n"
        "    __crd__ = CRDInfo(group='okra.mumo.co', version='v1alpha1', kind='Cell')\n"
        "def is_cell(obj):\n    return obj.get('kind') == 'Cell'\n"
    )
    assert run(tmp_path).returncode == 0


def test_the_kinds_are_read_from_the_registry(tmp_path: Path) -> None:
    """The kinds of the tree's own api/kinds.py, spelled in a GVK or in its model's __crd__."""
    (tmp_path / "api" / "v1alpha1").mkdir(parents=True)
    (tmp_path / "api" / "kinds.py").write_text(
        "from okra_controllers.api.v1alpha1.gadget import Gadget\n"
        "from okra_runtime.gvk import GVK\n"
        "WIDGET = GVK('example.com', 'v1', kind='Widget')\n"
        "GADGET = gvk_of(Gadget)\n"
    )
    (tmp_path / "api" / "v1alpha1" / "gadget.py").write_text(
        "class Gadget:\n"
        "    __crd__: ClassVar[CRDInfo] = CRDInfo(\n"
        "        group='example.com', version='v1', kind='Gadget', plural='gadgets'\n"
        "    )\n"
    )
    controller = tmp_path / "controller.py"
    controller.write_text("def f(k):\n    return k == 'Widget', {'kind': 'Gadget'}, k == 'Cell'\n")
    result = run(tmp_path)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines  # Cell is not a kind of this registry
    assert "kind 'Widget' compared as a string: use WIDGET.kind " in lines[0]
    assert "kind 'Gadget' the value of a 'kind' key as a string: use GADGET.kind " in lines[1]


def test_okra_controllers_passes() -> None:
    result = run(REPO / "src" / "okra_controllers")
    assert result.returncode == 0, result.stderr


def test_a_model_kind_the_check_cannot_read_fails_instead_of_passing(tmp_path: Path) -> None:
    """A registry entry `gvk_of(Model)` whose model names its kind in a form the check does not
    know would leave that kind unchecked everywhere: the check stops and says which entry."""
    api = tmp_path / "api"
    api.mkdir()
    (api / "models.py").write_text("class Widget:\n    __crd__ = make_crd('okra', 'Widget')\n")
    (api / "kinds.py").write_text("from pkg.api.models import Widget\nWIDGET = gvk_of(Widget)\n")
    result = run(tmp_path)
    assert result.returncode != 0
    assert "kinds.py:2: cannot read the kind of WIDGET" in result.stderr
