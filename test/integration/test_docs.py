"""The docs site builds in strict mode, and every okra kind has a page whose examples the API
server accepts.

Kind pages include the samples of config/samples (`--8<-- "okra_v1alpha1_cell.yaml"`), and
pages may also write examples inline; every YAML example of an okra kind in the docs is
created with `kubectl create --dry-run=server` (schema, defaults and validation rules all run,
nothing is stored) in a fresh namespace.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_runtime.crdgen import crd_info
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SAMPLES = REPO / "config" / "samples"
GROUP_VERSION = "okra.mumo.co/v1alpha1"

_BLOCK = re.compile(r"^( *)```ya?ml\n(.*?)^\1```", re.M | re.S)
_SNIPPET = re.compile(r'^\s*--8<-- "([^"]+)"\s*$', re.M)


def examples(page: Path) -> list[dict[str, Any]]:
    """The okra objects in the page's YAML blocks, snippets resolved."""
    found: list[dict[str, Any]] = []
    for indent, body in _BLOCK.findall(page.read_text()):
        body = "\n".join(line[len(indent) :] for line in body.splitlines())
        body = _SNIPPET.sub(lambda m: (SAMPLES / m.group(1)).read_text(), body)
        for doc in yaml.safe_load_all(body):
            if isinstance(doc, dict) and doc.get("apiVersion") == GROUP_VERSION:
                found.append(doc)
    return found


PAGES = sorted(p for p in DOCS.rglob("*.md") if examples(p))
KINDS = sorted(crd_info(m).kind for m in CRD_MODELS)


def test_docs_site_builds_in_strict_mode(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "cells" / "index.html").is_file()


def test_every_kind_has_an_example_in_the_docs() -> None:
    shown = {d["kind"] for p in PAGES for d in examples(p)}
    assert sorted(shown) >= KINDS, f"kinds without a docs example: {sorted(set(KINDS) - shown)}"


@pytest.fixture(scope="module")
def docs_namespace(control_plane: ControlPlane) -> Iterator[str]:
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    ns = f"docs-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", ns)
    try:
        yield ns
    finally:
        control_plane.kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(DOCS).as_posix())
def test_docs_examples_pass_server_side_validation(
    control_plane: ControlPlane, docs_namespace: str, page: Path
) -> None:
    for doc in examples(page):
        doc["metadata"].pop("namespace", None)
        out = control_plane.kubectl(
            "create",
            "--dry-run=server",
            "-n",
            docs_namespace,
            "-f",
            "-",
            input_text=yaml.safe_dump(doc),
            check=False,
        )
        assert out.returncode == 0, f"{page.name}: {doc['kind']}: {out.stderr}"
