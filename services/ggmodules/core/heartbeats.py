"""How often an idle stream says it is alive (WatchOutbox, Subscribe).

0 asks for the default; anything else must lie within the bounds: a heartbeat every millisecond would have
the service spend itself on idle streams, one a few minutes apart would not tell idle from dead.
"""

from __future__ import annotations

from ggmodules.core.errors import InvalidArgument

DEFAULT_HEARTBEAT_MS = 1000
MIN_HEARTBEAT_MS = 50
MAX_HEARTBEAT_MS = 60_000


def heartbeat_seconds(heartbeat_ms: int, field: str = "heartbeat_ms") -> float:
    if heartbeat_ms == 0:
        return DEFAULT_HEARTBEAT_MS / 1000
    if not MIN_HEARTBEAT_MS <= heartbeat_ms <= MAX_HEARTBEAT_MS:
        bounds = f"between {MIN_HEARTBEAT_MS} and {MAX_HEARTBEAT_MS}"
        raise InvalidArgument(
            f"{field} {heartbeat_ms} is out of range: give 0 for the default ({DEFAULT_HEARTBEAT_MS} ms) "
            f"or a value {bounds} ms",
            metadata={
                "field": field,
                "min": str(MIN_HEARTBEAT_MS),
                "max": str(MAX_HEARTBEAT_MS),
            },
            violations=[(field, f"must be 0 or {bounds}")],
        )
    return heartbeat_ms / 1000
