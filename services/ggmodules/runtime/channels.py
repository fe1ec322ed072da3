"""Message-size limits, and the options of every channel opened to a service of the suite.

One limit for the whole suite: a service accepts and sends messages up to `MAX_MESSAGE_BYTES`, and every
channel opened to it (a service's channel to another, Telemetry following an outbox, the SDK, the console)
sends and receives up to the same size. A channel left at grpc's 4 MiB receive default would refuse, with
RESOURCE_EXHAUSTED, an answer the service was right to send. The limit is large enough for any message the
domain accepts (a single text is at most 256 KiB), so the domain's own limits answer first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2

MAX_MESSAGE_BYTES = 16 * 1024 * 1024

MESSAGE_LIMITS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)

# Retries and default deadlines as data, one gRPC service config for every client of the suite (the services'
# calls to each other, the Python SDK, the TypeScript client): UNAVAILABLE and ABORTED (contention; nothing
# was applied) are retried by gRPC itself for every unary method, all of which are reads or carry a
# request id; the streams (Subscribe, WatchOutbox) are resumed from a cursor by their callers instead.
SERVICE_CONFIG_PATH = Path(common_pb2.__file__).resolve().parents[2] / "service_config.json"


def load_service_config(path: Path = SERVICE_CONFIG_PATH) -> dict[str, Any]:
    """The suite's gRPC service config (`protos/ggmodules/service_config.json`), as a dict to extend."""
    config: dict[str, Any] = json.loads(path.read_text())
    return config


SERVICE_CONFIG: dict[str, Any] = load_service_config()


def service_config_option(config: dict[str, Any] | None = None) -> tuple[str, str]:
    """The channel option carrying a service config (the suite's unless given)."""
    return ("grpc.service_config", json.dumps(SERVICE_CONFIG if config is None else config))


# A service's channel to another: the limits, and reconnecting quickly once the other is back rather than
# after grpc's default backoff of up to 2 minutes, on its own subchannels (not the process-wide pool), so
# a channel made afresh connects at once.
SERVICE_CHANNEL_OPTIONS: tuple[tuple[str, int | str], ...] = (
    *MESSAGE_LIMITS,
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.use_local_subchannel_pool", 1),
    service_config_option(),
)


def service_channel(address: str, tls: grpc.ChannelCredentials | None = None) -> grpc.aio.Channel:
    """An asyncio channel from one service to another (open it inside the loop that will use it); over TLS
    when the service's security gives channel credentials; it carries the caller's trace context when
    tracing is on (runtime/observability.py)."""
    # Imported here: the SDK imports this module for MESSAGE_LIMITS and needs none of OpenTelemetry.
    from ggmodules.runtime.observability import client_interceptors

    options, interceptors = list(SERVICE_CHANNEL_OPTIONS), client_interceptors() or None
    if tls is not None:
        return grpc.aio.secure_channel(address, tls, options=options, interceptors=interceptors)
    return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)
