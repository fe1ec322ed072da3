"""WatchOutbox's reads on SQLite's pinned connection (ModuleStore inline on the event loop): one statement on
the DBAPI connection, outside any transaction.

A watcher's read through SQLAlchemy (BEGIN, the page, `pruned_through`, COMMIT, each a Core execution) cost
about as much as the write it follows, on the same event loop and on every event's way to Telemetry. Here
the page, the outbox head and `pruned_through` come from one prepared SELECT: one statement is one snapshot
(autocommit, WAL), so the page and the pruning point agree just as reading the point after the rows does
(outbox_pruning.py); nothing else runs on the connection meanwhile (one thread: the event loop). With no row
after the position a second statement reads the head and the point alone.

Only while the pinned connection has no transaction open (`usable`); otherwise the caller reads as before.
Pages are bounded as Outbox.read bounds them (count, bytes, one larger event alone) and fan-out rows are
derived the same way (fan_out.page).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table

from ggmodules.storage import fan_out
from ggmodules.storage.outbox import MAX_BATCH_BYTES, OutboxPage
from ggmodules.storage.outbox_pruning import PRUNED_THROUGH, OutboxPositions

# What an event adds on the wire to its stored bytes (as storage/outbox.py counts it).
_EVENT_OVERHEAD = 16


class PinnedFeed:
    """Reads one outbox on one DBAPI sqlite3 connection (`dbapi`)."""

    def __init__(self, dbapi: Any, rows: Table, positions: OutboxPositions) -> None:
        self._dbapi = dbapi
        self._positions = positions
        table, marks = rows.name, positions.table_name
        bounds = (f"(SELECT max(origin_seq) FROM {table}), "
                  f"(SELECT value FROM {marks} WHERE name = '{PRUNED_THROUGH}')")  # fmt: skip
        self._page = (
            f"SELECT origin_seq, payload, {bounds} FROM {table} "
            "WHERE origin_seq > ? ORDER BY origin_seq LIMIT ?"
        )
        self._bounds = f"SELECT {bounds}"

    @property
    def usable(self) -> bool:
        return not self._dbapi.in_transaction

    def read(self, after: int, limit: int, max_bytes: int = MAX_BATCH_BYTES) -> OutboxPage:
        """Events after `after` (OutOfRange when some were pruned), as OutboxFeed.read then
        OutboxPositions.check return them."""
        cursor = self._dbapi.execute(self._page, (after, limit))
        found: list[tuple[int, bytes]] = []
        head: int | None = None
        pruned = 0
        total, seen, cut = 0, 0, False
        try:
            for seq, payload, head_then, pruned_then in cursor:
                head, pruned, seen = head_then, int(pruned_then or 0), seen + 1
                total += len(payload) + _EVENT_OVERHEAD
                if found and total > max_bytes:
                    cut = True
                    break
                found.append((int(seq), bytes(payload)))
        finally:
            cursor.close()
        if head is None:  # no row after `after`: the head and the pruning point alone
            head, pruned_then = self._dbapi.execute(self._bounds).fetchone()
            pruned = int(pruned_then or 0)
        events, cut_here = fan_out.page(found, after, limit, max_bytes)
        page = OutboxPage(events, int(head or 0), cut or cut_here or seen == limit)
        return self._positions.checked(after, pruned, page)
