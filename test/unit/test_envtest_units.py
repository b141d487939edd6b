"""Pure parts of the control-plane harness: the throwaway PKI and binary lookup."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from cryptography import x509

from okra_testkit.envtest import find_binaries
from okra_testkit.envtest.certs import make_pki
from okra_testkit.envtest.controlplane import kubeconfig_dict, webhook_kubeconfig_dict


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
