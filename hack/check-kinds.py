#!/usr/bin/env python3
"""Fails when a module of okra_controllers spells a kind itself instead of importing it from
okra_controllers.api.kinds, the one place kind names live (run by `make lint`).

Flagged: a `GVK(...)` whose kind is a string literal, and a module-level name bound to a
`GVK(...)` (a kind-name constant), anywhere but api/kinds.py. A GVK built from a kind read at
run time (`GVK(GROUP, VERSION, kind)`) inside a function is not a constant and passes.

Flagged too, anywhere but the api/ package (whose models name their own kinds): a string
literal equal to a kind api/kinds.py defines, used as a kind, that is compared (`==`, `!=`,
or `in`/`not in` a literal tuple, set or list), given as the value of a `"kind"` dict key, a
`["kind"] =` item or a `kind=` keyword. Write `CELL.kind` instead. Docstrings, log and Event
messages and f-strings are not compared or keyed, so they pass.

The kind names are read from api/kinds.py with `ast` (nothing is imported): the kind of each
`GVK(...)` there, and for each `gvk_of(Model)` the `kind=` of the model's
`__crd__ = CRDInfo(...)` (or `okra_crd(kind, ...)`) in the module kinds.py imports it from.

usage: hack/check-kinds.py [DIR ...]   (default: src/okra_controllers)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REGISTRY = Path("api") / "kinds.py"
REPO_REGISTRY = Path(__file__).resolve().parents[1] / "src" / "okra_controllers" / REGISTRY


def _is_gvk(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "GVK")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "GVK")
    )


def _call_arg(node: ast.Call, index: int, name: str) -> ast.expr | None:
    """The argument `name` of a call, given by keyword or at position `index`."""
    arg = node.args[index] if len(node.args) > index else None
    return next((k.value for k in node.keywords if k.arg == name), arg)


def _str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _model_kind(package: Path, module: str, model: str) -> str | None:
    """The `kind=` of `model.__crd__` in `module` (dotted, its first part the package at
    `package`), or None when it is not spelled there."""
    path = package.joinpath(*module.split(".")[1:]).with_suffix(".py")
    if not path.is_file():
        return None
    tree = ast.parse(path.read_text(), str(path))
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and node.name == model):
            continue
        for item in node.body:
            target = item.target if isinstance(item, ast.AnnAssign) else None
            if isinstance(item, ast.Assign) and len(item.targets) == 1:
                target = item.targets[0]
            value = getattr(item, "value", None)
            if (
                isinstance(target, ast.Name)
                and target.id == "__crd__"
                and isinstance(value, ast.Call)
            ):
                # CRDInfo(group, version, kind, ...), or okra's okra_crd(kind, ...)
                okra = isinstance(value.func, ast.Name) and value.func.id == "okra_crd"
                return _str(_call_arg(value, 0 if okra else 2, "kind"))
    return None


def kind_names(registry: Path) -> dict[str, list[str]]:
    """Each kind api/kinds.py (at `registry`) defines, to the names it defines it under (two
    groups may have a kind of one name: okra's AnalysisTemplate and Argo Rollouts')."""
    tree = ast.parse(registry.read_text(), str(registry))
    package = registry.parents[1]
    imported = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    found: dict[str, list[str]] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            continue
        name, call = node.targets[0].id, node.value
        kind = None
        if _is_gvk(call):
            kind = _str(_call_arg(call, 2, "kind"))
        elif isinstance(call.func, ast.Name) and call.func.id == "gvk_of" and call.args:
            model = call.args[0]
            if isinstance(model, ast.Name) and model.id in imported:
                kind = _model_kind(package, imported[model.id], model.id)
            if kind is None:
                # a kind this check cannot read is a kind it would never flag: say so, not pass
                raise SystemExit(
                    f"{registry}:{node.lineno}: cannot read the kind of {name} "
                    "(gvk_of of a model whose __crd__ is not CRDInfo(...) or okra_crd(...)): "
                    "teach hack/check-kinds.py the new form"
                )
        if kind is not None:
            found.setdefault(kind, []).append(name)
    return found


def _bare_kinds(tree: ast.AST) -> list[tuple[ast.expr, str]]:
    """Each expression used as a kind, and how: compared, or the value under a `kind` key
    (the caller keeps the string literals among them)."""
    found: list[tuple[ast.expr, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
                if isinstance(op, ast.Eq | ast.NotEq):
                    found += [(left, "compared"), (right, "compared")]
                elif isinstance(op, ast.In | ast.NotIn):
                    found.append((left, "compared"))
                    if isinstance(right, ast.Tuple | ast.Set | ast.List):
                        found += [(e, "compared") for e in right.elts]
        elif isinstance(node, ast.Dict):
            found += [
                (value, "the value of a 'kind' key")
                for key, value in zip(node.keys, node.values, strict=True)
                if key is not None and _str(key) == "kind"
            ]
        elif isinstance(node, ast.Assign):
            found += [
                (node.value, "the value of a 'kind' key")
                for target in node.targets
                if isinstance(target, ast.Subscript) and _str(target.slice) == "kind"
            ]
        elif isinstance(node, ast.Call) and not _is_gvk(node):
            found += [(k.value, "passed as kind=") for k in node.keywords if k.arg == "kind"]
    return found


def problems(path: Path, source: str, kinds: dict[str, list[str]] | None = None) -> list[str]:
    """Each kind spelled in `source` outside the registry, as `path:line: message`; with
    `kinds` (kind → its names in api/kinds.py), also each of those kinds used as a bare
    string."""
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
        kind = _call_arg(node, 2, "kind")
        if _str(kind) is not None:
            line = f"{path}:{node.lineno}:"
            if not any(f.startswith(line) for f in found):
                found.append(
                    f"{line} kind {_str(kind)!r} spelled here: "
                    "use its name from okra_controllers.api.kinds"
                )
    for node, how in _bare_kinds(tree) if kinds else []:
        kind = _str(node)
        if kind is not None and kinds and kind in kinds:
            names = " or ".join(f"{name}.kind" for name in kinds[kind])
            found.append(
                f"{path}:{node.lineno}: kind {kind!r} {how} as a string: "
                f"use {names} from okra_controllers.api.kinds"
            )
    return sorted(found, key=lambda f: int(f.removeprefix(f"{path}:").split(":")[0]))


def main(argv: list[str]) -> int:
    roots = [Path(a) for a in argv] or [Path("src/okra_controllers")]
    found: list[str] = []
    for root in roots:
        registry = root / REGISTRY
        kinds = kind_names(registry if registry.is_file() else REPO_REGISTRY)
        for path in sorted(root.rglob("*.py")):
            if path.parts[-2:] == REGISTRY.parts:
                continue
            in_api = path.relative_to(root).parts[0] == "api"
            found += problems(path, path.read_text(), None if in_api else kinds)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
