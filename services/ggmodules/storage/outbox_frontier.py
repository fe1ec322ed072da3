"""How far an outbox is final, on PostgreSQL: read from the database itself, with no timer.

`origin_seq` comes from a sequence, drawn when a row is inserted, so on PostgreSQL numbers commit out of
order: 7 can be visible while the transaction holding 6 is still open, or 6 is rolled back and never
appears. A watcher that sent 7 and moved its position past 6 would lose 6 for good; one that waited for 6
on a clock would either wait too long or, after a slow transaction, skip it.

The frontier: read the last number the sequence handed out (`drawn`), then the transactions holding a write
lock on the outbox table. Every transaction that inserted a row took RowExclusiveLock on the table before
its INSERT drew the number and holds it until it ends (commit or rollback). So once none of those
transactions holds the lock any more, every number up to `drawn` is final: committed and visible, or never
coming. A reader sends rows only up to the frontier, in origin_seq order: nothing is skipped, and a
rolled-back transaction holds nobody up once it has ended.

Why not the rows' own transaction ids (an `xid8` column read below `pg_snapshot_xmin`)? A transaction that
began earlier, with the smaller xid, can draw its number later: T1 (xid 100) draws 6 and commits while T2
(xid 101) still holds 5; xmin is then 101, row 6 is below it, and 5 is yet to come. The frontier here is
taken on numbers, not xids, and the lock is this table's, so a long transaction elsewhere on the server
holds up nothing.

A crash of the server (any backend's, which makes the postmaster reinitialise) can lose the WAL record of
numbers drawn by transactions that then rolled back: the recovered sequence may hand them out again. A
frontier learnt before the crash may count such a number final while its new transaction is still open, and
a reader would pass over that write once a later number is served. So a reader's frontier is learnt afresh
whenever its engine has made a new connection since its last read (`Frontier.reconnected`): every
connection of before a crash is broken by it, so the first read after one is on a new connection. A new
connection made for any other reason costs one read's worth of frontier, nothing more.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from ggmodules.storage.engine import connections_made

# The last number drawn, then (a subquery correlated to it, so run after it) the transactions holding the
# outbox's write lock. OFFSET 0 keeps the first read a scan of its own, evaluated before the second. The
# table, its sequence and the database are given by oid (`_OIDS`, read once): a name cast to regclass in the
# lock scan's filter is looked up again for every lock row, which made this read cost several times a plain
# query.
DRAWN_THEN_WRITERS = text(
    "SELECT d.drawn, ARRAY("
    "  SELECT l.virtualtransaction FROM pg_locks l"
    "  WHERE l.locktype = 'relation' AND l.mode = 'RowExclusiveLock' AND l.granted"
    "  AND l.relation = CAST(:relation AS oid) AND l.database = CAST(:database AS oid)"
    "  AND coalesce(d.drawn, 0) >= 0"
    ") FROM ("
    "  SELECT pg_sequence_last_value(CAST(CAST(:sequence AS oid) AS regclass)) AS drawn OFFSET 0"
    ") d"
)
_OIDS = text(
    "SELECT CAST(CAST(CAST(:table AS text) AS regclass) AS oid) AS relation,"
    " CAST(CAST(pg_get_serial_sequence(CAST(:table AS text), 'origin_seq') AS regclass) AS oid) AS sequence,"
    " (SELECT oid FROM pg_database WHERE datname = current_database()) AS database"
)
# Barriers kept while writers are slow to end; past this the newest is replaced (which only delays).
MAX_BARRIERS = 32


@dataclass(frozen=True, slots=True)
class _Barrier:
    drawn: int
    # The transactions (virtual ids) that held the write lock just after `drawn` was read.
    writers: frozenset[str]


class Frontier:
    """One reader's frontier over one outbox table. Not shared between threads."""

    def __init__(self, table: str, final: int = 0, oids: dict[str, int] | None = None) -> None:
        """`final`: a position known final already (what the outbox is numbered up to). `oids`: where the
        table's oids are kept, filled on first use (one reader's own by default)."""
        self._table = table
        self._final = final
        self._barriers: deque[_Barrier] = deque()
        self._oids = {} if oids is None else oids
        self._made: int | None = None

    def reconnected(self, engine: Engine) -> None:
        """Forgets what it learnt when `engine` made a connection since the last read (module doc)."""
        made = connections_made(engine)
        if made != self._made:
            self._final, self._made = 0, made
            self._barriers.clear()

    def oids(self, conn: Connection) -> dict[str, int]:
        """The parameters of DRAWN_THEN_WRITERS: the table's, its sequence's and the database's oids."""
        if not self._oids:
            found = conn.execute(_OIDS, {"table": self._table}).one()._mapping
            self._oids.update({key: int(value) for key, value in found.items()})
        return self._oids

    def advance(self, conn: Connection) -> tuple[int, bool]:
        """(every origin_seq up to this is final, whether numbers beyond it are still outstanding)."""
        last, holding = conn.execute(DRAWN_THEN_WRITERS, self.oids(conn)).one()
        return self.moved(last, holding)

    def moved(self, last: int | None, holding: list[str]) -> tuple[int, bool]:
        """`advance`, given what DRAWN_THEN_WRITERS returned."""
        drawn, writers = int(last or 0), frozenset(holding)
        # A barrier none of whose writers still holds the lock: everything it drew is final.
        for barrier in self._barriers:
            if not barrier.writers & writers:
                self._final = max(self._final, barrier.drawn)
        while self._barriers and self._barriers[0].drawn <= self._final:
            self._barriers.popleft()
        if drawn > self._final:
            if not writers:  # nobody who drew a number up to `drawn` is still open
                self._final = drawn
                self._barriers.clear()
            elif not self._barriers or self._barriers[-1].drawn < drawn:
                if len(self._barriers) == MAX_BARRIERS:
                    self._barriers.pop()
                self._barriers.append(_Barrier(drawn, writers))
        return self._final, drawn > self._final


# A one-shot reader on PostgreSQL (ReadOutbox): how long it waits, at most, for the transactions that held
# the outbox's write lock when it looked to end, polling every SETTLE_POLL_SECONDS. Healthy ones end in
# milliseconds; one open longer (a frozen replica's, ended by the server after 5 s, storage/engine.py) only
# delays what is drawn after it.
SETTLE_SECONDS = 2.0
SETTLE_POLL_SECONDS = 0.002


def settled(conn: Connection, table: str, numbered: int, oids: dict[str, int] | None = None) -> int:
    """Every origin_seq up to the returned one is final, and it is at least the newest number drawn when
    this was called, once every transaction that held `table`'s write lock then has ended (what is final by
    SETTLE_SECONDS otherwise; at least `numbered`, how far the outbox is numbered: only final rows are).
    Stopping at `numbered` whenever any transaction held that lock (a write in flight, a prune, a watcher
    storing its numbers) left out events committed before the read, an empty page telling its reader it had
    every event there is. Writers that come after the first look are not waited for: under a steady stream
    of writes some transaction always holds the lock, and a read waiting for none made every ReadOutbox
    page wait out SETTLE_SECONDS."""
    frontier = Frontier(table, numbered, oids)  # `oids`: kept by the caller, read once per outbox
    deadline = time.monotonic() + SETTLE_SECONDS
    last, holding = conn.execute(DRAWN_THEN_WRITERS, frontier.oids(conn)).one()
    wanted = int(last or 0)  # every event committed before this read has a number up to this
    final, _ = frontier.moved(last, holding)
    while final < wanted and time.monotonic() < deadline:
        time.sleep(SETTLE_POLL_SECONDS)
        final, _ = frontier.advance(conn)
    return final
