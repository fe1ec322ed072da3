"""The telemetry outbox: events appended in the same transaction as the change they describe.

Each service has its own outbox table (a subclass of `OutboxRow`) and stream-head table. `origin_seq`
is the row's autoincrement key; `stream_seq` increases along each (run, agent) stream.

A row may stand for several events (storage/fan_out.py): reads return the events. Reads come in pages
bounded in count and in bytes (`MAX_BATCH_BYTES`, counted as the events travel), so a
page always fits in one gRPC message; an event larger than the bound makes a page of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, bindparam, case, func, or_, select
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import fan_out
from ggmodules.storage.columns import SEQ, seq_field
from ggmodules.storage.outbox_ahead import Ahead, NumberingAhead
from ggmodules.storage.outbox_append import Appender
from ggmodules.storage.outbox_frontier import Frontier, settled
from ggmodules.storage.outbox_sequencing import Numbered, Sequencer
from ggmodules.storage.prepared import Prepared, Tx

# A page of outbox events holds at most this many bytes of events, unless it is one event alone.
MAX_BATCH_BYTES = 1024 * 1024
# What an event adds on the wire to its stored bytes: origin_seq (a tag and a varint of up to 10 bytes) and
# its own tag and length as an element of a repeated field.
_EVENT_OVERHEAD = 16


class OutboxRow(SQLModel):
    origin_seq: int | None = Field(default=None, primary_key=True, sa_type=SEQ)
    run_id: str = Field(index=True)
    agent_id: str
    stream_seq: int = seq_field(default=...)
    # A serialized ggmodules.common.v1.Event, without origin_seq (the key is the truth).
    payload: bytes


class StreamHeadRow(SQLModel):
    run_id: str = Field(primary_key=True)
    agent_id: str = Field(primary_key=True)
    seq: int = seq_field()


@dataclass(frozen=True, slots=True)
class OutboxPage:
    """Events after a position, in origin_seq order."""

    events: list[event_pb2.Event]
    # The newest origin_seq in the outbox when the page was read.
    head: int
    # The page was cut by its count or byte bound: more events follow right after it.
    more: bool
    # Events may exist past what was read that are not final yet (PostgreSQL: see outbox_frontier.py).
    held: bool = False


class Outbox:
    """Appends to and reads from one service's outbox tables."""

    def __init__(
        self,
        origin: str,
        row: type[OutboxRow],
        head: type[StreamHeadRow],
        *,
        sequenced_in: Table | None = None,
    ) -> None:
        """`sequenced_in`: the outbox's positions table, for an outbox whose stream seqs are assigned when
        it is read (storage/outbox_sequencing.py) rather than by each write."""
        self.origin = origin
        self._rows: Table = row.__table__  # type: ignore[attr-defined]
        # PostgreSQL: the table's, its sequence's and its database's oids, read by the first one-shot read
        # (outbox_frontier.settled) and kept for the next ones.
        self._oids: dict[str, int] = {}
        self._heads = head.__table__  # type: ignore[attr-defined]
        self._appender = Appender(origin, self._rows, self._heads, deferred=sequenced_in is not None)
        self._sequencer = (
            None
            if sequenced_in is None
            else Sequencer(self._rows, sequenced_in, self._appender.reserved, self._heads)
        )
        self._ahead = None if sequenced_in is None else NumberingAhead(self._rows, sequenced_in, self._heads)
        # The page statements, built once: (PostgreSQL?, filtered by run?) -> statement.
        self._pages: dict[tuple[bool, bool], Select[Any]] = {}
        # SQLite's page reads and the head, run as prepared statements (storage/prepared.py): a watcher
        # reads a page after every commit, and SQLAlchemy's execution cost more than SQLite's work.
        self._stepped = {by_run: Prepared(_stepped(self._rows, by_run)) for by_run in (False, True)}
        self._newest = Prepared(select(func.max(self._rows.c.origin_seq)))

    @property
    def rows(self) -> Table:
        return self._rows

    @property
    def sequencer(self) -> Sequencer | None:
        """What numbers its stream seqs when it is read (None: each write numbers its own)."""
        return self._sequencer

    @property
    def numbering_ahead(self) -> NumberingAhead | None:
        """Its numbering ahead of storing (storage/outbox_ahead.py), for an outbox numbered when read."""
        return self._ahead

    @property
    def sequenced(self) -> bool:
        """Whether its stream seqs are numbered when it is read (storage/outbox_sequencing.py): only
        `read` may then serve it."""
        return self._sequencer is not None

    @property
    def table_name(self) -> str:
        return str(self._rows.name)

    def append(self, conn: Connection | Tx, event: event_pb2.Event) -> event_pb2.Event:
        """Appends `event` to its (run, agent) stream inside the caller's transaction; sets its origin_seq."""
        return self._appender.append(conn, event)

    def append_all(
        self, conn: Connection | Tx, events: Sequence[event_pb2.Event | fan_out.FanOutEntry]
    ) -> None:
        """Appends `events` to their streams, in this order, once per transaction (outbox_append.py)."""
        self._appender.append_all(conn, events)

    def read_ahead(self, tx: Tx, after: int, limit: int, max_bytes: int = MAX_BATCH_BYTES) -> Ahead | None:
        """SQLite, on no transaction, for a reader positioned where the numbering stands: the page of the rows
        after it numbered in memory, sent before `keep` stores their numbers (storage/outbox_ahead.py);
        None when it does not apply (read with `read`)."""
        if self._ahead is None:
            return None
        return self._ahead.ahead(tx, after, limit, max_bytes)

    def keep(self, conn: Connection, ahead: Ahead) -> bool:
        """Stores the numbers `read_ahead` gave (in the caller's write transaction), unless another reader
        stored them first; returns whether it did."""
        assert self._ahead is not None
        return self._ahead.keep(Tx.of(conn), ahead)

    def read(
        self,
        conn: Connection,
        after_origin_seq: int,
        limit: int,
        run_id: str = "",
        *,
        through: int | None = None,
        max_bytes: int = MAX_BATCH_BYTES,
    ) -> OutboxPage:
        """Events after `after_origin_seq` (and at most `through`) in order: at most `limit` of them and
        `max_bytes` of events, or the first one alone when it is larger."""
        postgres = conn.dialect.name == "postgresql"
        if postgres and through is None and self._sequencer is not None:
            # A one-shot read (ReadOutbox): as far as the outbox is final once the writers in flight have
            # ended, found before the numbering takes its position's lock (a watcher storing its numbers
            # holds the outbox's write lock and waits for that one).
            through = settled(conn, self.table_name, self._sequencer.position(conn), self._oids)
        params = {
            "after": after_origin_seq,
            "through": _NO_END if through is None else through,
            "limit": limit,
            "max_bytes": max_bytes,
            "run_id": run_id,
        }
        key = (postgres, bool(run_id))
        if postgres and key not in self._pages:
            self._pages[key] = _summed(self._rows, bool(run_id))
        while True:
            left = False
            handed: Numbered | None = None
            if self._sequencer is not None:  # only rows numbered on their streams are read
                # SQLite, a reader of every run positioned where numbering starts (a caught-up watcher): the
                # rows the sequencer numbers are every row after it, so they are its page.
                told = Numbered() if not postgres and not run_id and through is None else None
                numbered, left = self._sequencer.sequence(conn, through, told)
                params["through"] = numbered if through is None else min(through, numbered)
                if told is not None and told.after == after_origin_seq and told.newest is not None:
                    handed = told
            if handed is not None:
                found, head, more = handed.rows, handed.newest, False
            elif postgres:
                found, head, more = _read_summed(conn, self._pages[key], params)
            else:
                found, head, more = _read_stepped(conn, self._stepped[bool(run_id)], params)
            # A row may stand for several events (a write's fan-out to its store's holders,
            # storage/fan_out.py), some numbered at or below `after`: the page is made of the events,
            # within the same bounds.
            events, cut = fan_out.page(found, after_origin_seq, limit, max_bytes)
            # Nothing numbered matched, but rows are left to number: number on (an empty page says the
            # reader has every event there is).
            if events or not left:
                break
        more = more or cut or left
        if head is None:  # nothing was read, so nothing said where the outbox stands
            head = self._newest.scalar(conn, {})
        return OutboxPage(events, int(head or 0), more)


