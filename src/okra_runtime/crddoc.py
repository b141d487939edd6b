"""A Markdown reference of CRDs, from their OpenAPI schemas (the files `crdgen` writes).

Why from the generated CRDs and not from the models: the CRD is what the API server enforces
and what users read with `kubectl explain`; documenting it keeps the reference, the schema and
`kubectl explain` saying the same thing. One section per kind: group, scope, short description,
then a table of every field under `spec` and `status` (dotted path, type, required, default,
description).

    python -m okra_runtime.crddoc --out docs/reference/crds.md config/crd/bases
    python -m okra_runtime.crddoc --check --out docs/reference/crds.md config/crd/bases
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

Schema = dict[str, Any]


def _type(s: Schema) -> str:
    if s.get("x-kubernetes-int-or-string"):
        return "int or string"
    t = str(s.get("type") or ("object" if s.get("x-kubernetes-preserve-unknown-fields") else "any"))
    if t == "array":
        return f"[]{_type(s.get('items') or {})}"
    if t == "object" and isinstance(s.get("additionalProperties"), dict):
        return f"map[string]{_type(s['additionalProperties'])}"
    if s.get("enum"):
        return f"{t} ({', '.join(f'`{v}`' for v in s['enum'])})"
    return t


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(s: Schema, path: str, required: bool) -> Iterator[str]:
    default = f"`{s['default']!r}`" if "default" in s else ""
    req = "yes" if required else ""
    yield f"| `{path}` | {_type(s)} | {req} | {default} | {_cell(s.get('description', ''))} |"
    target = s.get("items") if s.get("type") == "array" else s
    target = target or {}
    needed = set(target.get("required") or ())
    suffix = "[]" if s.get("type") == "array" else ""
    for name, sub in (target.get("properties") or {}).items():
        yield from _rows(sub, f"{path}{suffix}.{name}", name in needed)


def render_crd(crd: Schema) -> str:
    spec = crd["spec"]
    names = spec["names"]
    version = next(v for v in spec["versions"] if v.get("storage", True))
    root: Schema = version["schema"]["openAPIV3Schema"]
    lines = [
        f"## {names['kind']}",
        "",
        f"`{spec['group']}/{version['name']}`, {spec['scope'].lower()}, "
        f"plural `{names['plural']}`.",
        "",
    ]
    if root.get("description"):
        lines += [_cell(root["description"]), ""]
    lines += ["| Field | Type | Required | Default | Description |", "|---|---|---|---|---|"]
    needed = set(root.get("required") or ())
    for part in ("spec", "status"):
        if part in (root.get("properties") or {}):
            lines.extend(_rows(root["properties"][part], part, part in needed))
    return "\n".join(lines) + "\n"


def render(paths: Sequence[Path]) -> str:
    crds: list[Schema] = []
    for p in paths:
        for f in sorted(p.glob("*.yaml")) if p.is_dir() else [p]:
            crds += [
                d
                for d in yaml.safe_load_all(f.read_text())
                if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"
            ]
    crds.sort(key=lambda c: c["spec"]["names"]["kind"])
    head = [
        "<!-- Generated from the CRDs by `python -m okra_runtime.crddoc`. DO NOT EDIT. -->",
        "# CRD reference",
        "",
        "Every field of every kind, as the API server validates it "
        "(`kubectl explain <kind>.spec` says the same).",
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(render_crd(c) for c in crds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m okra_runtime.crddoc", description="Markdown reference from CRD files."
    )
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    parser.add_argument("paths", nargs="+", type=Path, help="CRD files or directories")
    args = parser.parse_args(argv)
    text = render(args.paths)
    out: Path = args.out
    if args.check:
        if not out.is_file() or out.read_text(encoding="utf-8") != text:
            print(f"crddoc: {out} is out of date; run `make manifests`", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
