"""WatchOutbox's reads on PostgreSQL in one round trip: the frontier, the page and the pruning point sent at
once (psycopg's pipeline mode) instead of one after the other.

The server runs them in order, each statement on a snapshot of its own (READ COMMITTED or autocommit), so
the page is read after the frontier and `pruned_through` after the page, as OutboxFeed.read then
OutboxPositions.check read them. The page cannot be bounded by the frontier in SQL, since the frontier is
only known once its answer is back: it is read up to its count and byte bounds and cut here at the frontier
instead. Every number up to the frontier was final before the page's snapshot was taken, so the page holds
each of them that committed; rows past the frontier are dropped (they go out with a later read), and the
page is then "cut" only when its bounds cut it before the frontier.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ggmodules.storage import fan_out
from ggmodules.storage.outbox import MAX_BATCH_BYTES, Outbox, OutboxPage, page_statement
from ggmodules.storage.outbox_frontier import DRAWN_THEN_WRITERS, Frontier
from ggmodules.storage.outbox_pruning import PRUNED_THROUGH, OutboxPositions
from ggmodules.storage.prepared import Prepared

_NO_END = 2**63 - 1


def bounds_statement(outbox: Outbox, positions: OutboxPositions) -> Prepared:
    """The outbox's pruning point (`:name` = PRUNED_THROUGH) and newest origin_seq, in one statement sent
    with a watcher's page (here, and storage/outbox_numbering.py)."""
    return Prepared(
        text(
            f"SELECT (SELECT value FROM {positions.table_name} WHERE name = :name),"
            f" (SELECT max(origin_seq) FROM {outbox.table_name})"
        )
    )


class PipelinedFeed:
    """One watcher's reads of one outbox on PostgreSQL, checked against its pruning point."""

    def __init__(self, outbox: Outbox, positions: OutboxPositions) -> None:
        self._frontier = Frontier(outbox.table_name)
        self._positions = positions
        self._drawn = Prepared(DRAWN_THEN_WRITERS)
        self._page = Prepared(page_statement(outbox.rows, postgres=True))
        self._bounds = bounds_statement(outbox, positions)

    def read(self, conn: Connection, after: int, limit: int, max_bytes: int = MAX_BATCH_BYTES) -> OutboxPage:
        self._frontier.reconnected(conn.engine)  # a server crash may have lost numbers (outbox_frontier.py)
        oids = self._frontier.oids(conn)
        raw: Any = conn.connection.dbapi_connection
        dialect = conn.dialect
        drawn, page, bounds = raw.cursor(), raw.cursor(), raw.cursor()
        params = {"after": after, "through": _NO_END, "limit": limit, "max_bytes": max_bytes}
        with raw.pipeline():
            for cursor, statement, args in (
                (drawn, self._drawn, oids),
                (page, self._page, params),
                (bounds, self._bounds, {"name": PRUNED_THROUGH}),
            ):
                sql, order, defaults = statement._compile(dialect)
                cursor.execute(sql, Prepared._args(order, defaults, args))
        last, holding = drawn.fetchone()
        rows = page.fetchall()
        pruned, newest = bounds.fetchone()
        final, held = self._frontier.moved(last, holding)
        found = [(int(seq), bytes(data)) for seq, data, _ in rows if data is not None and seq <= final]
        beyond = any(seq > final for seq, _, _ in rows)
        cut = not beyond and (len(found) < len(rows) or len(rows) == limit)
        events, cut_here = fan_out.page(found, after, limit, max_bytes)
        head = int(rows[0][2]) if rows else int(newest or 0)
        checked = self._positions.checked(after, int(pruned or 0), OutboxPage(events, head, cut or cut_here))
        return replace(checked, held=held)
