"""What `ggmodules up` makes under ./var/ on its first start, so the suite runs with auth and TLS on:

    var/auth/credentials.key   Registry's signing key (Ed25519, PEM, mode 600)
    var/auth/credentials.pub   the public key every service verifies credentials with
    var/auth/service.jwt       the services' own credential (role service), for their calls to each other
    var/auth/operator.jwt      an operator credential for every run: the SDK and the console read it
    var/tls/ca.crt, ca.key     a development CA (the `cryptography` package)
    var/tls/<service>.crt/.key each service's certificate for 127.0.0.1 and localhost, signed by the CA

Existing files are kept: delete ./var/auth or ./var/tls to make new ones.
"""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ggmodules.runtime.credentials import (
    LONG_TTL_SECONDS,
    Signer,
    load_signing_key,
    new_signing_key,
    write_key_pair,
)

SERVICES = ("modulestore", "registry", "transfer", "telemetry")


def ensure_dev_keys(var: Path) -> list[str]:
    """Makes what is missing; returns the paths it made."""
    made: list[str] = []
    auth, tls = var / "auth", var / "tls"
    key_file, pub_file = auth / "credentials.key", auth / "credentials.pub"
    if not key_file.exists():
        write_key_pair(new_signing_key(), key_file, pub_file)
        made += [str(key_file), str(pub_file)]
    signer = Signer(load_signing_key(key_file))
    for name, role in (("service.jwt", "service"), ("operator.jwt", "operator")):
        path = auth / name
        if not path.exists():
            minted = signer.service("ggmodules") if role == "service" else signer.operator(
                ttl_seconds=LONG_TTL_SECONDS)
            path.write_text(minted + "\n")
            path.chmod(0o600)
            made.append(str(path))
    ca_key_file, ca_file = tls / "ca.key", tls / "ca.crt"
    if not ca_file.exists():
        tls.mkdir(parents=True, exist_ok=True)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        _write_key(ca_key, ca_key_file)
        ca_file.write_bytes(_ca_cert(ca_key).public_bytes(serialization.Encoding.PEM))
        made.append(str(ca_file))
    loaded = serialization.load_pem_private_key(ca_key_file.read_bytes(), password=None)
    ca = x509.load_pem_x509_certificate(ca_file.read_bytes())
    assert isinstance(loaded, ec.EllipticCurvePrivateKey)
    ca_key = loaded
    for service in SERVICES:
        crt, key = tls / f"{service}.crt", tls / f"{service}.key"
        if not crt.exists():
            service_key = ec.generate_private_key(ec.SECP256R1())
            _write_key(service_key, key)
            cert = _service_cert(service, service_key, ca, ca_key)
            crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            made.append(str(crt))
    return made


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return builder.not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(
        now + datetime.timedelta(days=365))


def _ca_cert(key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ggmodules development CA")])
    builder = _validity(x509.CertificateBuilder().subject_name(name).issuer_name(name)
                        .public_key(key.public_key()).serial_number(x509.random_serial_number()))
    builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
    return builder.sign(key, hashes.SHA256())


def _service_cert(service: str, key: ec.EllipticCurvePrivateKey, ca: x509.Certificate,
                  ca_key: ec.EllipticCurvePrivateKey) -> x509.Certificate:
    builder = _validity(
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"ggmodules {service}")]))
        .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
    )
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(ca_key, hashes.SHA256())
