"""Pure parts of the control-plane harness: the throwaway PKI, binary lookup and the host lock."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from okra_testkit.envtest import find_binaries
from okra_testkit.envtest.certs import make_pki
from okra_testkit.envtest.controlplane import kubeconfig_dict, webhook_kubeconfig_dict
from okra_testkit.envtest.process import ControlPlaneError
from okra_testkit.node import host_lock


def test_serving_certificate_covers_loopback_and_is_signed_by_the_ca() -> None:
    pki = make_pki()
    ca = x509.load_pem_x509_certificate(pki.ca_cert_pem)
    cert = x509.load_pem_x509_certificate(pki.serving_cert_pem)
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert ipaddress.ip_address("127.0.0.1") in sans.get_values_for_type(x509.IPAddress)
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)  # raises if the signature does not check out


def test_missing_binaries_error_says_what_and_how(tmp_path: Path) -> None:
    (tmp_path / "etcd").write_text("#!/bin/sh\n")
    (tmp_path / "etcd").chmod(0o755)
    with pytest.raises(FileNotFoundError) as err:
        find_binaries(tmp_path)
    msg = str(err.value)
    assert "kube-apiserver, kube-controller-manager, kubectl" in msg
    assert "etcd," not in msg
    assert "hack/build-control-plane.sh" in msg


def test_kubeconfig_carries_server_ca_and_token() -> None:
    cfg = kubeconfig_dict("c", "https://127.0.0.1:1", b"PEM", "u", "tok")
    assert cfg["current-context"] == "u@c"
    assert cfg["users"] == [{"name": "u", "user": {"token": "tok"}}]


def test_token_webhook_config_is_a_kubeconfig_naming_the_service_and_its_ca() -> None:
    cfg = webhook_kubeconfig_dict("https://127.0.0.1:2/clusters/c1", b"PEM")
    assert cfg["clusters"] == [
        {
            "name": "token-webhook",
            "cluster": {
                "server": "https://127.0.0.1:2/clusters/c1",
                "certificate-authority-data": "UEVN",
            },
        }
    ]
    assert cfg["current-context"] == "webhook"
    plain = webhook_kubeconfig_dict("http://127.0.0.1:2/")
    assert plain["clusters"] == [
        {"name": "token-webhook", "cluster": {"server": "http://127.0.0.1:2/"}}
    ]


_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_the_host_lock_waits_for_another_process_says_so_once_and_gives_up_when_told(
    tmp_path: Path,
) -> None:
    path = tmp_path / "host.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        said: list[str] = []
        with (
            pytest.raises(ControlPlaneError, match=r"another process has held .*host\.lock"),
            host_lock(path, timeout=1.5, waiting=lambda: said.append("waiting")),
        ):
            pass
        assert said == ["waiting"]
        holder.stdin.close()  # the holder exits, and its lock goes with it
        holder.wait(timeout=10)
        with (
            host_lock(path, timeout=10, waiting=lambda: said.append("again")),
            pytest.raises(ControlPlaneError),  # held here now: a second holder gives up
            host_lock(path, timeout=0),
        ):
            pass
        assert said == ["waiting"]
    finally:
        holder.kill()
        holder.wait()