_NO_END = 2**63 - 1


def page_statement(rows: Table, *, postgres: bool) -> Select[Any]:
    """The page read of `Outbox.read` (not filtered by run): parameters after, through, limit, max_bytes."""
    return (_summed if postgres else _stepped)(rows, False)
# What a read returns: (origin_seq, payload) pairs in order, the outbox head if any row was read, and
# whether the page was cut by its count or byte bound.
_Found = tuple[list[tuple[int, bytes]], int | None, bool]


def _after(rows: Table, by_run: bool) -> list[ColumnElement[bool]]:
    where = [rows.c.origin_seq > bindparam("after"), rows.c.origin_seq <= bindparam("through")]
    return [*where, rows.c.run_id == bindparam("run_id")] if by_run else where


def _summed(rows: Table, by_run: bool) -> Select[Any]:
    """PostgreSQL: the byte bound is applied by the query (a running sum of sizes), so payloads past it
    never leave the server. The first row past the bound comes back without its payload: it says the page
    was cut."""
    order = rows.c.origin_seq
    size = func.length(rows.c.payload) + _EVENT_OVERHEAD
    page = (
        select(
            order.label("origin_seq"),
            rows.c.payload,
            size.label("size"),
            func.sum(size).over(order_by=order, rows=(None, 0)).label("upto"),
            func.row_number().over(order_by=order).label("n"),
        )
        .where(*_after(rows, by_run))
        .order_by(order)
        .limit(bindparam("limit"))
        .subquery()
    )
    max_bytes = bindparam("max_bytes", type_=SEQ)
    fits = or_(page.c.n == 1, page.c.upto <= max_bytes)
    return (
        select(page.c.origin_seq, case((fits, page.c.payload)), select(func.max(order)).scalar_subquery())
        .where(or_(page.c.n <= 2, page.c.upto - page.c.size <= max_bytes))
        .order_by(page.c.origin_seq)
    )


