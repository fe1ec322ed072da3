"""Bounded outboxes and request logs (issue 14): what every follower has durably taken in is pruned, and a
request id older than the retention window is forgotten.

Followers' positions live in the service's own database (a `<prefix>_outbox_positions` table, one row per
`follower/<name>`), beside `pruned_through`: every event at or below it may be gone. A position only rises;
a follower that claims more than the outbox holds is refused and changes nothing.

Pruning (`prune_step`) deletes, in one short transaction, at most `batch` of the oldest events at or below
min(every known follower's position) - margin, and raises `pruned_through` in the same transaction. The
newest event is never pruned, so origin_seq values are never drawn twice; nor is a row past where an outbox
numbered when read has stored its stream seqs (a follower may have taken it in first). No
follower known yet: nothing is pruned. A reader positioned below `pruned_through` is refused OUT_OF_RANGE
(OUTBOX_PRUNED) with the oldest position it may resume from: it is told, never silently skipped. Readers
check `pruned_through` after reading their rows, so a prune committed between the two is always seen.

kill -9 at any point: a prune step is one transaction (rows gone and `pruned_through` raised together, or
neither); a follower's position is raised only by its own acknowledgement, sent after its insert committed.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from sqlalchemy import Table, delete, func, select, text, tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from ggmodules.core.errors import FailedPrecondition, InvalidArgument, OutOfRange, Reason
from ggmodules.core.ids import check_id
from ggmodules.storage.columns import SEQ
from ggmodules.storage.outbox import Outbox, OutboxPage
from ggmodules.storage.prepared import Prepared

PRUNED_THROUGH = "pruned_through"
FOLLOWER = "follower/"
MAX_FOLLOWER_NAME = 200


class OutboxPositionRow(SQLModel):
    """`follower/<name>`: every origin_seq at or below `value` is durably stored by that follower.
    `pruned_through`: every origin_seq at or below `value` may have been pruned."""

    name: str = Field(primary_key=True)
    value: int = Field(default=0, sa_type=SEQ)


class OutboxPositions:
    def __init__(self, outbox: Outbox, row: type[OutboxPositionRow]) -> None:
        self._outbox = outbox
        self._rows: Table = outbox._rows
        self._table: Table = row.__table__  # type: ignore[attr-defined]
        # Read after every page a watcher sends: a prepared statement (storage/prepared.py), so nothing is
        # compiled per page and SQLAlchemy's execution is skipped.
        self._pruned_through = Prepared(text(f"SELECT value FROM {self._table.name} WHERE name = :name"))

    @property
    def table_name(self) -> str:
        return str(self._table.name)

    # ---- followers ----------------------------------------------------------------------------------

    def ack(self, conn: Connection, follower: str, durable_origin_seq: int) -> None:
        """Raises `follower`'s position to `durable_origin_seq` (never lowers it)."""
        if not follower or len(follower) > MAX_FOLLOWER_NAME:
            raise InvalidArgument(
                f"follower must be a stable name of 1 to {MAX_FOLLOWER_NAME} characters, e.g. 'telemetry'",
                metadata={"field": "follower"},
                violations=[("follower", f"required, at most {MAX_FOLLOWER_NAME} characters")],
            )
        # A NUL or control character would be stored as a position nobody can name (and PostgreSQL
        # refuses NUL in text outright): the same one-printable-line rule as every id.
        check_id("follower", follower, limit=MAX_FOLLOWER_NAME)
        if durable_origin_seq < 0:
            raise InvalidArgument(
                f"durable_origin_seq {durable_origin_seq} is negative; give the highest origin_seq the "
                "follower has durably stored (0 for none)",
                metadata={"field": "durable_origin_seq"},
                violations=[("durable_origin_seq", "must be 0 or more")],
            )
        head = int(conn.execute(select(func.max(self._rows.c.origin_seq))).scalar() or 0)
        head = max(head, self.pruned_through(conn))
        if durable_origin_seq > head:
            raise FailedPrecondition(
                f"durable_origin_seq {durable_origin_seq} is past the outbox's newest event {head}: a "
                "follower can only have stored events it was sent; acknowledge what it stored",
                reason=Reason.ACK_BEYOND_HEAD,
                metadata={"durable_origin_seq": str(durable_origin_seq), "head_origin_seq": str(head)},
            )
        self._raise(conn, FOLLOWER + follower, durable_origin_seq)

    def followers(self, conn: Connection) -> dict[str, int]:
        return followers_in(conn, self._table)

    # ---- pruning ------------------------------------------------------------------------------------

    def pruned_through(self, conn: Connection) -> int:
        return int(self._pruned_through.scalar(conn, {"name": PRUNED_THROUGH}) or 0)

    def check(self, conn: Connection, after: int, page: OutboxPage) -> OutboxPage:
        """`page`, read after `after`, with a head that never goes back below what was pruned; refused when
        events past `after` were pruned. Called after the page's rows were read (see the module doc)."""
        return self.checked(after, self.pruned_through(conn), page)

    def checked(self, after: int, pruned: int, page: OutboxPage) -> OutboxPage:
        """`check` given `pruned_through` as read with or after the page's rows."""
        if after < pruned:
            raise OutOfRange(
                f"after_origin_seq {after} is older than what the {self._outbox.origin} outbox retains: "
                f"events up to {pruned} were pruned once every known follower had taken them in; resume "
                f"with after_origin_seq {pruned} or later and expect a gap",
                reason=Reason.OUTBOX_PRUNED,
                metadata={"after_origin_seq": str(after), "oldest_origin_seq": str(pruned + 1)},
            )
        return page if page.head >= pruned else replace(page, head=pruned)

    def prune_target(self, conn: Connection, margin: int) -> int:
        """What may be pruned: through min(followers) - margin; 0 with no follower known."""
        positions = self.followers(conn)
        return max(min(positions.values()) - margin, 0) if positions else 0

    def prune_step(self, conn: Connection, margin: int, batch: int) -> int:
        """Deletes at most `batch` of the oldest events that every follower has taken in (less `margin`);
        returns how many. Run it in its own short transaction, again while it returns `batch`."""
        # The newest event always stays: a SQLite rowid key without AUTOINCREMENT is numbered from the
        # largest one left, and an origin_seq drawn again would be taken by followers for one they have.
        newest = conn.execute(select(func.max(self._rows.c.origin_seq))).scalar()
        target = min(self.prune_target(conn, margin), int(newest or 0) - 1)
        sequencer = self._outbox.sequencer
        if sequencer is not None:  # never a row whose stream seqs are not stored yet (outbox_sequencing.py)
            target = min(target, sequencer.position(conn))
        if target <= 0:
            return 0
        upto = conn.execute(
            select(self._rows.c.origin_seq)
            .where(self._rows.c.origin_seq <= target)
            .order_by(self._rows.c.origin_seq)
            .offset(batch - 1)
            .limit(1)
        ).scalar()
        upto = target if upto is None else int(upto)
        deleted = int(conn.execute(delete(self._rows).where(self._rows.c.origin_seq <= upto)).rowcount)
        if upto > self.pruned_through(conn):
            self._raise(conn, PRUNED_THROUGH, upto)
        return deleted

    def _raise(self, conn: Connection, name: str, value: int) -> None:
        dialect: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
        larger = func.greatest if conn.dialect.name == "postgresql" else func.max  # scalar max on SQLite
        stmt = dialect.insert(self._table).values(name=name, value=value)
        conn.execute(
            stmt.on_conflict_do_update(
                index_elements=["name"], set_={"value": larger(self._table.c.value, stmt.excluded.value)}
            )
        )


