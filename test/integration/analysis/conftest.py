"""Fixtures for analysis tests.

- `prometheus`: a real Prometheus scraping a test-controlled exporter every second, one per
  test module (see promharness.py). Tests that share it use metric names of their own.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from integration.analysis.promharness import PrometheusServer


@pytest.fixture(scope="module")
def prometheus() -> Iterator[PrometheusServer]:
    with PrometheusServer() as server:
        yield server
