"""A real node for a harness control plane: containerd + runc + the bridge CNI + kubelet +
kube-proxy on this host, so that Pods, Deployments, Services and Jobs run for real.

It runs as root only (runc needs it; rootless runc does not work on this layout) and changes
host state while it runs: kubelet sets sysctls (`vm.overcommit_memory`, `kernel.panic`,
`kernel.panic_on_oops`...), kube-proxy and the bridge plugin add `KUBE-*` and `CNI-*`
iptables chains and turn on `ip_forward`, kubelet makes a `kubepods` cgroup tree, the CNI
plugin a bridge. `Node.stop()` always puts all of it back as it found it (`HostState`, read
before start and again after stop: `Node.leftover` lists any difference), touching only the
chains, links and cgroups the node made. A node whose harness was killed before it could
stop is undone by the next node to start (`STATE_FILE`, `Node.recovered`). One node runs on
a host at a time (a lock file: kubelet's ports 10248/10250 are fixed).

Everything else lives under one temporary directory: containerd's root, state and socket,
kubelet's root and Pod logs, the CNI configuration and its address leases. No registry is
reachable, so images come in as archives (`import_image`): the Pod sandbox's pause image is
written here (`oci_archive`) around `hack/build-node.sh`'s pause, and images the project builds
with buildah are exported with `buildah_archive`; Pods use them with `imagePullPolicy: Never`
(or IfNotPresent).

Synchronous on purpose, like `okra_testkit.envtest`: it runs in fixtures, never in okra.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okra_testkit.envtest.binaries import cached_build
from okra_testkit.envtest.controlplane import ADMIN, ControlPlane
from okra_testkit.envtest.process import ControlPlaneError, Process, Processes, wait_until

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
BRIDGE = "okra-node0"
PAUSE_IMAGE = "localhost/okra-pause:1"
BUSYBOX_IMAGE = "localhost/okra-busybox:1"
LOCK_FILE = Path(tempfile.gettempdir()) / "okra-node.lock"
STATE_FILE = Path(tempfile.gettempdir()) / "okra-node.state.json"
"""The host's state before the running node started, and the node's directory: a node whose
harness was killed before it could stop is undone by the next one to start."""
SYSCTLS = (
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.ipv4.ip_forward",
    "net.ipv4.conf.all.route_localnet",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
)
"""What kubelet, kube-proxy and the bridge plugin may set (read before, put back after)."""
OURS = ("KUBE-", "CNI-")
"""The iptables chains a node makes: the only ones its teardown removes."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
_NETNS_DIR = Path("/run/netns")


class NodeUnavailableError(RuntimeError):
    """This host cannot run a node (not root, a tool or a binary missing): the message says
    what and how to get it."""


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


# -- host state ------------------------------------------------------------------------------


def _read_sysctls() -> dict[str, str]:
    values: dict[str, str] = {}
    for name in SYSCTLS:
        path = Path("/proc/sys") / name.replace(".", "/")
        with contextlib.suppress(OSError):
            values[name] = path.read_text().strip()
    return values


def _rules(family: str) -> dict[str, list[str]]:
    """`iptables-save` (or ip6tables-save) by table, without counters: each table's chain
    declarations (`:CHAIN POLICY`) and rules in order. A table that only has its built-in
    chains, empty and accepting, is left out: it filters nothing, as no table does, and
    iptables-nft makes one on first use and has no way to delete it."""
    out = subprocess.run(
        [f"{family}-save"], capture_output=True, text=True, check=False, timeout=60
    ).stdout
    tables: dict[str, list[str]] = {}
    current: list[str] = []
    for line in out.splitlines():
        if line.startswith("*"):
            current = tables.setdefault(line[1:], [])
        elif line.startswith(":"):
            current.append(" ".join(line.split()[:2]))
        elif line.startswith("-"):
            current.append(line)
    return {
        table: lines
        for table, lines in tables.items()
        if not all(line.startswith(":") and line.endswith(" ACCEPT") for line in lines)
    }


def _chain(declaration: str) -> str:
    return declaration[1:].split()[0]


