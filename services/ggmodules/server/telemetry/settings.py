"""Telemetry's own settings, beside the shared ServiceConfig.

| setting | environment | default |
|---|---|---|
| retention | GGMODULES_TELEMETRY_RETENTION_EVENTS | 1,000,000 events; the oldest beyond it are pruned |
| recent-events cache | GGMODULES_TELEMETRY_RECENT_BYTES | 67,108,864 bytes (64 MiB) |
| retention by age (JetStream) | GGMODULES_TELEMETRY_RETENTION_SECONDS | 0: none |
| retention by size (JetStream) | GGMODULES_TELEMETRY_RETENTION_BYTES | 0: none |

The event log itself is chosen by `--event-log` / GGMODULES_TELEMETRY_EVENT_LOG (runtime/config.py).

The recent-events cache holds the newest events in memory, at most that many bytes of them (and at most
10,000), so caught-up subscribers are served without a database read; a subscriber further behind reads
the database. Both values are whole numbers (`_` and `,` allowed as separators).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.telemetry.recent import DEFAULT_RECENT_BYTES

DEFAULT_RETENTION_EVENTS = 1_000_000


def retention_from(env: Mapping[str, str] | None = None) -> Retention:
    return Retention(
        _positive(env, "GGMODULES_TELEMETRY_RETENTION_EVENTS", DEFAULT_RETENTION_EVENTS),
        seconds=_whole(env, "GGMODULES_TELEMETRY_RETENTION_SECONDS"),
        bytes=_whole(env, "GGMODULES_TELEMETRY_RETENTION_BYTES"),
    )


def _whole(env: Mapping[str, str] | None, name: str) -> int:
    value = (os.environ if env is None else env).get(name, "").strip()
    number = int(value.replace("_", "").replace(",", "")) if value else 0
    if number < 0:
        raise ValueError(f"{name} must be 0 (no limit) or more, not {number}")
    return number


def recent_bytes_from(env: Mapping[str, str] | None = None) -> int:
    return _positive(env, "GGMODULES_TELEMETRY_RECENT_BYTES", DEFAULT_RECENT_BYTES)


def _positive(env: Mapping[str, str] | None, name: str, default: int) -> int:
    value = (os.environ if env is None else env).get(name, "").strip()
    number = int(value.replace("_", "").replace(",", "")) if value else default
    if number < 1:
        raise ValueError(f"{name} must be at least 1, not {number}")
    return number
