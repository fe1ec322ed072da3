"""Message-size limits, and the options of every channel opened to a service of the suite.

One limit for the whole suite: a service accepts and sends messages up to `MAX_MESSAGE_BYTES`, and every
channel opened to it (a service's channel to another, Telemetry following an outbox, the SDK, the console)
sends and receives up to the same size. A channel left at grpc's 4 MiB receive default would refuse, with
RESOURCE_EXHAUSTED, an answer the service was right to send. The limit is large enough for any message the
domain accepts (a single text is at most 256 KiB), so the domain's own limits answer first.
"""

from __future__ import annotations

import grpc

MAX_MESSAGE_BYTES = 16 * 1024 * 1024

MESSAGE_LIMITS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)

# A service's channel to another: the limits, and reconnecting quickly once the other is back rather than
# after grpc's default backoff of up to 2 minutes, on its own subchannels (not the process-wide pool), so
# a channel made afresh connects at once.
SERVICE_CHANNEL_OPTIONS: tuple[tuple[str, int], ...] = (
    *MESSAGE_LIMITS,
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.use_local_subchannel_pool", 1),
)


def service_channel(address: str, tls: grpc.ChannelCredentials | None = None) -> grpc.aio.Channel:
    """An asyncio channel from one service to another (open it inside the loop that will use it); over TLS
    when the service's security gives channel credentials."""
    if tls is not None:
        return grpc.aio.secure_channel(address, tls, options=list(SERVICE_CHANNEL_OPTIONS))
    return grpc.aio.insecure_channel(address, options=list(SERVICE_CHANNEL_OPTIONS))
