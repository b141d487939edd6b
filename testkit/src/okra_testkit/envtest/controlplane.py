"""Start and stop one local control plane: etcd, kube-apiserver and
kube-controller-manager, with TLS, token users, RBAC and service-account keys; made
ready for a node (`node_address`), also kube-scheduler and every controller."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import secrets
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from okra_testkit.envtest.binaries import Binaries, find_binaries
from okra_testkit.envtest.certs import client_certificate, make_pki
from okra_testkit.envtest.process import ControlPlaneError, Process, Processes, wait_until

_Check = Callable[[], bool]
# libyaml's parser and emitter when PyYAML has them (CRDs are large: the pure-Python ones
# take about 0.1 s a file)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

ADMIN = "admin"
UNPRIVILEGED = "alice"
SERVICE_CIDR = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
"""The `kubernetes` Service's address (the first of `SERVICE_CIDR`): in-cluster config's."""


@dataclass(frozen=True)
class User:
    """A static token user. `system:masters` in `groups` makes a cluster admin."""

    name: str
    groups: tuple[str, ...] = ()
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)


@dataclass
class ControlPlane(Processes):
    """A real kube-apiserver + etcd (+ kube-controller-manager) on loopback.

    Use as a context manager, or call `start()` and `stop()`. Everything lives in
    one temporary directory (certificates, etcd data, logs, kubeconfigs), which
    `stop()` removes unless `keep_dir` is set; every child process dies with
    the harness.
    """

    name: str = "okra"
    assets: str | None = None
    base_dir: str | None = None
    keep_dir: bool = False
    controller_manager: bool = True
    extra_users: Sequence[User] = ()
    apiserver_args: Sequence[str] = ()
    token_webhook: str | None = None
    """URL of a TokenReview webhook (`authentication.k8s.io/v1`, http or https): bearer tokens
    that no static user has are sent there (`--authentication-token-webhook-config-file`)."""
    token_webhook_ca: bytes | None = field(default=None, repr=False)
    """PEM CA for an https `token_webhook`."""
    token_webhook_cache_ttl: str = "2m"
    """How long kube-apiserver caches the webhook's answers (its own default)."""
    node_address: str | None = None
    """A host address a node (`okra_testkit.node.Node`) joins the plane from. Set, the plane
    is one Pods run on: kube-apiserver listens on every address and advertises this one (the
    `kubernetes` Service's endpoint), its certificate is valid for it and for the Service's
    address (in-cluster config), ServiceAccount admission mounts tokens, and it can reach the
    kubelet (a client certificate); kube-controller-manager runs every controller (Deployments,
    Jobs, ServiceAccounts and their tokens, the root CA ConfigMap...) and `scheduler` runs."""
    scheduler: str | os.PathLike[str] | None = None
    """kube-scheduler's path (`hack/build-node.sh` builds it), run with `node_address`."""
    users: dict[str, User] = field(init=False, default_factory=dict)
    dir: Path = field(init=False, default=Path())
    server: str = field(init=False, default="")
    ca_pem: bytes = field(init=False, default=b"", repr=False)
    etcd_url: str = field(init=False, default="")
    _procs: list[Process] = field(init=False, default_factory=list)
    _bins: Binaries | None = field(init=False, default=None)
    _pki_paths: dict[str, Path] = field(init=False, default_factory=dict)
    _crds: dict[str, tuple[str, str, str]] = field(init=False, default_factory=dict)
    """name -> (hash of the manifest applied, uid, resourceVersion once Established)"""

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        self._bins = find_binaries(self.assets)
        self.dir = Path(tempfile.mkdtemp(prefix=f"okra-{self.name}-", dir=self.base_dir))
        try:
            self._write_pki_and_users()
            self._start_etcd()
            self._start_apiserver()
            self._write_kubeconfigs()
            if self.controller_manager:
                self._start_controller_manager()
            if self.node_address:
                self._start_scheduler()
        except BaseException:
            self.stop()
            raise

    def restart_apiserver(self) -> None:
        """Stop and start kube-apiserver on the same port and etcd (for watch tests)."""
        api = self.process("kube-apiserver")
        api.stop()
        api.start()
        wait_until(self._ready, 60, "kube-apiserver /readyz", alive=api)

    def stop_apiserver(self) -> None:
        self.process("kube-apiserver").stop()

    def start_apiserver(self) -> None:
        api = self.process("kube-apiserver")
        api.start()
        wait_until(self._ready, 60, "kube-apiserver /readyz", alive=api)

    # -- access --------------------------------------------------------------

    def kubeconfig(self, user: str = ADMIN) -> Path:
        """Path of a kubeconfig that authenticates as `user`."""
        path = self.dir / f"{user}.kubeconfig"
        if not path.exists():
            raise KeyError(f"no such user {user!r}; known: {sorted(self.users)}")
        return path

    def token(self, user: str = ADMIN) -> str:
        return self.users[user].token

    def kubectl(
        self, *args: str, user: str = ADMIN, check: bool = True, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl as `user`; with `check`, a failure raises ControlPlaneError
        carrying kubectl's stderr."""
        assert self._bins is not None, "control plane not started"
        out = subprocess.run(
            [str(self._bins.kubectl), "--kubeconfig", str(self.kubeconfig(user)), *args],
            input=input_text,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if check and out.returncode != 0:
            raise ControlPlaneError(f"kubectl {' '.join(args)} failed: {out.stderr.strip()}")
        return out

    def install_crds(self, paths: Iterable[str | Path], timeout: float = 60) -> list[str]:
        """Apply every CRD found in `paths` (files or directories of YAML) and wait
        until each is Established. Returns the CRD names.

        CRDs this plane already holds exactly as this harness last applied them (same
        manifest, same uid and resourceVersion, Established) are not applied again: one
        list of the plane's CRDs answers a repeated call."""
        files: list[Path] = []
        for p in map(Path, paths):
            files.extend(sorted(p.glob("*.yaml")) if p.is_dir() else [p])
        crds = [crd for f in files for crd in _crd_docs(f)]
        if not crds:
            return []
        names = [name for name, _, _ in crds]
        if self._crds_current({name: digest for name, digest, _ in crds}):
            return names
        self.kubectl(
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
            input_text="---\n".join(doc for _, _, doc in crds),
        )
        deadline = time.monotonic() + timeout
        while True:
            # A CRD just created may have no status yet, which `kubectl wait` reports as an
            # error ("accessor error") rather than waiting: ask again until it has one.
            out = self.kubectl(
                "wait",
                "--for=condition=Established",
                f"--timeout={int(timeout)}s",
                *[f"crd/{n}" for n in names],
                check=False,
            )
            if out.returncode == 0:
                break
            if "accessor error" not in out.stderr or time.monotonic() > deadline:
                raise ControlPlaneError(
                    f"CRDs {', '.join(names)} not Established: {out.stderr.strip()}"
                )
            time.sleep(0.2)
        held = self._listed_crds()
        for name, digest, _ in crds:
            uid, rv, established = held.get(name, ("", "", False))
            if established:
                self._crds[name] = (digest, uid, rv)
        return names

    def _crds_current(self, wanted: dict[str, str]) -> bool:
        """Whether every CRD of `wanted` (name -> manifest hash) is held as last applied."""
        if any(self._crds.get(name, ("",))[0] != digest for name, digest in wanted.items()):
            return False
        held = self._listed_crds()
        for name in wanted:
            _, uid, rv = self._crds[name]
            if held.get(name) != (uid, rv, True):
                del self._crds[name]
                return False
        return True

    def _listed_crds(self) -> dict[str, tuple[str, str, bool]]:
        """name -> (uid, resourceVersion, Established) of every CRD the plane holds."""
        req = urllib.request.Request(
            f"{self.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        )
        req.add_header("Authorization", f"Bearer {self.token(ADMIN)}")
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
            items = json.load(resp)["items"]
        return {
            item["metadata"]["name"]: (
                item["metadata"]["uid"],
                item["metadata"]["resourceVersion"],
                any(
                    c["type"] == "Established" and c["status"] == "True"
                    for c in (item.get("status") or {}).get("conditions") or []
                ),
            )
            for item in items
        }

    # -- internals -------------------------------------------------------------

    def _write_pki_and_users(self) -> None:
        hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
        if self.node_address:
            hosts += (self.node_address, KUBERNETES_SERVICE_IP)
        pki = make_pki(hosts)
        self.ca_pem = pki.ca_cert_pem
        files = {
            "ca.crt": pki.ca_cert_pem,
            "apiserver.crt": pki.serving_cert_pem,
            "apiserver.key": pki.serving_key_pem,
            "sa.key": pki.sa_private_pem,
            "sa.pub": pki.sa_public_pem,
        }
        if self.node_address:
            cert, key = client_certificate(
                pki, "kube-apiserver-kubelet-client", ("system:masters",)
            )
            files |= {"kubelet-client.crt": cert, "kubelet-client.key": key}
        for fname, data in files.items():
            path = self.dir / fname
            path.write_bytes(data)
            path.chmod(0o600)
            self._pki_paths[fname] = path
        users = [
            User(ADMIN, ("system:masters",)),
            User(UNPRIVILEGED),
            User("system:kube-controller-manager"),
            *self.extra_users,
        ]
        self.users = {u.name: u for u in users}
        lines = []
        for i, u in enumerate(users):
            groups = ",".join(u.groups)
            lines.append(f'{u.token},{u.name},uid-{i},"{groups}"')
        tokens = self.dir / "tokens.csv"
        tokens.write_text("\n".join(lines) + "\n")
        tokens.chmod(0o600)
        if self.token_webhook:
            webhook = self.dir / "token-webhook.kubeconfig"
            webhook.write_text(
                json.dumps(webhook_kubeconfig_dict(self.token_webhook, self.token_webhook_ca))
            )
            webhook.chmod(0o600)

    def _webhook_args(self) -> list[str]:
        if not self.token_webhook:
            return []
        return [
            "--authentication-token-webhook-config-file",
            str(self.dir / "token-webhook.kubeconfig"),
            "--authentication-token-webhook-version",
            "v1",
            "--authentication-token-webhook-cache-ttl",
            self.token_webhook_cache_ttl,
        ]

    def _start_etcd(self) -> None:
        assert self._bins is not None
        bins = self._bins

        def argv(client: int, peer: int) -> list[str]:
            return [
                str(bins.etcd),
                "--name",
                "default",
                "--data-dir",
                str(self.dir / "etcd"),
                "--listen-client-urls",
                f"http://127.0.0.1:{client}",
                "--advertise-client-urls",
                f"http://127.0.0.1:{client}",
                "--listen-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls",
                f"http://127.0.0.1:{peer}",
                "--initial-cluster",
                f"default=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync",
                "--log-level",
                "warn",
            ]

        def ready(client: int, _peer: int) -> _Check:
            self.etcd_url = f"http://127.0.0.1:{client}"
            return lambda: _http_ok(f"{self.etcd_url}/health")

        self._start_on_free_ports("etcd", argv, ready, 30)

    def _start_apiserver(self) -> None:
        assert self._bins is not None
        bins, d = self._bins, self.dir
        if self.node_address:
            node_args = [
                "--kubelet-client-certificate",
                str(d / "kubelet-client.crt"),
                "--kubelet-client-key",
                str(d / "kubelet-client.key"),
                "--kubelet-preferred-address-types",
                "InternalIP",
            ]
            address, bind = self.node_address, "0.0.0.0"
        else:
            # Nothing reaches this plane through the `kubernetes` Service (no Pods run), and
            # from 1.37 the API server refuses to reconcile that Service's endpoints to a
            # loopback address: no endpoint reconciler
            node_args = [
                "--disable-admission-plugins",
                "ServiceAccount",
                "--endpoint-reconciler-type",
                "none",
            ]
            address = bind = "127.0.0.1"

        def argv(port: int, _unused: int) -> list[str]:
            return [
                str(bins.kube_apiserver),
                "--bind-address",
                bind,
                "--advertise-address",
                address,
                "--secure-port",
                str(port),
                "--etcd-servers",
                self.etcd_url,
                "--tls-cert-file",
                str(d / "apiserver.crt"),
                "--tls-private-key-file",
                str(d / "apiserver.key"),
                "--client-ca-file",
                str(d / "ca.crt"),
                "--token-auth-file",
                str(d / "tokens.csv"),
                "--authorization-mode",
                "RBAC",
                "--service-account-issuer",
                "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file",
                str(d / "sa.pub"),
                "--service-account-signing-key-file",
                str(d / "sa.key"),
                "--service-cluster-ip-range",
                SERVICE_CIDR,
                "--allow-privileged=true",
                *node_args,
                "--cert-dir",
                str(d / "certs"),
                "--v",
                "1",
                *self._webhook_args(),
                *self.apiserver_args,
            ]

        def ready(port: int, _unused: int) -> _Check:
            self.server = f"https://127.0.0.1:{port}"
            return self._ready

        self._start_on_free_ports("kube-apiserver", argv, ready, 90)

    def _start_controller_manager(self) -> None:
        assert self._bins is not None
        if self.node_address:
            args = [
                "--controllers",
                "*",
                "--service-account-private-key-file",
                str(self.dir / "sa.key"),
                "--root-ca-file",
                str(self.dir / "ca.crt"),
                "--service-cluster-ip-range",
                SERVICE_CIDR,
            ]
        else:
            args = [
                "--controllers",
                "garbagecollector,namespace,clusterrole-aggregation-controller",
            ]
        self._start_client("kube-controller-manager", self._bins.kube_controller_manager, args)

    def _start_scheduler(self) -> None:
        if self.scheduler is None:
            raise ControlPlaneError("a plane with a node_address needs the kube-scheduler path")
        self._start_client("kube-scheduler", self.scheduler, [])

    def _start_client(self, name: str, binary: str | os.PathLike[str], args: Sequence[str]) -> None:
        """A component that reaches kube-apiserver as admin, alone (no leader election), and
        serves nothing we could poll: "ready" means it stayed up for a moment."""
        argv = [
            str(binary),
            "--kubeconfig",
            str(self.kubeconfig(ADMIN)),
            *args,
            "--leader-elect=false",
            "--secure-port",
            "0",
            "--v",
            "1",
        ]
        proc = Process(name, argv, self.dir / f"{name}.log")
        proc.start()
        self._procs.append(proc)

    def _ready(self) -> bool:
        return _http_ok(f"{self.server}/readyz", token=self.token(ADMIN), ca=self.ca_pem)

    def _write_kubeconfigs(self) -> None:
        for user in self.users.values():
            path = self.dir / f"{user.name}.kubeconfig"
            path.write_text(
                json.dumps(
                    kubeconfig_dict(self.name, self.server, self.ca_pem, user.name, user.token),
                    indent=2,
                )
            )
            path.chmod(0o600)


def kubeconfig_dict(
    cluster: str, server: str, ca_pem: bytes, user: str, token: str
) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster,
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": f"{user}@{cluster}", "context": {"cluster": cluster, "user": user}}],
        "current-context": f"{user}@{cluster}",
    }


def webhook_kubeconfig_dict(url: str, ca_pem: bytes | None = None) -> dict[str, object]:
    """A kubeconfig-format webhook configuration, as kube-apiserver's
    `--authentication-token-webhook-config-file` reads it: `clusters` is the remote service."""
    cluster: dict[str, str] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "token-webhook", "cluster": cluster}],
        "users": [{"name": "kube-apiserver", "user": {}}],
        "contexts": [
            {"name": "webhook", "context": {"cluster": "token-webhook", "user": "kube-apiserver"}}
        ],
        "current-context": "webhook",
    }


@functools.cache
def _crd_docs_cached(path: Path, mtime_ns: int, size: int) -> tuple[tuple[str, str, str], ...]:
    out = []
    for doc in yaml.load_all(path.read_text(), Loader=_Loader):
        if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
            text = yaml.dump(doc, Dumper=_Dumper)
            digest = hashlib.sha256(text.encode()).hexdigest()
            out.append((doc["metadata"]["name"], digest, text))
    return tuple(out)


def _crd_docs(path: Path) -> tuple[tuple[str, str, str], ...]:
    """(name, hash, YAML) of each CRD in the file, parsed once per version of the file."""
    st = path.stat()
    return _crd_docs_cached(path.resolve(), st.st_mtime_ns, st.st_size)


def _http_ok(url: str, token: str | None = None, ca: bytes | None = None) -> bool:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    ctx = ssl.create_default_context(cadata=ca.decode()) if ca else None
    try:
        with urllib.request.urlopen(req, timeout=2, context=ctx) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False
