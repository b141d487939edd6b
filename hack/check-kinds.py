#!/usr/bin/env python3
"""Fails when a module of okra_controllers spells a kind itself instead of importing it from
okra_controllers.api.kinds, the one place kind names live (run by `make lint`).

Flagged: a `GVK(...)` whose kind is a string literal, and a module-level name bound to a
`GVK(...)` (a kind-name constant), anywhere but api/kinds.py. A GVK built from a kind read at
run time (`GVK(GROUP, VERSION, kind)`) inside a function is not a constant and passes.

usage: hack/check-kinds.py [DIR ...]   (default: src/okra_controllers)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REGISTRY = Path("api") / "kinds.py"


def _is_gvk(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "GVK")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "GVK")
    )


def problems(path: Path, source: str) -> list[str]:
    """Each kind spelled in `source` outside the registry, as `path:line: message`."""
    tree = ast.parse(source, str(path))
    found: list[str] = []
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign) and node.value is not None
            else []
        )
        value = getattr(node, "value", None)
        if value is not None and _is_gvk(value):
            names = ", ".join(t.id for t in targets if isinstance(t, ast.Name))
            found.append(
                f"{path}:{node.lineno}: kind-name constant {names} defined here: "
                "import it from okra_controllers.api.kinds (add it there if it is new)"
            )
    for node in ast.walk(tree):
        if not _is_gvk(node):
            continue
        assert isinstance(node, ast.Call)
        kind = node.args[2] if len(node.args) > 2 else None
        kind = next((k.value for k in node.keywords if k.arg == "kind"), kind)
        if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
            line = f"{path}:{node.lineno}:"
            if not any(f.startswith(line) for f in found):
                found.append(
                    f"{line} kind {kind.value!r} spelled here: "
                    "use its name from okra_controllers.api.kinds"
                )
    return found


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path("src/okra_controllers")]
    found: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.parts[-2:] == REGISTRY.parts:
                continue
            found += problems(path, path.read_text())
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
