"""The node suite (`make test-node`): a real node (containerd, runc, the bridge CNI, kubelet,
kube-proxy; `okra_testkit.node`) joined to a control plane that runs kube-scheduler and every
controller. Root only, and not part of `make test`: the node changes host state while it
runs (restored after, which the last two tests check) and one runs per host.

Here `control_plane` is that plane (so `rt_client`, `namespace` and the rest reach it), and
`moto` listens on the node's address, where Pods reach it. Cell checks run as Jobs that the Job
controller and the kubelet run (busybox, `sh -c`): test_install.py, test_cell_checks.py,
test_system_cell.py, test_status_kill_points.py, test_system_cell_argocd.py; their fixtures
`env`, `okra` and `metrics` are e2e's. Skipped, saying why, where no node can run (not root,
containerd or the node's binaries missing).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e.conftest import env, metrics, okra  # noqa: F401 -- fixtures, shared with e2e
from okra_testkit.emulator import MotoServer
from okra_testkit.envtest import ControlPlane
from okra_testkit.envtest.argocd import ArgoCDBinaries, find_argocd
from okra_testkit.hoststate import HostState
from okra_testkit.images import buildah_archive, busybox_archive
from okra_testkit.lbc import (
    LoadBalancerController,
    LoadBalancerControllerUnavailableError,
    lbc_binary,
)
from okra_testkit.node import SUITE_LOCK_FILE, Node, host_lock, node_control_plane, unavailable
from okra_testkit.seed import Network, Seeder

REPO = Path(__file__).resolve().parents[2]
LAST = ("test_the_host_is_as_it_was", "test_a_node_whose_harness_was_killed_is_undone_by_the_next")


@pytest.hookimpl(trylast=True)  # after test/conftest.py's shuffle (OKRA_TEST_SHUFFLE)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The host check stops the node: it runs after every other test here, then the test of
    a killed node (which starts nodes of its own)."""
    last = sorted((i for i in items if i.name in LAST), key=lambda i: LAST.index(i.name))
    items[:] = [i for i in items if i.name not in LAST] + last


SUITE_LOCK_WAIT = 45 * 60
"""How long a node suite waits for another one on the host (one takes about 8 minutes)."""


@pytest.hookimpl(wrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    """One node suite per host. A second one (another checkout's CI) waits for the first here,
    before its node_world reads the host's state and outside every test's timeout."""
    if not any(item.get_closest_marker("node") for item in session.items):
        return (yield)

    def waiting() -> None:
        print(f"\nwaiting for the node suite that holds {SUITE_LOCK_FILE}", file=sys.stderr)

    with host_lock(SUITE_LOCK_FILE, SUITE_LOCK_WAIT, waiting):
        return (yield)


@dataclass
class NodeWorld:
    """The plane, its node, and the host's state before either started."""

    cp: ControlPlane
    node: Node
    before: HostState

    def stop(self) -> None:
        try:
            self.node.stop()
        finally:
            self.cp.stop()


@pytest.fixture(scope="session")
def node_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeWorld]:
    reason = unavailable()
    if reason:
        pytest.skip(f"no node on this host: {reason}")
    before = HostState.read()
    cp = node_control_plane()
    node = Node(cp)
    world = NodeWorld(cp, node, before)
    try:
        cp.start()
        node.start()
        node.import_image(busybox_archive(tmp_path_factory.mktemp("images") / "busybox.tar"))
        yield world
    finally:
        world.stop()
    assert not node.leftover, f"the node left the host changed: {node.leftover}"


@pytest.fixture(scope="session")
def node(node_world: NodeWorld) -> Node:
    return node_world.node


@pytest.fixture(scope="session")
def control_plane(node_world: NodeWorld) -> ControlPlane:
    return node_world.cp


@pytest.fixture(scope="module")
def moto(node_world: NodeWorld) -> Iterator[MotoServer]:
    with MotoServer(host=node_world.node.address) as server:
        yield server


@pytest.fixture(scope="session")
def manager_image(node: Node, tmp_path_factory: pytest.TempPathFactory) -> str:
    """okra-manager's image (`$OKRA_IMAGE`, else built by `hack/image.sh`), in the node."""
    if shutil.which("buildah") is None:
        pytest.skip(
            "okra-manager's image is built and exported with buildah"
            " (apt-get install buildah mmdebstrap)"
        )
    image = (
        os.environ.get("OKRA_IMAGE")
        or subprocess.run(
            [str(REPO / "hack" / "image.sh")], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    node.import_image(buildah_archive(image, tmp_path_factory.mktemp("image") / "okra.tar"))
    return image


LBC_VPC_CIDR = "10.244.0.0/16"
"""The VPC the load balancer controller is given: it holds the node's Pod network, as an EKS
VPC holds its Pods' addresses (the VPC CNI), so Pod IPs are registered without an
availability zone."""


@pytest.fixture(scope="module")
def lbc_network(moto: MotoServer) -> Network:
    """A VPC in moto (with two subnets) for the load balancer controller and its target groups."""
    return asyncio.run(Seeder(moto.config).network(cidr=LBC_VPC_CIDR))


@pytest.fixture(scope="module")
def load_balancer_controller(
    control_plane: ControlPlane, moto: MotoServer, lbc_network: Network
) -> Iterator[LoadBalancerController]:
    """The AWS Load Balancer Controller (`$OKRA_LBC`, else `hack/build-lbc.sh`'s newest build)
    on the plane, its EC2, ELBv2 and STS calls sent to moto."""
    try:
        binary = lbc_binary()
    except LoadBalancerControllerUnavailableError as e:
        pytest.skip(str(e))
    with LoadBalancerController(
        control_plane, moto.config, lbc_network.vpc_id, binary=binary
    ) as lbc:
        yield lbc


@pytest.fixture(scope="session")
def argocd_binaries() -> ArgoCDBinaries:
    """Argo CD (`$OKRA_ARGOCD`, `hack/build-argocd.sh`) and redis-server (`$OKRA_REDIS`,
    `hack/redis.sh`) for a test's `ArgoCD` harness on the plane."""
    try:
        return find_argocd()
    except FileNotFoundError as e:
        pytest.skip(str(e))


@pytest.fixture
def okra_crds(control_plane: ControlPlane, namespace: str) -> list[str]:
    """okra's CRDs, applied for the test (the install tests' `kubectl delete -k` removes them
    from the plane). After the test the `namespace` fixture takes okra's finalizers off the
    namespace's objects, so that a later `kubectl delete -k` of the CRDs is not held by them."""
    return control_plane.install_crds([REPO / "config" / "crd" / "bases"])
