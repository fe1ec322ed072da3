"""Service configuration: a frozen dataclass read once from flags and environment, then passed in.

Precedence: flag, then `GGMODULES_<SERVICE>_<SETTING>`, then `GGMODULES_<SETTING>`, then the default. A number
out of its range (a port past 65535, a negative lease, a pool of none) is refused with a ValueError naming
the flag and its variable, before anything starts.

| setting | flag | default |
|---|---|---|
| HOST | --host | 127.0.0.1 |
| PORT | --port | the service's default port (`ggmodules up`) or 0 |
| DATABASE_URL | --database-url | sqlite:///var/<service>.db |
| LISTEN_DATABASE_URL | --listen-database-url | DATABASE_URL: where LISTEN connects (PostgreSQL, PgBouncer) |
| LOG_LEVEL | --log-level | info |
| GRACE_SECONDS | --grace-seconds | 5 |
| MODULESTORE_ADDRESS | --modulestore-address | 127.0.0.1:50052 (services that call ModuleStore) |
| REGISTRY_ADDRESS | --registry-address | 127.0.0.1:50051 (services that call Registry) |
| TRANSFER_ADDRESS | --transfer-address | 127.0.0.1:50053 (services that call Transfer) |
| SEMANTIC | --semantic | off; `minilm`: semantic and hybrid archive search (ModuleStore; `semantic` extra) |
| EVENT_LOG | --event-log | SQL table; `nats://host:port`: JetStream (Telemetry's log; ModuleStore's too) |
| TRACE | --trace | off; `console` (spans to stderr), `otlp` (OTEL_EXPORTER_OTLP_ENDPOINT; `otlp` extra) |
| METRICS_PORT | --metrics-port | off; Prometheus `/metrics` on this port of HOST (0: any free port) |
| POOL_SIZE | --pool-size | 10: database connections a replica keeps open (PostgreSQL) |
| POOL_MAX_OVERFLOW | --pool-max-overflow | 10: connections opened beyond POOL_SIZE under load, closed after |
| LEASE_SECONDS | --lease-seconds | 10: how long a Transfer replica's lease on a transfer lasts unrenewed |
| LEASE_SCAN_SECONDS | --lease-scan-seconds | 1: how often Transfer looks for transfers whose lease expired |
| INSECURE_DEV | --insecure-dev | off; on: no credentials checked, no TLS (logged loudly) |
| PUBLIC_KEY_FILE | --public-key-file | var/auth/credentials.pub: verifies credentials (every service) |
| SIGNING_KEY_FILE | --signing-key-file | var/auth/credentials.key: mints credentials (Registry only) |
| SERVICE_TOKEN_FILE | --service-token-file | var/auth/service.jwt: this service's credential for its calls |
| TLS_CERT_FILE | --tls-cert-file | var/tls/<service>.crt when that file exists, else no TLS |
| TLS_KEY_FILE | --tls-key-file | var/tls/<service>.key beside it |
| TLS_CA_FILE | --tls-ca-file | var/tls/ca.crt: the CA its channels to other services trust |
| TLS_CLIENT_CERT | --tls-client-cert | off; `require`: clients must present a certificate from the CA |
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_PORTS = {"registry": 50051, "modulestore": 50052, "transfer": 50053, "telemetry": 50054}


@dataclass(frozen=True)
class ServiceConfig:
    service: str
    host: str = "127.0.0.1"
    port: int = 0
    database_url: str = ""
    # PostgreSQL: where the cross-replica wake-ups' LISTEN connects ("" = database_url): straight to the
    # server when database_url is a PgBouncer in transaction mode, which cannot hold a LISTEN.
    listen_database_url: str = ""
    log_level: str = "info"
    grace_seconds: float = 5.0
    modulestore_address: str = f"127.0.0.1:{DEFAULT_PORTS['modulestore']}"
    registry_address: str = f"127.0.0.1:{DEFAULT_PORTS['registry']}"
    transfer_address: str = f"127.0.0.1:{DEFAULT_PORTS['transfer']}"
    # ModuleStore: the embedding provider of semantic archive search ("" = off).
    semantic: str = ""
    # Telemetry: where its event log is ("" = the SQL table in its database; nats://... = NATS JetStream).
    event_log: str = ""
    # OpenTelemetry span exporter ("" = tracing off): "console" or "otlp" (runtime/observability.py).
    trace: str = ""
    # Prometheus /metrics port (None = off; 0 = any free port).
    metrics_port: int | None = None
    # Database connections per replica (PostgreSQL; SQLite keeps one file): kept open, and opened beyond.
    pool_size: int = 10
    pool_max_overflow: int = 10
    # Transfer: a replica drives a transfer while it holds its lease (renewed every third of it); every
    # `lease_scan_seconds` it takes over pending transfers whose lease expired (their replica died).
    lease_seconds: float = 10.0
    lease_scan_seconds: float = 1.0
    # Credentials (runtime/credentials.py) and TLS; see README "Credentials and TLS".
    insecure_dev: bool = False
    public_key_file: str = ""
    signing_key_file: str = ""
    service_token_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_ca_file: str = ""
    tls_client_cert: str = ""

    @classmethod
    def load(
        cls, service: str, argv: Sequence[str] = (), env: Mapping[str, str] | None = None
    ) -> ServiceConfig:
        env = os.environ if env is None else env
        parser = argparse.ArgumentParser(prog=f"ggmodules {service}")
        for name in (
            "host",
            "port",
            "database-url",
            "listen-database-url",
            "log-level",
            "grace-seconds",
            "modulestore-address",
            "registry-address",
            "transfer-address",
            "semantic",
            "public-key-file",
            "signing-key-file",
            "service-token-file",
            "tls-cert-file",
            "tls-key-file",
            "tls-ca-file",
            "tls-client-cert",
            "event-log",
            "trace",
            "metrics-port",
            "pool-size",
            "pool-max-overflow",
            "lease-seconds",
            "lease-scan-seconds",
        ):
            parser.add_argument(f"--{name}")
        parser.add_argument("--insecure-dev", action="store_const", const="1", default=None)
        args = vars(parser.parse_args(list(argv)))

        def pick(setting: str, default: str) -> str:
            flag = args.get(setting.lower())
            if flag is not None:
                return str(flag)
            return env.get(f"GGMODULES_{service.upper()}_{setting}", env.get(f"GGMODULES_{setting}", default))

        return cls(
            service=service,
            host=pick("HOST", "127.0.0.1"),
            port=int(_number("PORT", pick("PORT", str(DEFAULT_PORTS.get(service, 0))), int, 0, 65535)),
            database_url=pick("DATABASE_URL", f"sqlite:///var/{service}.db"),
            listen_database_url=pick("LISTEN_DATABASE_URL", ""),
            log_level=pick("LOG_LEVEL", "info"),
            grace_seconds=_number("GRACE_SECONDS", pick("GRACE_SECONDS", "5"), float, 0),
            modulestore_address=pick("MODULESTORE_ADDRESS", cls.modulestore_address),
            registry_address=pick("REGISTRY_ADDRESS", cls.registry_address),
            transfer_address=pick("TRANSFER_ADDRESS", cls.transfer_address),
            semantic=pick("SEMANTIC", ""),
            event_log=pick("EVENT_LOG", ""),
            trace=_off(pick("TRACE", "")),
            metrics_port=_port(pick("METRICS_PORT", "")),
            pool_size=int(_number("POOL_SIZE", pick("POOL_SIZE", "10"), int, 1)),
            pool_max_overflow=int(_number("POOL_MAX_OVERFLOW", pick("POOL_MAX_OVERFLOW", "10"), int, 0)),
            lease_seconds=_number("LEASE_SECONDS", pick("LEASE_SECONDS", "10"), float, 0, above=True),
            lease_scan_seconds=_number(
                "LEASE_SCAN_SECONDS", pick("LEASE_SCAN_SECONDS", "1"), float, 0, above=True
            ),
            insecure_dev=pick("INSECURE_DEV", "").lower() in ("1", "true", "yes", "on"),
            public_key_file=pick("PUBLIC_KEY_FILE", "var/auth/credentials.pub"),
            signing_key_file=pick("SIGNING_KEY_FILE", "var/auth/credentials.key"),
            service_token_file=pick("SERVICE_TOKEN_FILE", "var/auth/service.jwt"),
            tls_cert_file=pick("TLS_CERT_FILE", _if_exists(f"var/tls/{service}.crt")),
            tls_key_file=pick("TLS_KEY_FILE", _if_exists(f"var/tls/{service}.key")),
            tls_ca_file=pick("TLS_CA_FILE", _if_exists("var/tls/ca.crt")),
            tls_client_cert=pick("TLS_CLIENT_CERT", ""),
        )


def _if_exists(path: str) -> str:
    return path if os.path.exists(path) else ""
def _off(value: str) -> str:
    return "" if value.strip().lower() in ("", "off", "none") else value.strip().lower()


def _port(value: str) -> int | None:
    if value.strip().lower() in ("", "off"):
        return None
    return int(_number("METRICS_PORT", value, int, 0, 65535))


def _number(
    setting: str,
    text: str,
    parse: Callable[[str], float],
    least: float,
    most: float | None = None,
    *,
    above: bool = False,
) -> float:
    """`text` read by `parse` (int or float), refused unless finite and at least `least` (more than it, with
    `above`) and at most `most`: the error names the flag and its variable."""
    try:
        value: float | None = parse(text.strip())
    except ValueError:
        value = None
    fits = (
        value is not None
        and math.isfinite(value)
        and (value > least if above else value >= least)
        and (most is None or value <= most)
    )
    if not fits or value is None:
        kind = "a whole number" if parse is int else "a number"
        bound = f"more than {least:g}" if above else f"at least {least:g}"
        if most is not None:
            bound += f" and at most {most:g}"
        flag = "--" + setting.lower().replace("_", "-")
        raise ValueError(f"{flag} (GGMODULES_{setting}) is {text!r}: give {kind} {bound}")
    return value