@dataclass(frozen=True)
class HostState:
    """What a node may change on the host: sysctls, iptables rules (IPv4 and IPv6), network
    links, network namespaces and the top-level cgroups."""

    sysctls: dict[str, str]
    iptables: dict[str, dict[str, list[str]]]
    links: frozenset[str]
    netns: frozenset[str]
    cgroups: frozenset[str]

    @classmethod
    def read(cls) -> HostState:
        return cls(
            sysctls=_read_sysctls(),
            iptables={f: _rules(f) for f in ("iptables", "ip6tables")},
            links=frozenset(p.name for p in Path("/sys/class/net").iterdir()),
            netns=frozenset(p.name for p in _NETNS_DIR.glob("*")),
            cgroups=frozenset(  # v1: the hierarchies' top cgroups; v2: two levels alike
                str(p.relative_to(CGROUP_ROOT))
                for top in CGROUP_ROOT.iterdir()
                if top.is_dir()
                for p in (top, *top.iterdir())
                if p.is_dir()
            ),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "sysctls": self.sysctls,
            "iptables": self.iptables,
            "links": sorted(self.links),
            "netns": sorted(self.netns),
            "cgroups": sorted(self.cgroups),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HostState:
        return cls(
            sysctls=dict(data["sysctls"]),
            iptables={f: {t: list(r) for t, r in v.items()} for f, v in data["iptables"].items()},
            links=frozenset(data["links"]),
            netns=frozenset(data["netns"]),
            cgroups=frozenset(data["cgroups"]),
        )

    def differences(self, now: HostState) -> list[str]:
        """What differs in `now` from this state, one line each (empty: as before)."""
        out = [
            f"sysctl {k}: {self.sysctls.get(k)} -> {now.sysctls.get(k)}"
            for k in sorted(set(self.sysctls) | set(now.sysctls))
            if self.sysctls.get(k) != now.sysctls.get(k)
        ]
        for family in sorted(set(self.iptables) | set(now.iptables)):
            was, is_ = self.iptables.get(family, {}), now.iptables.get(family, {})
            for table in sorted(set(was) | set(is_)):
                a, b = was.get(table, []), is_.get(table, [])
                if a != b:
                    added = [r for r in b if r not in a]
                    removed = [r for r in a if r not in b]
                    out.append(f"{family} {table}: added {added}, removed {removed}")
        for what, was_set, now_set in (
            ("link", self.links, now.links),
            ("netns", self.netns, now.netns),
            ("cgroup", self.cgroups, now.cgroups),
        ):
            out += [f"{what} {x} added" for x in sorted(now_set - was_set)]
            out += [f"{what} {x} removed" for x in sorted(was_set - now_set)]
        return out


def _write_sysctl(name: str, value: str) -> None:
    with contextlib.suppress(OSError):
        (Path("/proc/sys") / name.replace(".", "/")).write_text(value)


def _remove_our_chains(before: HostState) -> None:
    """Delete the `KUBE-*` / `CNI-*` chains that were not there before, and the rules that
    jump to them: nothing else."""
    for family in ("iptables", "ip6tables"):
        was = before.iptables.get(family, {})
        for table, lines in _rules(family).items():
            known = set(was.get(table, []))
            new_chains = [
                _chain(line)
                for line in lines
                if line.startswith(":") and _chain(line).startswith(OURS) and line not in known
            ]
            if not new_chains:
                continue
            targets = set(new_chains)
            for line in lines:
                if not line.startswith("-A "):
                    continue
                parts = shlex.split(line)  # iptables-save quotes comments
                jump = parts[parts.index("-j") + 1] if "-j" in parts else None
                if parts[1] not in targets and jump in targets:
                    _ipt(family, table, ["-D", *parts[1:]])
            for chain in new_chains:
                _ipt(family, table, ["-F", chain])
            for chain in new_chains:
                _ipt(family, table, ["-X", chain])


def _ipt(family: str, table: str, args: list[str]) -> None:
    argv = [family, "-w", "5", "-t", table, *args]
    subprocess.run(argv, capture_output=True, check=False, timeout=30)


def _remove_cgroup_tree(path: Path) -> None:
    """rmdir a cgroup and its children, deepest first (a cgroup directory's files go with it)."""
    if not path.is_dir():
        return
    for child in sorted((p for p in path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            child.rmdir()
    with contextlib.suppress(OSError):
        path.rmdir()


def _kill_shims(directory: Path) -> None:
    """containerd's shims outlive it: kill the ones serving a containerd in `directory`."""
    mark = str(directory).encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"containerd-shim" in argv and mark in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(proc.name), 9)


def _kill_cgroup_tree(path: Path) -> None:
    """SIGKILL every process in a cgroup and its children (containers a dead shim left)."""
    if not path.is_dir():
        return
    for procs in path.rglob("cgroup.procs"):
        with contextlib.suppress(OSError):
            for pid in procs.read_text().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), 9)


def _kubepods_trees() -> list[Path]:
    """kubelet's cgroup tree in each v1 hierarchy, and in the unified (v2) one."""
    return [d / "kubepods" for d in (CGROUP_ROOT, *CGROUP_ROOT.iterdir()) if d.is_dir()]


