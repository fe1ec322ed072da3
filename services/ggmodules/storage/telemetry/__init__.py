"""Telemetry persistence: its event log (tables prefixed `tel_`) and the repository over it."""

from ggmodules.storage.telemetry.recent import StoredEvent, StreamRead
from ggmodules.storage.telemetry.repository import TelemetryRepository

__all__ = ["StoredEvent", "StreamRead", "TelemetryRepository"]
