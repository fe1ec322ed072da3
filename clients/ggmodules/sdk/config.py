"""Client configuration: a frozen dataclass, read once and passed in."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from ggmodules.runtime.channels import MESSAGE_LIMITS

DEFAULT_REGISTRY = "127.0.0.1:50051"
DEFAULT_MODULESTORE = "127.0.0.1:50052"
DEFAULT_TRANSFER = "127.0.0.1:50053"
# What `ggmodules up` writes on its first start (relative to where it runs: the checkout).
DEFAULT_OPERATOR_FILE = "var/auth/operator.jwt"
DEFAULT_CA_FILE = "var/tls/ca.crt"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff. Only UNAVAILABLE and ABORTED (contention: nothing was applied) are
    retried, and only for reads and for mutations carrying a request id (the SDK gives every mutation one,
    reused on each attempt)."""

    max_attempts: int = 4
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0
    # Fraction of each delay taken off at random, so callers that failed together retry apart.
    jitter: float = 0.2

    def delay(self, failures: int, rand: float) -> float:
        """Seconds to wait after the `failures`-th failed attempt; `rand` in [0, 1)."""
        base = min(self.max_backoff, self.initial_backoff * self.multiplier ** (failures - 1))
        return base * (1 - self.jitter * rand)


NO_RETRY = RetryPolicy(max_attempts=1)


@dataclass(frozen=True)
class ClientConfig:
    registry: str = DEFAULT_REGISTRY
    modulestore: str = DEFAULT_MODULESTORE
    transfer: str = DEFAULT_TRANSFER
    # Default deadline of every call in seconds, retries included; None waits forever.
    timeout: float | None = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # Sent with every call, besides the `x-request-id` header the SDK adds.
    metadata: tuple[tuple[str, str], ...] = ()
    # The services' own message-size limits, so a big window reads back whole.
    channel_options: tuple[tuple[str, Any], ...] = MESSAGE_LIMITS
    # Sent on every call not made as an agent (agents' credentials come with the answers that open them).
    operator_credential: str = ""
    # TLS: the CA that signed the services' certificates (PEM); empty = plaintext. A client certificate and
    # key (PEM) for services that require one.
    tls_ca_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""

    def channel_credentials(self) -> grpc.ChannelCredentials | None:
        if not self.tls_ca_file:
            return None
        cert = Path(self.tls_cert_file).read_bytes() if self.tls_cert_file else None
        key = Path(self.tls_key_file).read_bytes() if self.tls_key_file else None
        return grpc.ssl_channel_credentials(Path(self.tls_ca_file).read_bytes(), key, cert)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClientConfig:
        """`GGMODULES_REGISTRY_ADDRESS`, `GGMODULES_MODULESTORE_ADDRESS`, `GGMODULES_TRANSFER_ADDRESS`,
        `GGMODULES_TIMEOUT` (seconds); `GGMODULES_OPERATOR_CREDENTIAL` (the credential itself) or
        `GGMODULES_OPERATOR_CREDENTIAL_FILE` (default ./var/auth/operator.jwt when it exists);
        `GGMODULES_TLS_CA_FILE` (default ./var/tls/ca.crt when it exists; set it empty for plaintext),
        `GGMODULES_TLS_CERT_FILE`, `GGMODULES_TLS_KEY_FILE`."""
        env = os.environ if env is None else env
        timeout = env.get("GGMODULES_TIMEOUT")
        return cls(
            registry=env.get("GGMODULES_REGISTRY_ADDRESS", DEFAULT_REGISTRY),
            modulestore=env.get("GGMODULES_MODULESTORE_ADDRESS", DEFAULT_MODULESTORE),
            transfer=env.get("GGMODULES_TRANSFER_ADDRESS", DEFAULT_TRANSFER),
            timeout=float(timeout) if timeout else cls.timeout,
            operator_credential=operator_credential_from(env),
            tls_ca_file=env.get("GGMODULES_TLS_CA_FILE", _if_exists(DEFAULT_CA_FILE)),
            tls_cert_file=env.get("GGMODULES_TLS_CERT_FILE", ""),
            tls_key_file=env.get("GGMODULES_TLS_KEY_FILE", ""),
        )


def operator_credential_from(env: Mapping[str, str]) -> str:
    if "GGMODULES_OPERATOR_CREDENTIAL" in env:
        return env["GGMODULES_OPERATOR_CREDENTIAL"].strip()
    path = env.get("GGMODULES_OPERATOR_CREDENTIAL_FILE", DEFAULT_OPERATOR_FILE)
    return Path(path).read_text().strip() if path and Path(path).is_file() else ""


def _if_exists(path: str) -> str:
    return path if Path(path).is_file() else ""
