"""Where events go on NATS JetStream, shared by Telemetry's event log (storage/telemetry/jetstream.py) and
an origin that publishes its own outbox there (runtime/origin_relay.py): the two must agree on the stream,
each event's subject and its dedupe id, or one event would be stored twice.

A URL names the servers (comma-separated), and in its query the stream and the subject prefix:
`nats://127.0.0.1:4222?stream=NAME&prefix=a.b` (defaults `GGMODULES_TELEMETRY`, `ggmodules.telemetry`), and
optionally the stream's duplicate window in seconds, `duplicate_window=600` (NATS's default, 2 minutes,
when absent): how long JetStream itself drops a repeated publish (storage/jetstream_resume.py says what a
relay does past it). Telemetry applies it when it makes or updates the stream.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import nats

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.jetstream_parts import part_headers, split

DEFAULT_STREAM = "GGMODULES_TELEMETRY"
DEFAULT_PREFIX = "ggmodules.telemetry"
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class JetStreamLog:
    servers: tuple[str, ...]
    stream: str
    prefix: str
    duplicate_window: float | None = None  # seconds; None: the server's default

    @classmethod
    def of(cls, url: str) -> JetStreamLog:
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        window = query.get("duplicate_window", [""])[0]
        try:
            seconds = float(window) if window else None
        except ValueError:
            seconds = -1.0
        if seconds is not None and not 0 < seconds < float("inf"):
            raise ValueError(f"duplicate_window={window!r} in the event log's URL: give seconds, more than 0")
        return cls(
            tuple(f"{parts.scheme}://{host}" for host in parts.netloc.split(",") if host),
            query.get("stream", [DEFAULT_STREAM])[0],
            query.get("prefix", [DEFAULT_PREFIX])[0],
            seconds,
        )

    @property
    def identity(self) -> str:
        """How an origin and Telemetry tell they store into the same log (the `ggmodules-event-log` call
        metadata of WatchOutbox): the stream and its subjects. Servers are left out: one cluster is reached
        by many addresses."""
        return f"jetstream:{self.stream}:{self.prefix}"

    def subject(self, run_id: str, agent_id: str) -> str:
        return f"{self.prefix}.{token(run_id)}.{token(agent_id)}"

    async def connect(self) -> Any:
        """A NATS connection to the log's servers that reconnects for as long as it is open."""
        return await nats.connect(
            servers=list(self.servers), max_reconnect_attempts=-1, reconnect_time_wait=0.5, connect_timeout=5
        )

    async def publish(self, nc: Any, js: Any, event: event_pb2.Event, payload: bytes, timeout: float) -> Any:
        """Publishes one event (`payload`, its serialized bytes) on its subject with its dedupe id, in parts
        when it is larger than the server takes in one message (storage/jetstream_parts.py); returns
        JetStream's acknowledgement of the last (`seq`: the event's cursor; `duplicate`)."""
        subject, dedupe = self.subject(event.run_id, event.agent_id), dedupe_id(event)
        chunks = split(payload, int(nc.max_payload))
        ack = None
        for k, chunk in enumerate(chunks, 1):
            headers = part_headers(dedupe, k, len(chunks))
            ack = await js.publish(subject, chunk, timeout=timeout, stream=self.stream, headers=headers)
        return ack


def token(value: str) -> str:
    """One subject token for an id: the id itself when it is plain, else `~` and its base64url (so a dot,
    space or wildcard in an id never changes the subject's shape; `~` alone is the empty id)."""
    if _PLAIN.fullmatch(value):
        return value
    return "~" + base64.urlsafe_b64encode(value.encode()).decode().rstrip("=")


def dedupe_id(event: event_pb2.Event) -> str:
    """The message id JetStream deduplicates a publish by (`Nats-Msg-Id`): the same for every relay
    publishing one outbox event, different for events of two origin databases that happen to share an
    origin_seq."""
    return f"{event.origin}:{event.run_id}:{event.origin_seq}"
