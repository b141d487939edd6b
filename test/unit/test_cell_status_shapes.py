"""A Cell's status as stored is one schema for two shapes: a Cell's rollout and a system
Cell's clusters and applications. Each controller reads and writes its own shape."""

from __future__ import annotations

from okra_controllers.api.v1alpha1.cell import CellStatus, RolloutCellStatus, SystemCellStatus

STORED = {
    "observedGeneration": 3,
    "phase": "Migrating",
    "health": "Progressing",
    "message": "web: syncing",
    "stableVersion": "v1",
    "canaryVersion": "v2",
    "canaryWeight": 20,
    "notifications": [
        {
            "key": "k1",
            "trigger": "on-rollout-completed",
            "service": "webhook",
            "payload": "{}",
            "created": "2026-12-03T10:00:00Z",
        }
    ],
    "clusters": [{"name": "euc1-a", "ready": True}],
    "applications": [{"name": "web", "cell": "shop-web", "phase": "Syncing"}],
}

CORE = {"observedGeneration", "phase", "health", "message"}
"""What both shapes hold, as stored."""


def test_the_stored_schema_is_the_two_shapes_and_nothing_else() -> None:
    core = {"observed_generation", "phase", "health", "message"}
    rollout, system = set(RolloutCellStatus.model_fields), set(SystemCellStatus.model_fields)
    assert rollout & system == core
    assert set(CellStatus.model_fields) == rollout | system


def test_a_system_cell_reads_its_part_and_drops_a_rollout_left_from_before() -> None:
    st = CellStatus.model_validate(STORED).as_system()
    assert type(st) is SystemCellStatus
    dumped = st.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert set(dumped) == CORE | {"clusters", "applications"}
    assert dumped["phase"] == "Migrating"
    assert dumped["message"] == "web: syncing"
    assert dumped["clusters"][0]["name"] == "euc1-a"
    assert dumped["clusters"][0]["ready"] is True
    assert dumped["applications"][0]["name"] == "web"
    assert "stableVersion" not in dumped
    assert "notifications" not in dumped


def test_a_cell_reads_its_rollout_part() -> None:
    st = CellStatus.model_validate(STORED).as_rollout()
    assert type(st) is RolloutCellStatus
    dumped = st.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert set(dumped) == CORE | {"stableVersion", "canaryVersion", "canaryWeight", "notifications"}
    assert dumped["canaryWeight"] == 20
    assert dumped["notifications"][0]["key"] == "k1"


def test_an_empty_status_reads_as_empty_shapes() -> None:
    assert CellStatus().as_rollout() == RolloutCellStatus()
    assert CellStatus().as_system() == SystemCellStatus()


def test_a_shape_is_a_copy_at_its_top_level() -> None:
    stored = CellStatus.model_validate(STORED)
    st = stored.as_rollout()
    st.phase, st.canary_weight = "Error", 0
    assert stored.phase == "Migrating"
    assert stored.canary_weight == 20
