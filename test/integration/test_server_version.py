"""okra-manager reads the version of a real kube-apiserver (`GET /version`)."""

from __future__ import annotations

from okra_controllers.serverversion import server_version
from okra_runtime import Client
from okra_testkit.envtest import ControlPlane


async def test_the_version_of_the_control_plane_is_read(
    control_plane: ControlPlane, rt_client: Client
) -> None:
    found = await server_version(rt_client)
    assert found is not None
    assert found.git_version.startswith(f"v{found.minor[0]}.{found.minor[1]}.")  # type: ignore[index]
    assert found.unsupported is None
