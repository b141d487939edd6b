"""A real node for a harness control plane: containerd + runc + the bridge CNI + kubelet +
kube-proxy on this host, so that Pods, Deployments, Services and Jobs run for real.

It runs as root only (runc needs it; rootless runc does not work on this layout) and changes
host state while it runs: kubelet sets sysctls (`vm.overcommit_memory`, `kernel.panic`,
`kernel.panic_on_oops`...), kube-proxy and the bridge plugin add `KUBE-*` and `CNI-*` iptables
chains and turn on `ip_forward`, kubelet makes a `kubepods` cgroup tree, the CNI plugin a
bridge. `Node.stop()` always puts all of it back as it found it
(`okra_testkit.hoststate.HostState`, read before start and again after stop: `Node.leftover`
lists any difference), touching only the chains, links and cgroups the node made. A node whose
harness was killed before it could stop is undone by the next node to start
(`hoststate.STATE_FILE`, `Node.recovered`). One node runs on a host at a time (a lock file:
kubelet's ports 10248/10250 are fixed).

Everything else lives under one temporary directory: containerd's root, state and socket,
kubelet's root and Pod logs, the CNI configuration and its address leases. No registry is
reachable, so images come in as archives (`import_image`): the Pod sandbox's pause image is
written (`okra_testkit.images.oci_archive`) around `hack/build-node.sh`'s pause, and images the
project builds with buildah are exported with `buildah_archive`; Pods use them with
`imagePullPolicy: Never` (or IfNotPresent).

Synchronous on purpose, like `okra_testkit.envtest`: it runs in fixtures, never in okra.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from okra_testkit.envtest.binaries import cached_build
from okra_testkit.envtest.controlplane import ADMIN, ControlPlane
from okra_testkit.envtest.process import ControlPlaneError, Process, Processes, wait_until
from okra_testkit.hoststate import (
    BRIDGE,
    CGROUP_ROOT,
    STATE_FILE,
    HostState,
    NodeUnavailableError,
    recover_killed_node,
    restore_host,
)
from okra_testkit.images import (
    PAUSE_IMAGE,
    oci_archive,
)

NODE_ASSETS_ENV = "OKRA_NODE_ASSETS"
NODE_BINARIES = ("kubelet", "kube-scheduler", "kube-proxy", "pause")
HOST_TOOLS = (
    "containerd",
    "containerd-shim-runc-v2",
    "ctr",
    "runc",
    "iptables",
    "iptables-save",
    "ip6tables-save",
    "ip",
    "mount",
    "umount",
)
CNI_BIN_DIR = Path("/usr/lib/cni")
CNI_PLUGINS = ("bridge", "host-local", "loopback")
POD_CIDR = "10.244.0.0/24"
LOCK_FILE = Path(tempfile.gettempdir()) / "okra-node.lock"
SUITE_LOCK_FILE = Path(tempfile.gettempdir()) / "okra-node-suite.lock"
"""Held by a node suite from its first test to its last: a second suite on the host (another
checkout's CI) waits for the first before it reads the host's state."""


def node_binaries_dir(assets: str | os.PathLike[str] | None = None) -> Path:
    """The directory of `hack/build-node.sh`'s binaries: `assets`, else `$OKRA_NODE_ASSETS`,
    else the newest complete build in okra's cache directory."""
    if assets is None:
        assets = os.environ.get(NODE_ASSETS_ENV)
    if assets is not None:
        return Path(assets)
    build = cached_build(NODE_BINARIES, "node-*")
    if build is None:
        raise NodeUnavailableError(
            f"the node's binaries ({', '.join(NODE_BINARIES)}) are not built: run "
            f"`hack/build-node.sh` and set {NODE_ASSETS_ENV} to the directory it prints"
        )
    return build


def unavailable(assets: str | os.PathLike[str] | None = None) -> str | None:
    """Why no node can run here (None when one can): for a test's skip reason."""
    if os.geteuid() != 0:
        return "a node runs containers with runc, which needs root"
    missing = [t for t in HOST_TOOLS if shutil.which(t) is None]
    missing += [f"{CNI_BIN_DIR}/{p}" for p in CNI_PLUGINS if not (CNI_BIN_DIR / p).exists()]
    if missing:
        return (
            f"a node needs {', '.join(missing)}: `hack/build-node.sh` as root installs "
            "Debian's containerd, runc, containernetworking-plugins, iptables"
        )
    if not (CGROUP_ROOT / "memory").is_dir() and not (CGROUP_ROOT / "cgroup.controllers").exists():
        return f"no cgroup hierarchy at {CGROUP_ROOT}"
    try:
        bins = node_binaries_dir(assets)
    except NodeUnavailableError as e:
        return str(e)
    gone = [n for n in NODE_BINARIES if not os.access(bins / n, os.X_OK)]
    if gone:
        return f"{bins} lacks {', '.join(gone)} (`hack/build-node.sh` builds them)"
    return None


def host_address() -> str:
    """This host's address on its default route: the node's address."""
    out = subprocess.run(
        ["ip", "-4", "-json", "route", "get", "1.1.1.1"],
        capture_output=True,
        text=True,
        check=True,
    )
    routes = json.loads(out.stdout)
    return str(routes[0]["prefsrc"])


# -- the node --------------------------------------------------------------------------------


@contextlib.contextmanager
def host_lock(
    path: Path = LOCK_FILE, timeout: float = 900, waiting: Callable[[], None] | None = None
) -> Iterator[None]:
    """Holds the flock on `path` (one holder per host), waiting up to `timeout` seconds for
    another process to let it go; `waiting` is called once if it has to wait."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ControlPlaneError(
                        f"another process has held {path} for {timeout:.0f} s (one per host)"
                    ) from None
                if waiting is not None:
                    waiting()
                    waiting = None
                time.sleep(1)
        yield
    finally:
        os.close(fd)


@dataclass
class Node(Processes):
    """containerd, kubelet and kube-proxy on this host, joined to `control_plane` (one
    started with `node_address`, see `node_control_plane`). `with Node(cp) as node:`."""

    control_plane: ControlPlane
    assets: str | None = None
    name: str = "okra-node"
    base_dir: str | None = None
    keep_dir: bool = False
    lock_timeout: float = 900
    before: HostState | None = field(init=False, default=None)
    leftover: list[str] = field(init=False, default_factory=list)
    """After `stop()`: how the host differs from before `start()` (empty: as it was)."""
    recovered: list[str] = field(init=False, default_factory=list)
    """After `start()`: what a node whose harness was killed had left, undone first."""
    dir: Path = field(init=False, default=Path())
    _procs: list[Process] = field(init=False, default_factory=list)
    _bins: Path = field(init=False, default=Path())
    _lock: contextlib.ExitStack = field(init=False, default_factory=contextlib.ExitStack)

    @property
    def address(self) -> str:
        assert self.control_plane.node_address, "the control plane has no node_address"
        return self.control_plane.node_address

    @property
    def socket(self) -> Path:
        return self.dir / "containerd" / "containerd.sock"

    def start(self) -> None:
        reason = unavailable(self.assets)
        if reason:
            raise NodeUnavailableError(reason)
        if not self.control_plane.node_address:
            raise ControlPlaneError("the control plane was not started with a node_address")
        self._bins = node_binaries_dir(self.assets)
        self._lock.enter_context(host_lock(LOCK_FILE, self.lock_timeout))
        try:
            self.recovered = recover_killed_node()
            self.before = HostState.read()
            self.dir = Path(tempfile.mkdtemp(prefix=f"{self.name}-", dir=self.base_dir))
            self.dir.chmod(0o755)
            STATE_FILE.write_text(
                json.dumps({"dir": str(self.dir), "before": self.before.to_json()})
            )
            self._start_containerd()
            self.import_image(
                oci_archive(
                    self.dir / "pause.tar",
                    PAUSE_IMAGE,
                    {"pause": self._bins / "pause"},
                    entrypoint=["/pause"],
                    user="65535:65535",
                )
            )
            self._write_cni()
            self._start_kube_proxy()
            self._start_kubelet()
        except BaseException:
            self.stop()
            raise

    def import_image(self, archive: Path) -> None:
        """Load an image archive (OCI or docker-archive) into the node's containerd."""
        self.ctr("images", "import", "--no-unpack=false", str(archive), timeout=600)

    def ctr(self, *args: str, timeout: float = 60) -> str:
        out = subprocess.run(
            ["ctr", "--address", str(self.socket), "--namespace", "k8s.io", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        if out.returncode != 0:
            raise ControlPlaneError(f"ctr {' '.join(args)}: {out.stderr.strip()}")
        return out.stdout

    # -- start -------------------------------------------------------------------------------

    def _start_containerd(self) -> None:
        d = self.dir / "containerd"
        d.mkdir()
        (self.dir / "cni" / "net.d").mkdir(parents=True)
        config = f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "{self.socket}"

[ttrpc]
  address = "{d / "ttrpc.sock"}"

[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{self.dir / "cni" / "net.d"}"
"""
        (d / "config.toml").write_text(config)
        proc = Process(
            "containerd",
            ["containerd", "--config", str(d / "config.toml"), "--log-level", "warn"],
            self.dir / "containerd.log",
        )
        proc.start()
        self._procs.append(proc)

        def ready() -> bool:
            if not self.socket.exists():
                return False
            out = subprocess.run(
                ["ctr", "--address", str(self.socket), "version"],
                capture_output=True,
                check=False,
                timeout=10,
            )
            return out.returncode == 0

        wait_until(ready, 60, "containerd", alive=proc, interval=0.2)

    def _write_cni(self) -> None:
        conf = {
            "cniVersion": "0.4.0",
            "name": "okra-node",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": BRIDGE,
                    "isGateway": True,
                    "ipMasq": True,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_CIDR}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                        "dataDir": str(self.dir / "cni" / "ipam"),
                    },
                }
            ],
        }
        (self.dir / "cni" / "net.d" / "10-okra-node.conflist").write_text(json.dumps(conf))

    def _kubeconfig(self) -> Path:
        return self.control_plane.kubeconfig(ADMIN)

    def _start_kube_proxy(self) -> None:
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": str(self._kubeconfig())},
            "hostnameOverride": self.name,
            "bindAddress": self.address,
            "mode": "iptables",
            "clusterCIDR": POD_CIDR,
            # route_localnet and the conntrack sysctls stay as the host has them
            "iptables": {"localhostNodePorts": False},
            "conntrack": {
                "maxPerCore": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
            "metricsBindAddress": "127.0.0.1:10249",
            "healthzBindAddress": "127.0.0.1:10256",
        }
        path = self.dir / "kube-proxy.yaml"
        path.write_text(json.dumps(config))
        proc = Process(
            "kube-proxy",
            [str(self._bins / "kube-proxy"), "--config", str(path), "--v", "1"],
            self.dir / "kube-proxy.log",
        )
        proc.start()
        self._procs.append(proc)

    def _start_kubelet(self) -> None:
        root = self.dir / "kubelet"
        root.mkdir()
        cp = self.control_plane
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": self.address,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True},
                "x509": {"clientCAFile": str(cp.dir / "ca.crt")},
            },
            "authorization": {"mode": "Webhook"},
            "podLogsDir": str(self.dir / "pod-logs"),
            "failSwapOn": False,
            "resolvConf": "/etc/resolv.conf",
            # nothing is evicted or garbage-collected for disk (the imported images stay)
            "evictionHard": {"memory.available": "50Mi"},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "imageMinimumGCAge": "24h",
            "serializeImagePulls": False,
            "nodeStatusReportFrequency": "10s",
            "syncFrequency": "10s",
            "fileCheckFrequency": "10s",
            "maxPods": 50,
            "registerNode": True,
        }
        path = self.dir / "kubelet.yaml"
        path.write_text(json.dumps(config))
        proc = Process(
            "kubelet",
            [
                str(self._bins / "kubelet"),
                "--config",
                str(path),
                "--kubeconfig",
                str(self._kubeconfig()),
                "--root-dir",
                str(root),
                "--cert-dir",
                str(root / "pki"),
                "--hostname-override",
                self.name,
                "--node-ip",
                self.address,
                "--v",
                "1",
            ],
            self.dir / "kubelet.log",
        )
        proc.start()
        self._procs.append(proc)

        def ready() -> bool:
            out = cp.kubectl(
                "get",
                "node",
                self.name,
                "-o",
                "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
                check=False,
            )
            return out.stdout.strip() == "True"

        wait_until(ready, 120, f"node {self.name} Ready", alive=proc, interval=0.5)

    # -- stop --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every Pod, kubelet, kube-proxy and containerd, and put the host back as it
        was before `start()`. Idempotent; never raises for what it cannot undo (`leftover`
        says what remains)."""
        if self.before is None:
            self._lock.close()
            return
        try:
            self._stop_pods()
            for name in ("kubelet", "kube-proxy"):
                with contextlib.suppress(KeyError):
                    self.process(name).stop()
            self._kube_proxy_cleanup()
            self._stop_containers()
            for proc in reversed(self._procs):
                proc.stop()
            self._procs.clear()
            restore_host(self.before, self.dir)
        finally:
            self.leftover = self.before.differences(HostState.read())
            self.before = None
            if self.dir != Path() and self.dir.exists() and not self.keep_dir:
                shutil.rmtree(self.dir, ignore_errors=True)
            STATE_FILE.unlink(missing_ok=True)
            self._lock.close()

    def _stop_pods(self) -> None:
        """Cordon the node and delete its Pods, until containerd runs no Pod's task."""
        kubelet = next((p for p in self._procs if p.name == "kubelet"), None)
        if kubelet is None or not kubelet.running() or not self.control_plane.server:
            return
        cp = self.control_plane
        cp.kubectl("cordon", self.name, check=False)
        cp.kubectl(
            "delete",
            "pods",
            "--all-namespaces",
            "--all",
            "--grace-period=1",
            "--wait=false",
            check=False,
        )

        def no_tasks() -> bool:
            try:
                return not self.ctr("tasks", "ls", "-q", timeout=10).split()
            except (ControlPlaneError, subprocess.TimeoutExpired):
                return False

        with contextlib.suppress(TimeoutError, RuntimeError):
            wait_until(no_tasks, 60, "the node's Pods to stop", interval=0.5)

    def _kube_proxy_cleanup(self) -> None:
        if self._bins == Path():
            return
        subprocess.run(
            [str(self._bins / "kube-proxy"), "--cleanup", "--v", "0"],
            capture_output=True,
            check=False,
            timeout=60,
        )

    def _stop_containers(self) -> None:
        """Kill and remove whatever containerd still runs (the Pods kubelet did not stop)."""
        if not self.socket.exists():
            return
        with contextlib.suppress(ControlPlaneError, subprocess.TimeoutExpired):
            for task in self.ctr("tasks", "ls", "-q", timeout=10).split():
                with contextlib.suppress(ControlPlaneError, subprocess.TimeoutExpired):
                    self.ctr("tasks", "kill", "-s", "SIGKILL", task, timeout=10)
                    time.sleep(0.2)
                    self.ctr("tasks", "delete", "-f", task, timeout=10)
            for container in self.ctr("containers", "ls", "-q", timeout=10).split():
                with contextlib.suppress(ControlPlaneError, subprocess.TimeoutExpired):
                    self.ctr("containers", "delete", container, timeout=10)


def node_control_plane(
    name: str = "node",
    *,
    assets: str | None = None,
    node_assets: str | None = None,
    base_dir: str | None = None,
) -> ControlPlane:
    """A control plane a `Node` joins: at this host's address, with kube-scheduler from
    `hack/build-node.sh`'s binaries (not started; `with` it, then `with Node(cp)`)."""
    return ControlPlane(
        name=name,
        assets=assets,
        base_dir=base_dir,
        node_address=host_address(),
        scheduler=node_binaries_dir(node_assets) / "kube-scheduler",
    )
