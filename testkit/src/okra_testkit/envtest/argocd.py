"""A real Argo CD on a local control plane, for tests and demos.

`ArgoCD` installs Argo CD into a management `ControlPlane` (its CRDs from the pinned module,
the `argocd` namespace, `argocd-cm`, `argocd-secret`, `argocd-rbac-cm`, the `default`
AppProject) and runs the components that deploy applications as processes on free loopback
ports: Redis, repo-server, application-controller and applicationset-controller, each with
`--kubeconfig` pointing at the management plane. No API server or UI: nothing here needs them.

`GitRepo` is a local git repository that tests commit to; Argo CD reads it by its `file://`
URL, as Argo CD's own end-to-end suite does. Workload clusters are further control planes,
registered with `ArgoCD.register_cluster` by an Argo CD cluster Secret (bearer token + CA), or
by any Secret a test or okra's ClusterSet writes.

The binaries: `argocd` (one binary for every component, chosen by the name it runs as) and its
CRDs from `OKRA_ARGOCD` (the directory `hack/build-argocd.sh` prints) or the newest build in
okra's cache (`OKRA_ARGOCD_CRDS`, a directory `hack/argocd-crds.sh` prints, puts another
release's CRDs in their place: the compatibility matrix's cells where only that release's
schemas are tried, with no Argo CD process running); `redis-server` from `OKRA_REDIS`
(`hack/redis.sh`), `PATH` or the cache. The components run as symlinks named after them in a
private `bin/` that also holds `argocd-k8s-auth` and comes first on their PATH, so clusters
with `awsAuthConfig` (EKS tokens) work as they do in a real installation.

Like `ControlPlane`, the harness is synchronous: it runs in fixtures and before a demo's event
loop, never inside a controller. Reconciliation is made fast for tests (a few seconds instead
of three minutes) through Argo CD's own settings, never by patching it.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from okra_testkit.envtest.controlplane import ADMIN, ControlPlane
from okra_testkit.envtest.process import Process, Processes

ARGOCD_ENV = "OKRA_ARGOCD"
ARGOCD_CRDS_ENV = "OKRA_ARGOCD_CRDS"
REDIS_ENV = "OKRA_REDIS"
COMPONENTS = (
    "argocd-repo-server",
    "argocd-application-controller",
    "argocd-applicationset-controller",
)
"""The Argo CD processes the harness runs, by the name each runs as."""
SECRET_TYPE_LABEL = "argocd.argoproj.io/secret-type"


def _cache_root() -> Path:
    return Path(
        os.environ.get("OKRA_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "okra"
    )


def _newest(candidates: Sequence[Path]) -> Path | None:
    return max(candidates, key=lambda p: p.stat().st_mtime) if candidates else None


@dataclass(frozen=True)
class ArgoCDBinaries:
    argocd: Path
    crds: Path
    helpers: Path
    """The scripts Argo CD's image puts beside the binary (git-verify-wrapper.sh, ...)."""
    redis_server: Path


def find_argocd(directory: str | os.PathLike[str] | None = None) -> ArgoCDBinaries:
    """`argocd` and its CRDs from `directory`, `$OKRA_ARGOCD` or the newest cached build;
    `redis-server` from `$OKRA_REDIS`, `PATH` or the cache. FileNotFoundError says how to
    get what is missing."""
    root = _cache_root()
    where = directory if directory is not None else os.environ.get(ARGOCD_ENV)
    build: Path | None
    if where:
        build = Path(where)
    else:
        build = _newest(
            [d for d in (root / "bin").glob("argocd-*") if os.access(d / "argocd", os.X_OK)]
        )
    if (
        build is None
        or not os.access(build / "argocd", os.X_OK)
        or not (build / "bin" / "git-verify-wrapper.sh").exists()
    ):
        raise FileNotFoundError(
            f"argocd not found in {build or 'okra cache'}; build it with "
            f"`hack/build-argocd.sh` (or `make argocd`) and set {ARGOCD_ENV} to the directory "
            "it prints"
        )
    redis_env = os.environ.get(REDIS_ENV)
    redis: Path | None = Path(redis_env) if redis_env else None
    if redis is None:
        on_path = shutil.which("redis-server")
        redis = (
            Path(on_path)
            if on_path
            else _newest(
                [p for p in (root / "redis").glob("*/bin/redis-server") if os.access(p, os.X_OK)]
            )
        )
    if redis is None or not os.access(redis, os.X_OK):
        raise FileNotFoundError(
            f"redis-server not found; fetch it with `hack/redis.sh` and set {REDIS_ENV} to the "
            "path it prints"
        )
    crds = Path(os.environ.get(ARGOCD_CRDS_ENV) or build / "crds")
    return ArgoCDBinaries(
        argocd=build / "argocd", crds=crds, helpers=build / "bin", redis_server=redis
    )


