"""Which event log a URL names (`--event-log`, GGMODULES_TELEMETRY_EVENT_LOG); storage/telemetry/eventlog.py
describes both."""

from __future__ import annotations

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.telemetry.eventlog import EventLog, SqlEventLog
from ggmodules.storage.telemetry.repository import TelemetryRepository


def open_event_log(url: str, repo: TelemetryRepository, retention: Retention) -> EventLog:
    """The event log a URL names: "" (or "sql") for the embedded table, `nats://host:port[?stream=NAME&
    subject=PREFIX]` for JetStream."""
    if not url or url == "sql":
        return SqlEventLog(repo)
    if url.startswith(("nats://", "tls://")):
        from ggmodules.storage.telemetry.jetstream import JetStreamEventLog

        return JetStreamEventLog(url, repo, retention)
    raise ValueError(
        f"event log {url!r} is not understood: leave it empty for the embedded SQL log, or give a "
        "nats://host:port URL for NATS JetStream"
    )
