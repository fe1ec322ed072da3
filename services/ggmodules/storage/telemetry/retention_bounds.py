"""How far Telemetry's retention prunes `tel_events`: the oldest events past any bound (count, bytes, age; see
server/telemetry/settings.py). Each bound is a cursor through which the oldest events go (0: none).

Retention by bytes or age prunes at most PRUNE_STEP of the oldest events per write, so a write never waits
long behind pruning; a backlog is worked off over the next writes.
"""

from __future__ import annotations

import time

from sqlalchemy import func, select
from sqlalchemy.engine import Connection

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.telemetry.event_rows import EVENTS

PRUNE_STEP = 1000
AGE_CHECK_SECONDS = 1.0


class RetentionBounds:
    def __init__(self, retention: Retention) -> None:
        self.retention = retention
        self._age_checked = 0.0

    def through(self, conn: Connection, stored: int, stored_bytes: int) -> int:
        """The cursor through which the oldest events are past a bound, given how many events and payload
        bytes the log holds."""
        return max(self._count(conn, stored), self._bytes(conn, stored_bytes), self._age(conn))

    def _count(self, conn: Connection, stored: int) -> int:
        excess = self.retention.excess(stored)
        if not excess:
            return 0
        through = conn.execute(
            select(EVENTS.c.cursor).order_by(EVENTS.c.cursor).offset(excess - 1).limit(1)
        ).scalar()
        return int(through or 0)

    def _bytes(self, conn: Connection, stored_bytes: int) -> int:
        """Through the oldest events that free enough bytes (at most PRUNE_STEP a write)."""
        excess = self.retention.excess_bytes(stored_bytes)
        if not excess:
            return 0
        sizes = select(EVENTS.c.cursor, func.length(EVENTS.c.payload))
        oldest = conn.execute(sizes.order_by(EVENTS.c.cursor).limit(PRUNE_STEP)).all()
        freed, through = 0, 0
        for cursor, size in oldest:
            freed, through = freed + int(size), int(cursor)
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
        oldest = select(EVENTS.c.cursor, EVENTS.c.stored_at).order_by(EVENTS.c.cursor).limit(PRUNE_STEP)
        page = oldest.subquery()
        through = conn.execute(
            select(func.max(page.c.cursor)).where(page.c.stored_at < int(time.time() - window))
        ).scalar()
        return int(through or 0)
