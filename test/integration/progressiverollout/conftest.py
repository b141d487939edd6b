"""Fixtures for the ProgressiveRollout tests (defined in harness.py)."""

from integration.progressiverollout.harness import argo_crds, world

__all__ = ["argo_crds", "world"]
