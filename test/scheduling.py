"""How `pytest -n N --dist loadscope` hands modules to workers (a pytest plugin, loaded by
test/conftest.py).

- The modules that use the session's Argo CD (the `argocd` fixture) are one unit of work,
  so one worker starts one Argo CD for all of them, instead of each worker that draws one of
  them starting its own.
- Units are handed out longest first, by kind: the Argo CD unit, reliability, e2e,
  integration and fuzz, then the many short unit-test modules, which fill the workers' ends evenly.
  xdist's own order (most tests first) would leave the single-test, minute-long modules
  to the end, where one worker runs them while the other has nothing left.

With `OKRA_TEST_SHUFFLE` the shuffled order stands (scopes as they come)."""

from __future__ import annotations

import os
from pathlib import PurePosixPath

import pytest
from xdist.scheduler import LoadScopeScheduling

ARGOCD_MODULES = frozenset(
    {
        "test/e2e/test_argocd_harness.py",
        "test/e2e/test_dashboard_browser.py",
        "test/e2e/test_progressiverollout.py",
    }
)
ARGOCD_SCOPE = "argocd"
RANK = {"reliability": 1, "e2e": 2, "integration": 3, "fuzz": 3}
LAST = 4


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def rank(nodeid: str) -> int:
    module = _module(nodeid)
    if module in ARGOCD_MODULES:
        return 0
    parts = PurePosixPath(module).parts
    return next((RANK[p] for p in parts if p in RANK), LAST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest kinds first (a stable sort: modules and tests keep their order within)."""
    if not os.environ.get("OKRA_TEST_SHUFFLE"):
        items.sort(key=lambda item: rank(item.nodeid))


class ArgoCDScopeScheduling(LoadScopeScheduling):  # type: ignore[misc]
    """loadscope, with the Argo CD modules as one scope, in collection order."""

    def _split_scope(self, nodeid: str) -> str:
        if _module(nodeid) in ARGOCD_MODULES:
            return ARGOCD_SCOPE
        scope: str = super()._split_scope(nodeid)
        return scope


class XdistScheduler:
    """The xdist hook, registered only when xdist is loaded (`-p no:xdist` has no such
    hook, and pytest refuses a plugin that implements an unknown one)."""

    def pytest_xdist_make_scheduler(
        self, config: pytest.Config, log: object
    ) -> LoadScopeScheduling | None:
        if config.getvalue("dist") != "loadscope":
            return None
        config.option.loadscopereorder = False  # collection order, as sorted above
        return ArgoCDScopeScheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistScheduler(), "okra-scheduling")
