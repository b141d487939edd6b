"""Reliability tests run the real okra-manager against the real control plane and
moto, with faults injected around them. They share the e2e fixtures (one set of
helpers for a Cell's world) and add the fault proxy (`test/faultproxy.py`) and the
`world` fixture (`harness.World`: where a test starts its managers and proxies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.conftest import Env, env, metrics, okra_crds  # noqa: F401 -- fixtures, shared with e2e
from okra_runtime import Client
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane

from .harness import World


@pytest.fixture
def world(
    env: Env,  # noqa: F811 -- the fixture imported above
    rt_client: Client,
    namespace: str,
    control_plane: ControlPlane,
    moto: MotoServer,
    tmp_path: Path,
) -> World:
    return World(env, rt_client, namespace, control_plane, moto, tmp_path)
