"""Every manifest the original documents (`../shared/seeds/`, beside the repository) write
for okra's kinds is accepted by the API server the way a user applies it
(`kubectl apply --dry-run=server`, whose field validation is Strict: an unknown field is
an error, not silently dropped), group rewritten to okra.mumo.co.

Where the manifests come from:
- fenced code blocks of the seeds, parsed as YAML (blocks that are not YAML, such as
  design sketches with `analysis` and no colon, are listed and left out);
- seed 000, whose text lost its indentation: `test/fixtures/seed-000-manifests.yaml`
  has its manifests with the indentation put back, and a test here checks, line by
  line, that the fixture says exactly what the seed says;
- seed 002's system Cell, which is not YAML as written (one `analysis` lacks its colon):
  `test/fixtures/seed-002-system-cell.yaml` is the block with that colon, and a test here
  checks that this is its only difference from the seed.

What the test changes, and only this: the group (to okra.mumo.co), the namespace, a
name where the manifest has none or `...`, placeholders in ARN fields (`...`,
`$LISTENER_ARN`, `prev1`) replaced by well-formed ARNs, other `...` values by a value of
the field's type (a word; a one-label selector; a one-word command),
and `ownerReferences` dropped (they name an owner by `$API_VERSION` and no uid, which
only an existing owner has); `status` is ignored by the server on create.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from okra_controllers.api.v1alpha1 import CRD_MODELS
from okra_controllers.api.v1alpha1.spelling import deprecated_spellings
from okra_testkit.envtest import ControlPlane

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"
FIXTURE = REPO / "test" / "fixtures" / "seed-000-manifests.yaml"
SYSTEM_FIXTURE = REPO / "test" / "fixtures" / "seed-002-system-cell.yaml"
ORIGINAL_GO = REPO / "test" / "fixtures" / "original-go-manifests.yaml"
"""A manifest per kind of the original okra's Go API (every field of its types)."""
GROUPS = ("okra.mumoshu.github.io", "okra.mumo.co", "deployment.skyscanner.net")
LISTENER = (
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:"
    "listener/app/web/50dc6c495c0c9188/f2f7dc8efc522ab2"
)
TARGET_GROUP = (
    "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/web/73e2d6bc24d8a067"
)
ARN_FIELDS = {"listenerARN": LISTENER, "arn": TARGET_GROUP, "targetGroupARN": TARGET_GROUP}
TYPED_PLACEHOLDERS: dict[str, Any] = {
    "selector": {"matchLabels": {"app": "placeholder"}},
    "command": ["placeholder"],
    "args": ["placeholder"],
}
"""`...` where the field is not a string: a value of its type."""


def installed_kinds() -> set[str]:
    kinds = set()
    for crd in (REPO / "config" / "crd" / "bases").glob("*.yaml"):
        kinds.add(yaml.safe_load(crd.read_text())["spec"]["names"]["kind"])
    return kinds


def fenced_blocks(text: str) -> Iterator[str]:
    for m in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S):
        yield m.group(1)


def significant(lines: list[str]) -> list[str]:
    """Lines as the flattened seed shows them: stripped, no blanks, no comment lines."""
    out = []
    for line in lines:
        s = line.strip()
        if s.startswith("# //"):
            s = s[2:]
        if s and not s.startswith("#"):
            out.append(s)
    return out


def seed_manifests() -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """(source, document) for every okra-group document of the seeds, and the fenced
    blocks that are not YAML."""
    docs: list[tuple[str, dict[str, Any]]] = []
    not_yaml: list[str] = []
    for seed in sorted(SEEDS.glob("*.txt")):
        for n, block in enumerate(fenced_blocks(seed.read_text())):
            where = f"{seed.name} block {n + 1}"
            try:
                parsed = [d for d in yaml.safe_load_all(block) if d is not None]
            except yaml.YAMLError:
                not_yaml.append(where)
                continue
            docs += [(where, d) for d in parsed if _okra(d)]
    for n, d in enumerate(yaml.safe_load_all(FIXTURE.read_text())):
        if d is not None and _okra(d):
            docs.append((f"000 manifest {n + 1} ({FIXTURE.name})", d))
    docs.append(
        (f"002 system Cell ({SYSTEM_FIXTURE.name})", yaml.safe_load(SYSTEM_FIXTURE.read_text()))
    )
    return docs, not_yaml


def _okra(doc: Any) -> bool:
    if not isinstance(doc, dict) or "kind" not in doc:
        return False
    api = str(doc.get("apiVersion") or "")
    return api.split("/")[0] in GROUPS or (not api and doc["kind"] != "Secret")


