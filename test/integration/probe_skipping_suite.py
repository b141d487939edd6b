"""Tests that skip as a test for a missing tool would, run only by test_ci_skip_guard as a
nested pytest (the name is not test_*, so no suite collects it): one skips itself, one is
skipped by its mark, one passes."""

from __future__ import annotations

import pytest


def test_passes() -> None:
    assert True


def test_skips_itself() -> None:
    pytest.skip("needs a tool this machine lacks")


@pytest.mark.skipif(True, reason="needs another tool")
def test_skipped_by_its_mark() -> None:
    raise AssertionError("never run")
