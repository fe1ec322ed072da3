"""Telemetry's own settings, beside the shared ServiceConfig.

| setting | environment | default |
|---|---|---|
| retention | GGMODULES_TELEMETRY_RETENTION_EVENTS | 1,000,000 events; the oldest beyond it are pruned |
| retention by bytes | GGMODULES_TELEMETRY_RETENTION_BYTES | 1 GiB of event payloads, uncompressed |
| retention by age | GGMODULES_TELEMETRY_RETENTION_SECONDS | 2,592,000 (30 days) since an event was stored |
| recent-events cache | GGMODULES_TELEMETRY_RECENT_BYTES | 67,108,864 bytes (64 MiB) |

The event log itself is chosen by `--event-log` / GGMODULES_TELEMETRY_EVENT_LOG (runtime/config.py).

The recent-events cache holds the newest events in memory, at most that many bytes of them (and at most
10,000), so caught-up subscribers are served without a database read; a subscriber further behind reads
the database. All values are whole numbers (`_` and `,` allowed as separators). Whichever retention bound
is reached first prunes the oldest events (checked as Telemetry stores events, so a log nobody writes to
keeps what it has); a subscriber positioned before them is refused OUT_OF_RANGE (CURSOR_EXPIRED).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.telemetry.recent import DEFAULT_RECENT_BYTES

DEFAULT_RETENTION_EVENTS = 1_000_000
DEFAULT_RETENTION_BYTES = 1 << 30
DEFAULT_RETENTION_SECONDS = 30 * 86_400


def retention_from(env: Mapping[str, str] | None = None) -> Retention:
    return Retention(
        _positive(env, "GGMODULES_TELEMETRY_RETENTION_EVENTS", DEFAULT_RETENTION_EVENTS),
        max_bytes=_positive(env, "GGMODULES_TELEMETRY_RETENTION_BYTES", DEFAULT_RETENTION_BYTES),
        max_age_seconds=_positive(env, "GGMODULES_TELEMETRY_RETENTION_SECONDS", DEFAULT_RETENTION_SECONDS),
    )


def recent_bytes_from(env: Mapping[str, str] | None = None) -> int:
    return _positive(env, "GGMODULES_TELEMETRY_RECENT_BYTES", DEFAULT_RECENT_BYTES)


def _positive(env: Mapping[str, str] | None, name: str, default: int) -> int:
    value = (os.environ if env is None else env).get(name, "").strip()
    number = int(value.replace("_", "").replace(",", "")) if value else default
    if number < 1:
        raise ValueError(f"{name} must be at least 1, not {number}")
    return number
