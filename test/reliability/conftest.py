"""Reliability tests run the real okra-manager against the real control plane and
moto, with faults injected around them. They share the e2e fixtures (one set of
helpers for a Cell's world) and add the fault proxy (`test/faultproxy.py`)."""

from __future__ import annotations

from e2e.conftest import env, metrics, okra_crds  # noqa: F401 -- fixtures, shared with e2e
