"""The host state a node changes while it runs, read before it starts and put back after it
stops (`okra_testkit.node`): sysctls, `KUBE-*`/`CNI-*` iptables chains, network namespaces,
the CNI bridge, kubelet's `kubepods` cgroups, containerd's shims and mounts. `restore_host`
touches only what a node made; `HostState.differences` says what is left.

Synchronous, like the rest of the node harness.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BRIDGE = "okra-node0"
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


def recover_killed_node() -> list[str]:
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
