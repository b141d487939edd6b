"""The Cell reading target health when AWS cannot answer (a connection refused, a 5xx): the
warning is logged once per change of reason, not on every pass of a Cell held on it, and
again after AWS answered in between."""

from __future__ import annotations

from okra_controllers.aws.config import AwsConfig
from okra_controllers.cell.reads import TargetHealth
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest.process import free_port
from okra_testkit.seed import Seeder
from support import LogCapture


def warnings(logs: LogCapture) -> list[dict[str, object]]:
    return [r for r in logs.at("warning") if r.get("event") == "target health unavailable"]


async def test_unavailable_target_health_is_warned_once_per_change(
    moto: MotoServer, logs: LogCapture
) -> None:
    seed = Seeder(moto.config)
    arn = await seed.target_group(f"health-{free_port()}", await seed.network())
    dead = AwsConfig(
        endpoint_url=f"http://127.0.0.1:{free_port()}",  # nothing listens: refused
        access_key_id="testing",
        secret_access_key="testing",
        total_max_attempts=1,
    )
    health = TargetHealth()  # the Cell controller's reader
    for _ in range(5):  # five passes, one reason
        assert await health.one(arn, dead) == (False, "")
    assert len(warnings(logs)) == 1, warnings(logs)

    # AWS answers: the group has no healthy target, no warning
    assert await health.one(arn, moto.config) == (False, "")
    assert len(warnings(logs)) == 1

    # unavailable again after an answer: said again
    assert await health.one(arn, dead) == (False, "")
    assert await health.one(arn, dead) == (False, "")
    assert len(warnings(logs)) == 2, warnings(logs)