def _read_summed(conn: Connection, stmt: Select[Any], params: dict[str, Any]) -> _Found:
    result = conn.execute(stmt, params).all()
    found = [(int(seq), bytes(payload)) for seq, payload, _ in result if payload is not None]
    cut = len(found) < len(result) or len(result) == params["limit"]
    return found, (int(result[0][2]) if result else None), cut


def _stepped(rows: Table, by_run: bool) -> Select[Any]:
    """SQLite: the cursor is stepped row by row (`_read_stepped`) and let go at the first row past the byte
    bound, so nothing beyond it is read (a running sum in SQL would copy every payload of the page)."""
    head = select(func.max(rows.c.origin_seq)).scalar_subquery()
    return (
        select(rows.c.origin_seq, rows.c.payload, head)
        .where(*_after(rows, by_run))
        .order_by(rows.c.origin_seq)
        .limit(bindparam("limit"))
    )


def _read_stepped(conn: Connection, stmt: Prepared, params: dict[str, Any]) -> _Found:
    result = stmt.cursor_of(Tx.of(conn), params)  # its own cursor, let go at the first row past the bound
    found: list[tuple[int, bytes]] = []
    newest: int | None = None
    total, seen, cut = 0, 0, False
    try:
        for seq, payload, head_then in result:
            newest, seen = head_then, seen + 1
            total += len(payload) + _EVENT_OVERHEAD
            if found and total > params["max_bytes"]:
                cut = True
                break
            found.append((int(seq), bytes(payload)))
    finally:
        result.close()
    return found, newest, cut or seen == params["limit"]


class OutboxFeed:
    """One watcher's reads of an outbox: every event after a position, as far as the outbox is final. On
    SQLite one writer at a time commits origin_seq values in order, so whatever is visible is final."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox
        self._frontier = Frontier(outbox.table_name)

    def read(self, conn: Connection, after: int, limit: int) -> OutboxPage:
        if conn.dialect.name != "postgresql":
            return self._outbox.read(conn, after, limit)
        self._frontier.reconnected(conn.engine)
        final, held = self._frontier.advance(conn)
        return replace(self._outbox.read(conn, after, limit, through=final), held=held)
