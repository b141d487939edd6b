"""A module that skips as a whole, as one whose tool is missing would, run only by
test_ci_skip_guard as a nested pytest (the name is not test_*, so no suite collects it)."""

from __future__ import annotations

import pytest

pytest.skip("the whole module needs a tool", allow_module_level=True)


def test_never_collected() -> None:
    raise AssertionError("never run")