class GitRepo:
    """A local git repository with a `main` branch that tests commit files to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._git("init", "--quiet", "--initial-branch", "main", str(path), cwd=path.parent)
        self._git("config", "user.name", "okra test")
        self._git("config", "user.email", "test@okra.invalid")
        self._git("config", "commit.gpgsign", "false")
        self._git("commit", "--quiet", "--allow-empty", "-m", "empty")

    @property
    def url(self) -> str:
        """What an Application's `repoURL` says."""
        return self.path.as_uri()

    def commit(self, files: Mapping[str, str | None], message: str = "update") -> str:
        """Write (or, for None, delete) files by path relative to the repository root, commit
        them and return the new revision."""
        for rel, text in files.items():
            target = self.path / rel
            if text is None:
                if target.exists():
                    self._git("rm", "--quiet", "-r", rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            self._git("add", rel)
        self._git("commit", "--quiet", "--allow-empty", "-m", message)
        return self.head()

    def head(self) -> str:
        return self._git("rev-parse", "HEAD").strip()

    def _git(self, *args: str, cwd: Path | None = None) -> str:
        env = {
            **os.environ,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        out = subprocess.run(
            ["git", *args],
            cwd=cwd or self.path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if out.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout


@dataclass
class ArgoCD(Processes):
    """Argo CD installed into `plane` and running as processes; a context manager.

    `resync` is Argo CD's reconciliation timeout (how often Applications are compared with
    git, and how long a resolved git revision is cached), `ARGOCD_RECONCILIATION_TIMEOUT` in
    a real installation (default three minutes there)."""

    plane: ControlPlane
    namespace: str = "argocd"
    directory: str | None = None
    base_dir: str | None = None
    keep_dir: bool = False
    resync: str = "3s"
    applicationset_requeue: str = "3s"
    env: Mapping[str, str] = field(default_factory=dict)
    """Extra environment for the Argo CD processes, e.g. AWS credentials, region and
    `AWS_ENDPOINT_URL` for `argocd-k8s-auth aws` (EKS tokens for `awsAuthConfig` clusters)."""
    bins: ArgoCDBinaries | None = None
    dir: Path = field(init=False, default=Path())
    repo_server: str = field(init=False, default="")
    redis: str = field(init=False, default="")
    git: GitRepo | None = field(init=False, default=None)
    _procs: list[Process] = field(init=False, default_factory=list)
    _env: dict[str, str] = field(init=False, default_factory=dict)

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        if self.bins is None:
            self.bins = find_argocd(self.directory)
        self.dir = Path(tempfile.mkdtemp(prefix="okra-argocd-", dir=self.base_dir))
        try:
            self._prepare_dirs()
            self.git = GitRepo(self.dir / "git" / "apps")
            self.install()
            self._start_redis()
            self._start_repo_server()
            self._start_application_controller()
            self._start_applicationset_controller()
        except BaseException:
            self.stop()
            raise

    # -- installation ------------------------------------------------------

    def install(self) -> None:
        """Argo CD's CRDs, namespace, settings and default project on the plane (idempotent:
        server-side apply)."""
        assert self.bins is not None
        self.plane.install_crds([self.bins.crds])
        docs: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}},
            self._configmap("argocd-cm", {}),
            self._configmap("argocd-rbac-cm", {}),
            self._configmap("argocd-cmd-params-cm", {}),
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": self._meta("argocd-secret"),
                "type": "Opaque",
                "stringData": {"server.secretkey": secrets.token_urlsafe(32)},
            },
            {
                "apiVersion": "argoproj.io/v1alpha1",
                "kind": "AppProject",
                "metadata": self._meta("default"),
                "spec": {
                    "sourceRepos": ["*"],
                    "destinations": [{"server": "*", "namespace": "*"}],
                    "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                },
            },
        ]
        self.apply(docs)

    def apply(self, docs: Sequence[Mapping[str, Any]]) -> None:
        """Server-side apply objects to the management plane as admin."""
        self.plane.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager",
            "okra-envtest",
            "-f",
            "-",
            input_text="---\n".join(yaml.safe_dump(dict(d)) for d in docs),
        )

    def register_cluster(
        self,
        name: str,
        plane: ControlPlane,
        labels: Mapping[str, str] | None = None,
        *,
        user: str = ADMIN,
        secret_name: str | None = None,
    ) -> str:
        """Register a workload control plane with Argo CD by a cluster Secret (bearer token
        of `user` + the plane's CA), as `argocd cluster add` would. Returns the server URL."""
        self.apply([cluster_secret(name, plane, self.namespace, labels, user, secret_name)])
        return plane.server

    def unregister_cluster(self, name: str) -> None:
        self.plane.kubectl(
            "delete", "secret", "-n", self.namespace, f"cluster-{name}", "--ignore-not-found"
        )

    # -- processes -----------------------------------------------------------

    def _prepare_dirs(self) -> None:
        assert self.bins is not None
        bin_dir = self.dir / "bin"
        bin_dir.mkdir()
        for name in (*COMPONENTS, "argocd-k8s-auth", "argocd"):
            (bin_dir / name).symlink_to(self.bins.argocd)
        for helper in sorted(self.bins.helpers.glob("*")):
            (bin_dir / helper.name).symlink_to(helper)
        for sub in ("tmp", "home", "ssh", "tls", "gpg", "git"):
            (self.dir / sub).mkdir()
        (self.dir / "ssh" / "ssh_known_hosts").write_text("")
        self._env = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "HOME": str(self.dir / "home"),
            "TMPDIR": str(self.dir / "tmp"),
            # applicationset-controller reads its API server from controller-runtime's config,
            # which knows KUBECONFIG (its --kubeconfig flag is accepted and ignored).
            "KUBECONFIG": str(self.plane.kubeconfig(ADMIN)),
            "ARGOCD_RECONCILIATION_TIMEOUT": self.resync,
            "ARGOCD_RECONCILIATION_JITTER": "0s",
            "ARGOCD_GPG_ENABLED": "false",
            "ARGOCD_GNUPGHOME": str(self.dir / "gpg"),
            "ARGOCD_SSH_DATA_PATH": str(self.dir / "ssh"),
            "ARGOCD_TLS_DATA_PATH": str(self.dir / "tls"),
            # The git credential socket is /tmp/reposerver-ask-pass.sock by default: one per
            # harness, so that several can run at once.
            "ARGOCD_ASK_PASS_SOCK": str(self.dir / "askpass.sock"),
            "GIT_CONFIG_NOSYSTEM": "1",
            **self.env,
        }

    def _start_redis(self) -> None:
        assert self.bins is not None
        redis = self.bins.redis_server

        def argv(port: int) -> list[str]:
            self.redis = f"127.0.0.1:{port}"
            return [
                str(redis),
                "--bind",
                "127.0.0.1",
                "--port",
                str(port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.dir / "tmp"),
                "--protected-mode",
                "no",
            ]

        self._start_on_free_ports(
            "redis-server", argv, lambda port: lambda: _redis_ping(port), 30, 1, self._env
        )

    def _component(self, name: str) -> str:
        return str(self.dir / "bin" / name)

    def _start_repo_server(self) -> None:
        def argv(port: int, metrics: int) -> list[str]:
            self.repo_server = f"127.0.0.1:{port}"
            return [
                self._component("argocd-repo-server"),
                "--address",
                "127.0.0.1",
                "--port",
                str(port),
                "--metrics-address",
                "127.0.0.1",
                "--metrics-port",
                str(metrics),
                "--disable-tls",
                "--client-ca-path=",
                "--redis",
                self.redis,
                "--loglevel",
                "info",
                "--logformat",
                "text",
            ]

        self._start_on_free_ports(
            "argocd-repo-server",
            argv,
            lambda _p, metrics: lambda: _http_ok(f"http://127.0.0.1:{metrics}/metrics"),
            60,
            env=self._env,
        )

    def _start_application_controller(self) -> None:
        kubeconfig = str(self.plane.kubeconfig(ADMIN))

        def argv(metrics: int, _unused: int) -> list[str]:
            return [
                self._component("argocd-application-controller"),
                "--kubeconfig",
                kubeconfig,
                "--namespace",
                self.namespace,
                "--repo-server",
                self.repo_server,
                "--repo-server-plaintext",
                "--redis",
                self.redis,
                "--metrics-port",
                str(metrics),
                "--status-processors",
                "4",
                "--operation-processors",
                "4",
                "--self-heal-timeout-seconds",
                "1",
                "--loglevel",
                "info",
                "--logformat",
                "text",
            ]

        self._start_on_free_ports(
            "argocd-application-controller",
            argv,
            lambda metrics, _u: lambda: _http_ok(f"http://127.0.0.1:{metrics}/healthz"),
            60,
            env=self._env,
        )

    def _start_applicationset_controller(self) -> None:
        kubeconfig = str(self.plane.kubeconfig(ADMIN))

        def argv(metrics: int, probe: int, webhook: int) -> list[str]:
            return [
                self._component("argocd-applicationset-controller"),
                "--kubeconfig",
                kubeconfig,
                "--namespace",
                self.namespace,
                "--argocd-repo-server",
                self.repo_server,
                "--repo-server-plaintext",
                "--metrics-addr",
                f"127.0.0.1:{metrics}",
                "--probe-addr",
                f"127.0.0.1:{probe}",
                "--webhook-addr",
                f"127.0.0.1:{webhook}",
                "--enable-leader-election=false",
                "--enable-progressive-syncs",
                "--policy",
                "sync",
                "--loglevel",
                "info",
                "--logformat",
                "text",
            ]

        self._start_on_free_ports(
            "argocd-applicationset-controller",
            argv,
            # It registers no health checks; its metrics endpoint answers once it runs.
            lambda metrics, _p, _w: lambda: _http_ok(f"http://127.0.0.1:{metrics}/metrics"),
            60,
            ports=3,
            env=self._env,
        )

    def _meta(self, name: str) -> dict[str, Any]:
        return {
            "name": name,
            "namespace": self.namespace,
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        }

    def _configmap(self, name: str, data: Mapping[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": self._meta(name),
            "data": dict(data),
        }


def cluster_secret(
    name: str,
    plane: ControlPlane,
    namespace: str = "argocd",
    labels: Mapping[str, str] | None = None,
    user: str = ADMIN,
    secret_name: str | None = None,
) -> dict[str, Any]:
    """An Argo CD cluster Secret for a control plane: bearer token of `user` and its CA."""
    config = {
        "bearerToken": plane.token(user),
        "tlsClientConfig": {"caData": base64.b64encode(plane.ca_pem).decode(), "insecure": False},
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name or f"cluster-{name}",
            "namespace": namespace,
            "labels": {SECRET_TYPE_LABEL: "cluster", **(labels or {})},
        },
        "type": "Opaque",
        "stringData": {"name": name, "server": plane.server, "config": json.dumps(config)},
    }


def _redis_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False
