"""The compatibility subset (test/compat.py) names tests that exist, and the marker takes
exactly them: an entry that no longer names a test would shrink the matrix silently."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from compat import COMPAT, in_subset

ROOT = Path(__file__).resolve().parents[2]


def defined_tests(module: str) -> set[str]:
    tree = ast.parse((ROOT / module).read_text())
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test_")
    }


@pytest.mark.parametrize(("module", "test", "why"), COMPAT)
def test_each_entry_names_a_test_that_exists(module: str, test: str, why: str) -> None:
    assert why
    found = defined_tests(module)
    assert found, f"{module} has no tests"
    assert not test or test in found, f"{module} has no {test}"


def test_the_marker_takes_the_entries_and_nothing_else() -> None:
    module, test, _ = next(e for e in COMPAT if e[1])
    assert in_subset(f"{module}::{test}")
    assert in_subset(f"{module}::{test}[case-1]")
    assert not in_subset(f"{module}::{test}_and_more")
    assert not in_subset(f"{module}::test_another")
    whole = next(e[0] for e in COMPAT if not e[1])
    assert in_subset(f"{whole}::test_anything[x]")
    assert not in_subset(f"{whole}x::test_anything")
    assert not in_subset("test/unit/test_compat_subset.py::test_the_marker")