def normalised(doc: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    out: dict[str, Any] = _placeholders(doc)
    out["apiVersion"] = "okra.mumo.co/v1alpha1"
    meta = out.setdefault("metadata", {}) or {}
    out["metadata"] = meta
    if not meta.get("name") or meta["name"] == "...":
        meta["name"] = name
    meta["namespace"] = namespace
    meta.pop("ownerReferences", None)
    return out


def _placeholders(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _placeholders(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_placeholders(v, key) for v in value]
    if isinstance(value, str):
        if key in ARN_FIELDS and not value.startswith("arn:"):
            return ARN_FIELDS[key]
        if value == "...":
            return TYPED_PLACEHOLDERS.get(key, "placeholder")
    return value


def seeds() -> Path:
    """The seeds beside the repository. CI always has them (their absence fails there); a
    plain clone without them skips these tests, saying where they are expected."""
    if not SEEDS.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"the seeds are expected beside the repository, at {SEEDS}")
        pytest.skip(f"no seeds beside the repository (expected at {SEEDS})")
    return SEEDS


def test_the_seed_000_fixture_says_what_the_seed_says() -> None:
    seed = next(seeds().glob("000_*.txt"))
    seed_lines = significant(seed.read_text().splitlines())
    text = FIXTURE.read_text()
    docs = text.split("\n---\n")
    start = 0
    for doc in docs:
        lines = significant(doc.splitlines())
        # Each manifest is a run of the seed's lines, in the seed's order.
        for i in range(start, len(seed_lines) - len(lines) + 1):
            if seed_lines[i : i + len(lines)] == lines:
                start = i + len(lines)
                break
        else:
            raise AssertionError(f"not in seed 000 as written: {lines[:3]}...")
    # And no okra manifest of the seed is missing from the fixture.
    in_seed = sum(1 for s in seed_lines if s.startswith("apiVersion: okra.mumoshu.github.io"))
    in_fixture = sum(1 for s in significant(text.splitlines()) if s.startswith("apiVersion: okra."))
    assert in_fixture == in_seed == 7
    assert "kind: AWSApplicationLoadBalancerConfig" in text  # the one without apiVersion


def test_the_seed_002_fixture_is_the_seed_with_one_colon_added() -> None:
    seed = next(seeds().glob("002_*.txt"))
    block = next(b for b in fenced_blocks(seed.read_text()) if "applications:" in b)
    fixture = SYSTEM_FIXTURE.read_text()
    changed = [
        (a, b) for a, b in zip(block.splitlines(), fixture.splitlines(), strict=True) if a != b
    ]
    assert changed == [("      analysis", "      analysis:")]


async def test_every_seed_manifest_is_accepted(control_plane: ControlPlane, namespace: str) -> None:
    seeds()
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    kinds = installed_kinds()
    docs, not_yaml = seed_manifests()
    rows: list[tuple[str, str, str]] = []
    rejected: list[str] = []
    for n, (where, doc) in enumerate(docs):
        kind = str(doc["kind"])
        if kind not in kinds:
            rows.append((where, kind, "no such kind in okra (not installed)"))
            continue
        obj = normalised(doc, f"seed-{n}", namespace)
        out = await asyncio.to_thread(
            control_plane.kubectl,
            "apply",
            "--dry-run=server",
            "-f",
            "-",
            check=False,
            input_text=json.dumps(obj),
        )
        if out.returncode != 0:
            message = out.stderr.strip().replace("\n", " ")
            rows.append((where, kind, f"REJECTED: {message}"))
            rejected.append(f"{where} {kind}: {message}")
            continue
        rows.append((where, kind, "accepted" + (f" ({out.stderr.strip()})" if out.stderr else "")))
    width = max(len(w) for w, _, _ in rows)
    print(f"\n{'seed manifest':<{width}}  {'kind':<34}outcome")
    for where, kind, outcome in rows:
        print(f"{where:<{width}}  {kind:<34}{outcome}")
    print(f"fenced blocks that are not YAML (design sketches): {', '.join(not_yaml) or 'none'}")
    assert rejected == []
    assert sum(1 for _, _, o in rows if o == "accepted") >= 10
    assert any(w.startswith("002 system Cell") and o == "accepted" for w, _, o in rows)


async def test_manifests_of_the_original_go_types_are_accepted_and_decoded(
    control_plane: ControlPlane, namespace: str
) -> None:
    """Each kind of the original okra's Go API, every field spelled as its json tags spell
    it: the API server admits it (dry run, strict field validation) and okra decodes what
    the server answers, naming each field spelled the original's way."""
    control_plane.install_crds([REPO / "config" / "crd" / "bases"])
    models = {m.__crd__.kind: m for m in CRD_MODELS}  # type: ignore[attr-defined]
    docs = [d for d in yaml.safe_load_all(ORIGINAL_GO.read_text()) if d]
    assert len({d["kind"] for d in docs}) == 7
    rejected: list[str] = []
    spelled: dict[str, list[str]] = {}
    for doc in docs:
        obj = normalised(doc, doc["metadata"]["name"], namespace)
        out = await asyncio.to_thread(
            control_plane.kubectl,
            "apply",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            "-",
            check=False,
            input_text=json.dumps(obj),
        )
        where = f"{doc['kind']} {doc['metadata']['name']}"
        if out.returncode != 0:
            rejected.append(f"{where}: {out.stderr.strip()}")
            continue
        served = json.loads(out.stdout)
        models[doc["kind"]].model_validate(served)
        spelled[where] = deprecated_spellings(doc["kind"], served.get("spec"))
    assert rejected == []
    assert all(spelled[k] for k in ("Cell web", "Cell tcp", "AWSApplicationLoadBalancerConfig web"))
    assert spelled["ClusterSet web"]
    assert spelled["AWSTargetGroupSet web"]