def followers_in(conn: Connection, positions: Table) -> dict[str, int]:
    """Each follower's position in a `<prefix>_outbox_positions` table."""
    rows = conn.execute(
        select(positions.c.name, positions.c.value).where(positions.c.name.startswith(FOLLOWER))
    ).all()
    return {str(name)[len(FOLLOWER) :]: int(value) for name, value in rows}


def pruned_through_in(conn: Connection, positions: Table) -> int:
    """How far an outbox may have been pruned, read from its `<prefix>_outbox_positions` table (the hot path
    reads it with OutboxPositions.pruned_through, a prepared statement)."""
    where = positions.c.name == PRUNED_THROUGH
    return int(conn.execute(select(positions.c.value).where(where)).scalar() or 0)


def forget_follower(conn: Connection, positions: Table, follower: str) -> int | None:
    """Removes `follower`'s position (`ggmodules followers --forget`): it no longer holds pruning back. The
    position it had; None when it had none."""
    stmt = delete(positions).where(positions.c.name == FOLLOWER + follower).returning(positions.c.value)
    found = conn.execute(stmt).scalar()
    return None if found is None else int(found)


def prune_requests(conn: Connection, table: Table, window_seconds: float, batch: int) -> int:
    """Deletes at most `batch` request-log rows older than the window; returns how many."""
    cutoff = int(time.time() - window_seconds)
    oldest = (
        select(table.c.method, table.c.request_id)
        .where(table.c.created_at < cutoff)
        .order_by(table.c.created_at)
        .limit(batch)
    )
    stmt = delete(table).where(tuple_(table.c.method, table.c.request_id).in_(oldest))
    return int(conn.execute(stmt).rowcount)


def prune_all_but_newest(rows: Table, conn: Connection, batch: int) -> int:
    """Deletes up to `batch` of the oldest rows of an outbox whose rows nobody reads (Telemetry's own: it only
    numbers its turn events, logged in the same transaction), all but the newest (which keeps the numbering
    going on SQLite); returns how many went."""
    newest = conn.execute(select(func.max(rows.c.origin_seq))).scalar()
    if newest is None:
        return 0
    oldest = select(rows.c.origin_seq).where(rows.c.origin_seq < newest).order_by(rows.c.origin_seq)
    stmt = delete(rows).where(rows.c.origin_seq.in_(oldest.limit(batch).scalar_subquery()))
    return int(conn.execute(stmt).rowcount)
