"""Throwaway PKI for a local control plane: a CA, a serving certificate for
loopback (and any further hosts), the service-account signing key pair, and client
certificates the CA signs (`client_certificate`). EC P-256 keys keep start-up
fast (an RSA key costs tens of milliseconds each)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    ca_cert_pem: bytes
    serving_cert_pem: bytes
    serving_key_pem: bytes
    sa_private_pem: bytes
    sa_public_pem: bytes
    ca_key_pem: bytes


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def make_pki(hosts: tuple[str, ...] = ("127.0.0.1", "localhost")) -> Pki:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "okra-envtest-ca")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    sans: list[x509.GeneralName] = []
    for host in (*hosts, "kubernetes", "kubernetes.default", "kubernetes.default.svc"):
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    serving_key = ec.generate_private_key(ec.SECP256R1())
    serving_cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]))
        .issuer_name(ca_name)
        .public_key(serving_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    return Pki(
        ca_cert_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        serving_cert_pem=serving_cert.public_bytes(serialization.Encoding.PEM),
        serving_key_pem=_key_pem(serving_key),
        sa_private_pem=_key_pem(sa_key),
        sa_public_pem=sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
        ca_key_pem=_key_pem(ca_key),
    )


def client_certificate(
    pki: Pki, common_name: str, organizations: tuple[str, ...] = ()
) -> tuple[bytes, bytes]:
    """A client certificate and its key (PEM) signed by `pki`'s CA: the user `common_name`
    in the groups `organizations`, as kube-apiserver and the kubelet read them."""
    ca_key = serialization.load_pem_private_key(pki.ca_key_pem, password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    ca_cert = x509.load_pem_x509_certificate(pki.ca_cert_pem)
    now = datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    subject += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(subject))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)
