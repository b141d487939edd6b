"""Find server processes that belong to one run of a harness.

Children inherit the harness's environment, so a marker variable set once
(for example per test run) identifies every etcd, kube-apiserver,
kube-controller-manager, moto_server, Prometheus, Redis and Argo CD component
that run started, wherever it was started from: pytest-xdist workers, nested
runs or demos."""

from __future__ import annotations

from pathlib import Path

SERVER_NAMES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "moto_server",
    "prometheus",
    "redis-server",
    "argocd-repo-server",
    "argocd-application-controller",
    "argocd-applicationset-controller",
)


def _is_server(cmdline: list[str], extra: tuple[str, ...] = ()) -> bool:
    # A server may rewrite its title into argv[0] ("redis-server 127.0.0.1:6379").
    return any(
        Path(arg.split(" ", 1)[0]).name in SERVER_NAMES or arg in extra for arg in cmdline[:3]
    )


def leftover_servers(env_name: str, value: str, extra: tuple[str, ...] = ()) -> list[str]:
    """`pid:name` of every live server process whose environment has
    `env_name=value`; `extra` adds program names (e.g. a `python -m` module) to look for."""
    marker = f"{env_name}={value}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
            cmdline = [
                a.decode(errors="replace")
                for a in (proc / "cmdline").read_bytes().split(b"\0")
                if a
            ]
            state = (proc / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if marker in env and state != "Z" and _is_server(cmdline, extra):
            found.append(f"{proc.name}:{Path(cmdline[0]).name} {' '.join(cmdline[1:2])}")
    return found
