"""How far Telemetry's retention prunes `tel_events`: the oldest events past any bound (count, bytes, age; see
server/telemetry/settings.py). Each bound is a cursor through which the oldest events go (0: none).

Retention by bytes or age prunes at most PRUNE_STEP of the oldest events per write, so a write never waits
long behind pruning; a backlog is worked off over the next writes.

The oldest events may be packed into blocks (event_blocks.py): they come first, above `pruned_through`,
then the rows of tel_events.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.telemetry import event_blocks, meta
from ggmodules.storage.telemetry.event_rows import EVENTS

PRUNE_STEP = 1000
AGE_CHECK_SECONDS = 1.0


class RetentionBounds:
    def __init__(self, retention: Retention) -> None:
        self.retention = retention
        self._age_checked = 0.0

    def due(self, stored: int, stored_bytes: int) -> bool:
        """Whether `through` may find events to prune (without reading the log): a bound crossed by the
        counts, or the age bound's look due."""
        window = self.retention.max_age_seconds
        age_due = window is not None and time.monotonic() - self._age_checked >= AGE_CHECK_SECONDS
        return age_due or bool(self.retention.excess(stored) or self.retention.excess_bytes(stored_bytes))

    def through(self, conn: Connection, stored: int, stored_bytes: int) -> int:
        """The cursor through which the oldest events are past a bound, given how many events and payload
        bytes the log holds."""
        return max(self._count(conn, stored), self._bytes(conn, stored_bytes), self._age(conn))

    def _count(self, conn: Connection, stored: int) -> int:
        excess = self.retention.excess(stored)
        if not excess:
            return 0
        seen = 0
        for p in event_blocks.retained(conn, meta.value(conn, meta.PRUNED_THROUGH)):
            seen += 1
            if seen == excess:
                return p.cursor
        through = conn.execute(
            select(EVENTS.c.cursor).order_by(EVENTS.c.cursor).offset(excess - seen - 1).limit(1)
        ).scalar()
        return int(through or 0)

    def _bytes(self, conn: Connection, stored_bytes: int) -> int:
        """Through the oldest events that free enough bytes (at most PRUNE_STEP a write)."""
        excess = self.retention.excess_bytes(stored_bytes)
        if not excess:
            return 0
        freed, through = 0, 0
        for cursor, size, _ in _oldest(conn):
            freed, through = freed + size, cursor
            if freed >= excess:
                break
        return through

    def _age(self, conn: Connection) -> int:
        """The newest of the oldest events (at most PRUNE_STEP a write) stored before the age window; looked
        for at most once a second."""
        window = self.retention.max_age_seconds
        if window is None or time.monotonic() - self._age_checked < AGE_CHECK_SECONDS:
            return 0
        self._age_checked = time.monotonic()
        cutoff = int(time.time() - window)
        return max((cursor for cursor, _, stored_at in _oldest(conn) if stored_at < cutoff), default=0)


def _oldest(conn: Connection) -> Iterator[tuple[int, int, int]]:
    """(cursor, payload size, stored_at) of the oldest PRUNE_STEP events held, oldest first."""
    left = PRUNE_STEP
    for p in event_blocks.retained(conn, meta.value(conn, meta.PRUNED_THROUGH)):
        yield p.cursor, len(p.payload), p.stored_at
        left -= 1
        if not left:
            return
    sizes = select(EVENTS.c.cursor, func.length(EVENTS.c.payload), EVENTS.c.stored_at)
    for cursor, size, stored_at in conn.execute(sizes.order_by(EVENTS.c.cursor).limit(left)):
        yield int(cursor), int(size), int(stored_at)
