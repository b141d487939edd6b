"""A real, local Kubernetes control plane for tests and demos.

`ControlPlane` starts etcd, kube-apiserver and kube-controller-manager (only the
garbage-collector and namespace controllers, as no nodes exist) on free loopback
ports with TLS, static token users, RBAC and service-account keys, much as
controller-runtime's envtest does; with a `node_address` it is one a real node
(`okra_testkit.node`) joins, and runs kube-scheduler and every controller too. The
binaries come from `OKRA_ASSETS` (a directory, printed by `hack/build-control-plane.sh`)
or from `PATH`.

The harness is synchronous on purpose: it runs in test fixtures and before a
demo's event loop starts, never inside a controller.
"""

from okra_testkit.envtest.binaries import Binaries, find_binaries
from okra_testkit.envtest.controlplane import ADMIN, UNPRIVILEGED, ControlPlane, User
from okra_testkit.envtest.process import ControlPlaneError

__all__ = [
    "ADMIN",
    "UNPRIVILEGED",
    "Binaries",
    "ControlPlane",
    "ControlPlaneError",
    "User",
    "find_binaries",
]
