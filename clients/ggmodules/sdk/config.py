"""Client configuration: a frozen dataclass, read once and passed in."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from ggmodules.runtime.channels import KEEPALIVE_OPTIONS, MESSAGE_LIMITS, SERVICE_CONFIG

DEFAULT_REGISTRY = "127.0.0.1:50051"
DEFAULT_MODULESTORE = "127.0.0.1:50052"
DEFAULT_TRANSFER = "127.0.0.1:50053"
DEFAULT_TELEMETRY = "127.0.0.1:50054"
# What `ggmodules up` writes on its first start (relative to where it runs: the checkout).
DEFAULT_OPERATOR_FILE = "var/auth/operator.jwt"
DEFAULT_CA_FILE = "var/tls/ca.crt"


def _seconds(duration: str) -> float:
    """A service config duration ("0.1s") in seconds."""
    return float(duration.removesuffix("s"))


def _unary_method_config() -> dict[str, Any]:
    """The service config's method config for the services' unary methods (the first; the rest are the
    streams and exceptions)."""
    config: dict[str, Any] = SERVICE_CONFIG["methodConfig"][0]
    return config


@dataclass(frozen=True)
class RetryPolicy:
    """The `retryPolicy` of the SDK's channels: gRPC itself retries, with exponential backoff (and its own
    jitter), the codes listed, for reads and for mutations carrying a request id (the SDK gives every
    mutation one, and gRPC resends the same bytes). The default is the suite's service config
    (`protos/ggmodules/service_config.json`): UNAVAILABLE, ABORTED (contention: nothing was applied), and
    CANCELLED sent by a service (a replica stopping cancels calls it had not started: one write in about
    3,000 of a rolling restart; a call the caller cancels itself is never retried)."""

    max_attempts: int = 4
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0
    codes: tuple[str, ...] = ("UNAVAILABLE", "ABORTED", "CANCELLED")

    def __post_init__(self) -> None:
        # Seen here: grpcio 1.85 never makes the second attempt after a backoff of a millisecond or so
        # (the call waits out its deadline instead), so a policy that would do that is refused up front.
        if self.max_attempts > 1 and self.initial_backoff < 0.01:
            raise ValueError(f"initial_backoff must be at least 0.01 s, not {self.initial_backoff}")

    @classmethod
    def from_service_config(cls) -> RetryPolicy:
        policy = _unary_method_config()["retryPolicy"]
        return cls(max_attempts=int(policy["maxAttempts"]),
                   initial_backoff=_seconds(policy["initialBackoff"]),
                   max_backoff=_seconds(policy["maxBackoff"]), multiplier=float(policy["backoffMultiplier"]),
                   codes=tuple(policy["retryableStatusCodes"]))

    def as_service_config(self) -> dict[str, Any]:
        """This policy as a service config `retryPolicy` (gRPC caps attempts at 5)."""
        return {"maxAttempts": self.max_attempts, "initialBackoff": f"{self.initial_backoff}s",
                "maxBackoff": f"{self.max_backoff}s", "backoffMultiplier": self.multiplier,
                "retryableStatusCodes": list(self.codes)}

    def retries(self, code: grpc.StatusCode) -> bool:
        return self.max_attempts > 1 and code.name in self.codes


def _default_timeout() -> float:
    return _seconds(_unary_method_config()["timeout"])


NO_RETRY = RetryPolicy(max_attempts=1)
# No unary call (retries included) outlasts this: the services forget a request id after their request-log
# retention (GGMODULES_REQUEST_LOG_RETENTION_SECONDS, one day by default, never meant to be below this), and
# a retry after that would be applied as a new request. gRPC retries only within the call's deadline.
MAX_RETRY_SPAN_SECONDS = 600.0


@dataclass(frozen=True)
class ClientConfig:
    """Each address is one `host:port`, several comma-separated (replicas of the service), or a gRPC target
    such as `dns:///name:port`; calls are spread over the replicas that answer (round_robin)."""

    registry: str = DEFAULT_REGISTRY
    modulestore: str = DEFAULT_MODULESTORE
    transfer: str = DEFAULT_TRANSFER
    telemetry: str = DEFAULT_TELEMETRY
    # Deadline of every unary call in seconds, retries included (default: the service config's); None, or
    # anything above MAX_RETRY_SPAN_SECONDS, waits that long (`call_timeout`). Streams have none.
    timeout: float | None = field(default_factory=_default_timeout)
    retry: RetryPolicy = field(default_factory=RetryPolicy.from_service_config)
    # Sent with every call, besides the `x-request-id` header the SDK adds.
    metadata: tuple[tuple[str, str], ...] = ()
    # The services' own message-size limits, so a big window reads back whole, and keepalive pings, so a
    # replica that stops answering without closing its connection is left for another (runtime/channels.py;
    # round_robin over replicas comes with the service config, sdk/channels.py).
    channel_options: tuple[tuple[str, Any], ...] = (*MESSAGE_LIMITS, *KEEPALIVE_OPTIONS)
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

    @property
    def call_timeout(self) -> float:
        """The deadline given to each unary call: `timeout`, at most MAX_RETRY_SPAN_SECONDS."""
        return MAX_RETRY_SPAN_SECONDS if self.timeout is None else min(self.timeout, MAX_RETRY_SPAN_SECONDS)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClientConfig:
        """`GGMODULES_REGISTRY_ADDRESS`, `GGMODULES_MODULESTORE_ADDRESS`, `GGMODULES_TRANSFER_ADDRESS`,
        `GGMODULES_TELEMETRY_ADDRESS`, `GGMODULES_TIMEOUT` (seconds); `GGMODULES_OPERATOR_CREDENTIAL` (the
        credential itself) or `GGMODULES_OPERATOR_CREDENTIAL_FILE` (default ./var/auth/operator.jwt when it
        exists); `GGMODULES_TLS_CA_FILE` (default ./var/tls/ca.crt when it exists; set it empty for
        plaintext), `GGMODULES_TLS_CERT_FILE`, `GGMODULES_TLS_KEY_FILE`."""
        env = os.environ if env is None else env
        timeout = env.get("GGMODULES_TIMEOUT")
        return cls(
            registry=env.get("GGMODULES_REGISTRY_ADDRESS", DEFAULT_REGISTRY),
            modulestore=env.get("GGMODULES_MODULESTORE_ADDRESS", DEFAULT_MODULESTORE),
            transfer=env.get("GGMODULES_TRANSFER_ADDRESS", DEFAULT_TRANSFER),
            telemetry=env.get("GGMODULES_TELEMETRY_ADDRESS", DEFAULT_TELEMETRY),
            timeout=float(timeout) if timeout else _default_timeout(),
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