def restore_host(before: HostState, directory: Path) -> None:
    """Undo what a node living in `directory` changed on the host since `before`: its shims
    and any container still running, mounts under `directory`, the network namespaces and the
    bridge it made, its `KUBE-*`/`CNI-*` chains, the `kubepods` cgroups, the sysctls."""
    _kill_shims(directory)
    kubepods = "kubepods" not in {c.split("/", 1)[-1] for c in before.cgroups}
    if kubepods:
        for tree in _kubepods_trees():
            _kill_cgroup_tree(tree)
    for point in reversed(_mounts_under(directory)):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    for ns in {p.name for p in _NETNS_DIR.glob("*")} - before.netns:
        if ns.startswith("cni-"):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, check=False)
    if BRIDGE not in before.links and Path(f"/sys/class/net/{BRIDGE}").exists():
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)
    _remove_our_chains(before)
    if kubepods:
        for tree in _kubepods_trees():
            _remove_cgroup_tree(tree)
    now = _read_sysctls()
    for name, value in before.sysctls.items():
        if now.get(name) != value:
            _write_sysctl(name, value)


def _recover_killed_node() -> list[str]:
    """Undo a node whose harness died before stopping it (its `STATE_FILE` is still there):
    what was left, one line each (empty when no node was left)."""
    try:
        saved = json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return []
    before, directory = HostState.from_json(saved["before"]), Path(saved["dir"])
    left = before.differences(HostState.read())
    restore_host(before, directory)
    shutil.rmtree(directory, ignore_errors=True)
    STATE_FILE.unlink(missing_ok=True)
    return [f"a node in {directory} was not stopped", *left]


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root.resolve())
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            out.append(point)
    return out


# -- images ----------------------------------------------------------------------------------


def oci_archive(
    path: Path,
    name: str,
    files: Mapping[str, bytes | Path],
    *,
    symlinks: Mapping[str, str] | None = None,
    entrypoint: Sequence[str] = (),
    cmd: Sequence[str] = (),
    user: str = "",
) -> Path:
    """Write a one-layer OCI image archive named `name` (what `ctr images import` reads):
    `files` (image path -> contents or a host file, executable) and `symlinks`."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({str(Path(p).parent) for p in [*files, *(symlinks or {})]} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for image_path, content in sorted(files.items()):
            data = content.read_bytes() if isinstance(content, Path) else content
            info = tarfile.TarInfo(image_path)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for link, target in sorted((symlinks or {}).items()):
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    layer_bytes = layer.getvalue()
    blobs: dict[str, bytes] = {}

    def blob(data: bytes) -> tuple[str, int]:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest, len(data)

    layer_digest, layer_size = blob(layer_bytes)
    config: dict[str, object] = {"Env": ["PATH=/bin"]}
    if entrypoint:
        config["Entrypoint"] = list(entrypoint)
    if cmd:
        config["Cmd"] = list(cmd)
    if user:
        config["User"] = user
    config_digest, config_size = blob(
        json.dumps(
            {
                "architecture": "amd64",
                "os": "linux",
                "config": config,
                "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            }
        ).encode()
    )
    manifest_digest, manifest_size = blob(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": config_digest,
                    "size": config_size,
                },
                "layers": [
                    {
                        "mediaType": "application/vnd.oci.image.layer.v1.tar",
                        "digest": layer_digest,
                        "size": layer_size,
                    }
                ],
            }
        ).encode()
    )
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": manifest_digest,
                "size": manifest_size,
                "platform": {"architecture": "amd64", "os": "linux"},
                "annotations": {
                    "io.containerd.image.name": name,
                    "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
                },
            }
        ],
    }
    with tarfile.open(path, "w") as out:
        entries = {
            "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
            "index.json": json.dumps(index).encode(),
            **{f"blobs/sha256/{d.split(':', 1)[1]}": b for d, b in blobs.items()},
        }
        for entry, data in entries.items():
            info = tarfile.TarInfo(entry)
            info.size, info.mode = len(data), 0o644
            out.addfile(info, io.BytesIO(data))
    return path


def busybox_archive(path: Path, name: str = BUSYBOX_IMAGE) -> Path:
    """An image of Debian's busybox-static (`/bin/sh` and its applets): for Jobs and small
    Pods in tests."""
    busybox = Path("/bin/busybox")
    if not busybox.exists():
        raise NodeUnavailableError(
            "busybox-static is not installed (apt-get install busybox-static)"
        )
    applets = ("sh", "echo", "cat", "sleep", "wget", "nc", "httpd", "hostname", "mkdir", "env")
    return oci_archive(
        path,
        name,
        {"bin/busybox": busybox},
        symlinks={f"bin/{a}": "busybox" for a in applets},
        cmd=["sh"],
    )


def buildah_archive(image: str, path: Path) -> Path:
    """`image` from buildah's storage as a docker-archive `import_image` loads, by its name."""
    subprocess.run(
        ["buildah", "push", "--quiet", image, f"docker-archive:{path}:{image}"],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return path


# -- the node --------------------------------------------------------------------------------


@contextlib.contextmanager
def _host_lock(timeout: float) -> Iterator[None]:
    fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ControlPlaneError(
                        f"another node holds {LOCK_FILE} (one node per host)"
                    ) from None
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
        self._lock.enter_context(_host_lock(self.lock_timeout))
        try:
            self.recovered = _recover_killed_node()
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
