"""expr-lang's own test expressions, read from the module the exprlang build downloaded.

Provenance: github.com/expr-lang/expr at the version test/expr_differential/exprlang/go.mod pins
(v1.17.7), the module zip in Go's module cache (`go env GOMODCACHE`, verified by go.sum when
hack/build-exprlang.sh built exprlang). Nothing is copied into this repository: the corpus is
read from the zip each run, so it is reproducible from the pinned version alone.

Two files of that module hold expressions with a plain environment:
- `test/fuzz/fuzz_corpus.txt` (one expression a line), environment `test/fuzz/fuzz_env.go`;
- `testdata/generated.txt` (one a line), environment `test/gen/env.go`.
Their environments also hold Go structs and functions (`foo`, `list`, `add`, `greet` ...), which
JSON-shaped analysis results cannot be; expressions naming those are left out (and counted),
the rest run in both evaluators with the JSON-shaped part of the environment. Expressions
using `$env` are left out too (and counted): expr-lang types `$env` loosely and resolves unknown
names after `$env?.` at run time, so `$env && false or ok` is true there and a type error here,
a shape no analysis condition takes (5,001 of them; 1,379 differ in kinds not yet written
down). Go's int32/int64/float32 variables are sent as int and float64 to both sides.
"""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from expr_differential.exprlang import REPO

MODULE = "github.com/expr-lang/expr"
GO_MOD = REPO / "test" / "expr_differential" / "exprlang" / "go.mod"

FUZZ_ENV: dict[str, Any] = {
    "ok": True,
    "f64": 0.5,
    "f32": 0.5,
    "i": 1,
    "i64": 1,
    "i32": 1,
    "array": [1, 2, 3, 4, 5],
}
FUZZ_OPAQUE = ("list", "foo", "add", "div", "half", "score", "greet", "fn")
GEN_ENV: dict[str, Any] = {"ok": True, "i": 1, "str": "str", "f64": 0.5, "array": [1, 2, 3, 4, 5]}
GEN_OPAQUE = ("foo", "list", "add", "greet")

SOURCES = (
    ("test/fuzz/fuzz_corpus.txt", FUZZ_ENV, FUZZ_OPAQUE),
    ("testdata/generated.txt", GEN_ENV, GEN_OPAQUE),
)


@dataclass(frozen=True)
class Corpus:
    version: str
    cases: list[tuple[str, str, dict[str, Any]]]  # (file, expression, env)
    left_out: int  # expressions naming a Go struct or function of the environment, or $env


def pinned_version() -> str:
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+(v\S+)", GO_MOD.read_text(), re.M)
    assert found, f"{MODULE} is not required in {GO_MOD}"
    return found.group(1)


def module_zip(version: str) -> Path:
    cache_dir = (
        os.environ.get("GOMODCACHE")
        or subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    path = Path(cache_dir) / "cache" / "download" / MODULE / "@v" / f"{version}.zip"
    assert path.is_file(), f"{path} is missing: run hack/build-exprlang.sh (it downloads {MODULE})"
    return path


@cache
def corpus() -> Corpus:
    version = pinned_version()
    cases: list[tuple[str, str, dict[str, Any]]] = []
    left_out = 0
    with zipfile.ZipFile(module_zip(version)) as z:
        for name, env, opaque in SOURCES:
            text = z.read(f"{MODULE}@{version}/{name}").decode()
            uses_opaque = re.compile(
                r"(?<![\w$#])(?:\$env\s*\.\s*)?(?:" + "|".join(opaque) + r")\b"
            )
            seen: set[str] = set()
            for line in text.splitlines():
                expression = line.strip()
                if not expression or expression in seen:
                    continue
                seen.add(expression)
                if uses_opaque.search(expression) or "$env" in expression:
                    left_out += 1
                    continue
                cases.append((name, expression, env))
    return Corpus(version, cases, left_out)
