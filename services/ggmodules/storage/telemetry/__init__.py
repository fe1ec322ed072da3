"""Telemetry persistence: its event log (tables prefixed `tel_`) and the repository over it."""

from ggmodules.storage.telemetry.repository import StoredEvent, StreamRead, TelemetryRepository

__all__ = ["StoredEvent", "StreamRead", "TelemetryRepository"]
