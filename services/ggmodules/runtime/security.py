"""A service's security, built once from its config: the credential guard, its own service credential, and
TLS for its server and for its channels to the other services.

Auth is on unless the config says `insecure_dev` (flag `--insecure-dev`), which turns off both credentials
and TLS and says so in the log at every start. With auth on, a missing key file stops the service at start
with a sentence saying how to make one (`ggmodules up` generates them under ./var/).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc
import structlog

from ggmodules.runtime.auth import AUTHORIZATION, Guard
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.credentials import Signer, Verifier, load_public_key, load_signing_key

INSECURE_WARNING = (
    "INSECURE DEV MODE: no credential is checked and no traffic is encrypted; any caller that reaches this "
    "port can read and change every run. Never use --insecure-dev outside local experiments"
)


class SecurityConfigError(RuntimeError):
    """A key, credential or certificate file the config names cannot be read."""


@dataclass(frozen=True)
class Security:
    guard: Guard | None = None
    # This service's own credential, sent on its calls to the other services ("" without auth).
    service_token: str = ""
    server_credentials: grpc.ServerCredentials | None = None
    channel_credentials: grpc.ChannelCredentials | None = None
    # Registry only: mints agent, operator and observer credentials.
    signer: Signer | None = None

    def call_metadata(self) -> tuple[tuple[str, str], ...]:
        return ((AUTHORIZATION, f"Bearer {self.service_token}"),) if self.service_token else ()


INSECURE = Security()


def security_from(config: ServiceConfig, log: structlog.typing.FilteringBoundLogger) -> Security:
    if config.insecure_dev:
        log.warning(INSECURE_WARNING, service=config.service)
        return INSECURE
    guard = Guard(Verifier(load_public_key(_need(config.public_key_file, "public key", "--public-key-file"))))
    token = _need(config.service_token_file, "service credential", "--service-token-file").read_text().strip()
    signer = None
    if config.service == "registry":
        signer = Signer(load_signing_key(_need(config.signing_key_file, "signing key", "--signing-key-file")))
    server_credentials = channel_credentials = None
    if config.tls_cert_file:
        cert = _need(config.tls_cert_file, "TLS certificate", "--tls-cert-file").read_bytes()
        key = _need(config.tls_key_file, "TLS key", "--tls-key-file").read_bytes()
        ca = _need(config.tls_ca_file, "TLS CA", "--tls-ca-file").read_bytes() if config.tls_ca_file else None
        require = config.tls_client_cert == "require"
        server_credentials = grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                                         require_client_auth=require)
        channel_credentials = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key,
                                                           certificate_chain=cert)
    elif config.tls_ca_file:
        ca = _need(config.tls_ca_file, "TLS CA", "--tls-ca-file").read_bytes()
        channel_credentials = grpc.ssl_channel_credentials(root_certificates=ca)
    tls = server_credentials is not None
    log.info("auth on", tls=tls, client_certificates=config.tls_client_cert or "off")
    return Security(guard, token, server_credentials, channel_credentials, signer)


def _need(path: str, what: str, flag: str) -> Path:
    if not path or not Path(path).is_file():
        raise SecurityConfigError(
            f"no {what} at {path or '(unset)'}: run `ggmodules up` once (it generates ./var/auth and "
            "./var/tls), "
            f"pass {flag}, or start with --insecure-dev for a local experiment without auth"
        )
    return Path(path)
