"""Telemetry's own settings, beside the shared ServiceConfig.

| setting | environment | default |
|---|---|---|
| retention | GGMODULES_TELEMETRY_RETENTION_EVENTS | 1,000,000 events; the oldest beyond it are pruned |
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ggmodules.core.telemetry.streams import Retention

DEFAULT_RETENTION_EVENTS = 1_000_000


def retention_from(env: Mapping[str, str] | None = None) -> Retention:
    value = (os.environ if env is None else env).get("GGMODULES_TELEMETRY_RETENTION_EVENTS", "").strip()
    events = int(value.replace("_", "").replace(",", "")) if value else DEFAULT_RETENTION_EVENTS
    if events < 1:
        raise ValueError(f"GGMODULES_TELEMETRY_RETENTION_EVENTS must be at least 1, not {events}")
    return Retention(events)
