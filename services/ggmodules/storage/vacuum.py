"""PostgreSQL: the space of the rows a service deletes is used again (issue 14, bounded growth).

Every service deletes rows as it goes: outbox events every follower has taken in, request ids past their
window, Transfer's ended transfers, Telemetry's rows packed into blocks and what its retention lets go. On
PostgreSQL a deleted row's space is used again only once a VACUUM has passed over its table; until then
every new row goes at the table's end and every index keeps its entry. Autovacuum does that at most once a
minute (autovacuum_naptime), only once a fifth of the table is dead, and not at all where it is turned off
(as on the PostgreSQL these tests run against). Measured with ModuleStore, Registry and Telemetry on
PostgreSQL with autovacuum off, 30,000 writes overwriting one memories pad, pruned down to 300 outbox rows:
ModuleStore's database went from 1.15 MB to 18.8 MB, ms_outbox 10.0 MB and ms_requests 8.4 MB for 318 and
257 live rows.

Rows a service updates leave their old versions the same way: a store's state (memories, tasks, board,
skills: JSON kept out of line once over 2 kB) is written again whole by each write to it, and the old value
stays until a VACUUM; in 90 s of a crowd of writers on shared stores ms_stores went from 0.13 MB to 4.9 MB
for 612 rows.

So a service VACUUMs the tables it deletes from or updates itself: once EVERY rows have been deleted, and
otherwise once `seconds` have passed (a minute unless GGMODULES_VACUUM_INTERVAL_SECONDS says), at its
pruning pass (runtime/housekeeping.py). VACUUM (not FULL) takes no lock a read or a write waits for;
SKIP_LOCKED passes a table whose VACUUM another replica is running. A VACUUM that fails leaves the space to
the next one (or to autovacuum) and is logged, never raised: the deletes it follows have committed. On
SQLite deleted pages go to the file's freelist and are used again without it, so `Vacuum.of` gives none
there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import structlog
from sqlalchemy.engine import Engine

from ggmodules.storage.contention import first_line

EVERY = 1024

_log = structlog.get_logger("ggmodules.storage.vacuum")


class Vacuum:
    """VACUUMs `tables` once `every` rows were deleted from them (counted by `deleted`), or, given `seconds`,
    when that long has passed since the last VACUUM (`deleted` is then called at each pruning pass)."""

    def __init__(
        self, engine: Engine, tables: Sequence[str], every: int = EVERY, seconds: float | None = None
    ) -> None:
        self._engine = engine
        self._statement = "VACUUM (SKIP_LOCKED) " + ", ".join(tables)
        self._every = every
        self._seconds = seconds
        self._since = 0
        self._last = time.monotonic()
        self._counting = threading.Lock()

    @classmethod
    def of(
        cls, engine: Engine, tables: Sequence[str], every: int = EVERY, seconds: float | None = None
    ) -> Vacuum | None:
        """A Vacuum of `tables` on PostgreSQL; None on SQLite."""
        return cls(engine, tables, every, seconds) if engine.dialect.name == "postgresql" else None

    def deleted(self, rows: int) -> bool:
        """Counts `rows` deleted; VACUUMs (on the calling thread: never a serving loop's) once `every` have
        gone since the last, or `seconds` have passed. Whether it vacuumed."""
        now = time.monotonic()
        with self._counting:
            self._since += rows
            late = self._seconds is not None and now - self._last >= self._seconds
            if self._since < self._every and not late:
                return False
            self._since, self._last = 0, now
        try:
            with self._engine.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(self._statement)
        except Exception as err:  # the space waits for the next one, or for autovacuum
            _log.info("vacuum failed", statement=self._statement, error=first_line(err))
            return False
        return True
