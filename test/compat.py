"""The compatibility subset (`make test-compat`, `pytest -m compat`): the tests that, between
them, touch every API okra calls on a Kubernetes API server and on Argo CD, run on each cell
of the matrix in docs/compatibility.md. Chosen to cover each API once, not to repeat the
suite: each entry says what it is there for. An entry is a test's node ID or a module's path
(all its tests); `test/unit/test_compat_subset.py` checks that each names a test that exists.
"""

from __future__ import annotations

# (module, test in it or "" for all of its tests, what the entry is there for)
COMPAT: tuple[tuple[str, str, str], ...] = (
    # the API server's side of the CRDs: structural schemas, defaults, CEL rules with
    # fieldPath and reason, kustomize install and RBAC (with kubectl of the minor)
    ("test/integration/test_crdgen_apiserver.py", "", "structural schemas, defaults, CEL"),
    ("test/integration/test_refused_fields.py", "", "CEL rules refuse, naming the field"),
    ("test/integration/test_install.py", "", "kubectl apply -k, CRDs established, RBAC"),
    ("test/integration/test_server_version.py", "", "/version at start, readiness"),
    # the manager users run (a process): list/watch, status writes, Events, Leases, a canary
    # through every step kind with an analysis, then a rollback; a kill mid-rollout
    (
        "test/e2e/test_cell_canary.py",
        "test_full_canary_through_every_step_kind_then_failed_analysis_rolls_back",
        "a Cell canary with analysis and rollback",
    ),
    (
        "test/e2e/test_cell_resilience.py",
        "test_kill_9_mid_rollout_resumes_at_the_same_step",
        "a manager killed mid-rollout resumes (list, then watch from its resourceVersion)",
    ),
    # a system Cell: its application Cells, Checks, owner references, across a restart
    (
        "test/integration/test_system_cell.py",
        "test_a_failed_check_waits_its_delay_across_a_restart_then_rolls_web_back",
        "a system Cell across a manager restart",
    ),
    # watches: a stalled watch, 410 Gone and the relist, an API server restart; the Lease
    ("test/integration/runtime/test_informer_recovery.py", "", "watch resume and relist"),
    ("test/integration/runtime/test_leader_partition.py", "", "coordination.k8s.io Leases"),
    # Argo CD: a ProgressiveRollout stage held by an AppProject's sync window, then synced
    # by the real application-controller; a destination the project forbids
    ("test/e2e/test_progressiverollout_projects.py", "", "Applications, AppProjects, windows"),
    # what people run: the CLI's reads and actions, the dashboard's API
    ("test/integration/test_cli.py", "", "the CLI's reads and actions"),
    ("test/integration/test_dashboard_server.py", "", "the dashboard's API"),
)


def in_subset(nodeid: str) -> bool:
    """Whether the test of `nodeid` (a parametrized one by its function's name) is in
    COMPAT."""
    module, _, test = nodeid.split("[", 1)[0].partition("::")
    return any(module == m and t in ("", test) for m, t, _ in COMPAT)
