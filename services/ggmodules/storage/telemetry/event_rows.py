"""How an event is stored in `tel_events` and read back.

The row's columns hold the event's origin, origin_seq, run_id and agent_id (for the run index and the
filters), so its stored payload leaves them out (issue 14: Telemetry's stored bytes) and a
read puts them back from the columns. A payload stored before that still carries them: read back the same.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Row, delete, event, func, select, union_all
from sqlalchemy.engine import Connection, Engine
from sqlmodel import create_engine

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import StreamFilter
from ggmodules.storage.telemetry import event_blocks, meta
from ggmodules.storage.telemetry.event_blocks import BLOCKS
from ggmodules.storage.telemetry.recent import StoredEvent
from ggmodules.storage.telemetry.tables import TelEventRow, TelMetaRow

EVENTS = TelEventRow.__table__  # type: ignore[attr-defined]
META = TelMetaRow.__table__  # type: ignore[attr-defined]
# The fields a row's columns hold, left out of its payload.
_IN_COLUMNS = ("origin", "origin_seq", "run_id", "agent_id")


def stored_payload(ev: event_pb2.Event) -> bytes:
    """`ev` serialized without the fields its row's columns hold (`ev` is left as it was)."""
    held = (ev.origin, ev.origin_seq, ev.run_id, ev.agent_id)
    ev.origin, ev.origin_seq, ev.run_id, ev.agent_id = "", 0, "", ""
    try:
        return ev.SerializeToString()
    finally:
        ev.origin, ev.origin_seq, ev.run_id, ev.agent_id = held


def event_of(row: Row[Any]) -> event_pb2.Event:
    """The event a row holds: its payload with the columns' fields put back."""
    ev = event_pb2.Event.FromString(row.payload)
    ev.origin, ev.origin_seq, ev.run_id, ev.agent_id = row.origin, row.origin_seq, row.run_id, row.agent_id
    return ev


_INSERT = EVENTS.insert().returning(EVENTS.c.cursor, EVENTS.c.origin, EVENTS.c.origin_seq)


def insert(conn: Connection, events: Sequence[event_pb2.Event]) -> list[StoredEvent]:
    """Inserts `events` (each (origin, origin_seq) once: the caller passed over those stored already);
    returns them with their cursors and stored sizes."""
    payloads = {(ev.origin, ev.origin_seq): (ev, stored_payload(ev)) for ev in events}
    now = int(time.time())
    rows_in = [
        {
            "origin": ev.origin,
            "origin_seq": ev.origin_seq,
            "run_id": ev.run_id,
            "agent_id": ev.agent_id,
            "payload": payload,
            "stored_at": now,
        }
        for ev, payload in payloads.values()
    ]
    if conn.dialect.name == "sqlite":
        return _insert_sqlite(conn, payloads.values(), now)
    # The rows go as parameters, apart from the statement, so it is compiled once (SQLAlchemy's
    # "insertmanyvalues" still sends them as one INSERT).
    rows = conn.execute(_INSERT, rows_in).all()
    stored = []
    for r in rows:
        ev, payload = payloads[(r.origin, r.origin_seq)]
        stored.append(StoredEvent(int(r.cursor), ev, len(payload)))
    return stored


# SQLite: one short prepared statement a row on the DBAPI connection (no round trips to save), without the
# Core execution's bookkeeping, which costs more than the insert itself.
_INSERT_SQLITE = (
    "INSERT INTO tel_events (origin, origin_seq, run_id, agent_id, payload, stored_at) "
    "VALUES (?, ?, ?, ?, ?, ?) RETURNING cursor"
)


def _insert_sqlite(
    conn: Connection, rows: Iterable[tuple[event_pb2.Event, bytes]], now: int
) -> list[StoredEvent]:
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    stored = []
    try:
        for ev, payload in rows:
            cursor.execute(_INSERT_SQLITE, (ev.origin, ev.origin_seq, ev.run_id, ev.agent_id, payload, now))
            ((number,),) = cursor.fetchall()
            stored.append(StoredEvent(int(number), ev, len(payload)))
    finally:
        cursor.close()
    return stored


def head(conn: Connection) -> int:
    """The newest cursor stored (in a row, or packed when every row was: event_blocks.py)."""
    newest = union_all(select(func.max(EVENTS.c.cursor)), select(func.max(BLOCKS.c.last_cursor))).subquery()
    return int(conn.execute(select(func.max(newest.c[0]))).scalar() or 0)


def held(conn: Connection) -> tuple[int, int]:
    """How many events the log holds, and their stored payload bytes: its rows, and its packed events above
    `pruned_through`."""
    count, size = conn.execute(select(func.count(), func.sum(func.length(EVENTS.c.payload)))).one()
    packed, packed_size = event_blocks.totals(conn, _pruned(conn))
    return int(count) + packed, int(size or 0) + packed_size


def _pruned(conn: Connection) -> int:
    return int(conn.execute(select(META.c.value).where(META.c.key == meta.PRUNED_THROUGH)).scalar() or 0)


def read(conn: Connection, where: StreamFilter, after: int, limit: int) -> tuple[list[StoredEvent], int]:
    """At most `limit` matching events after `after` up to the newest cursor, and that newest cursor.

    Rows are read before blocks: an event packed in between is then read twice (once kept), never missed,
    since packing only moves rows into blocks and blocks hold the older cursors."""
    newest = head(conn)
    columns = (EVENTS.c[name] for name in ("cursor", "payload", *_IN_COLUMNS))
    stmt = select(*columns).where(EVENTS.c.cursor > after, EVENTS.c.cursor <= newest)
    if where.run_id:
        stmt = stmt.where(EVENTS.c.run_id == where.run_id)
    if where.agent_id:
        stmt = stmt.where(EVENTS.c.agent_id == where.agent_id)
    rows = conn.execute(stmt.order_by(EVENTS.c.cursor).limit(limit)).all()
    got = [StoredEvent(int(r.cursor), event_of(r), len(r.payload)) for r in rows]
    packed = _packed(conn, where, after, min(newest, got[0].cursor - 1 if got else newest), limit)
    return packed + got[: limit - len(packed)], newest


def _packed(conn: Connection, where: StreamFilter, after: int, upto: int, limit: int) -> list[StoredEvent]:
    """At most `limit` matching packed events with a cursor in (after, upto], not yet pruned."""
    if upto <= after:
        return []
    pruned = _pruned(conn)
    out: list[StoredEvent] = []
    for _, events in event_blocks.blocks_after(conn, max(after, pruned), where.run_id):
        for p in events:
            if p.cursor <= after or p.cursor <= pruned:
                continue
            if p.cursor > upto:
                return out
            if (where.run_id and p.run_id != where.run_id) or (
                where.agent_id and p.agent_id != where.agent_id
            ):
                continue
            out.append(StoredEvent(p.cursor, _event(p), len(p.payload)))
            if len(out) == limit:
                return out
    return out


def _event(p: event_blocks.PackedEvent) -> event_pb2.Event:
    ev = event_pb2.Event.FromString(p.payload)
    ev.origin, ev.origin_seq, ev.run_id, ev.agent_id = p.origin, p.origin_seq, p.run_id, p.agent_id
    return ev


def prune(conn: Connection, through: int) -> tuple[int, int]:
    """Deletes the events through cursor `through` (rows and blocks) and raises `pruned_through` to it;
    returns how many events went and their payload bytes."""
    pruned, size = conn.execute(
        select(func.count(), func.sum(func.length(EVENTS.c.payload))).where(EVENTS.c.cursor <= through)
    ).one()
    conn.execute(delete(EVENTS).where(EVENTS.c.cursor <= through))
    packed, packed_size = event_blocks.prune(conn, meta.value(conn, meta.PRUNED_THROUGH), through)
    meta.write(conn, raises={meta.PRUNED_THROUGH: int(through)})
    return int(pruned) + packed, int(size or 0) + packed_size


def reader_engine(engine: Engine) -> Engine:
    """On SQLite, a second engine whose connections read in autocommit mode (WAL: readers never block the
    writer). PostgreSQL reads under READ COMMITTED on the same engine."""
    if engine.dialect.name != "sqlite":
        return engine
    reader = create_engine(engine.url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(reader, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        dbapi_conn.execute("PRAGMA busy_timeout=30000")

    return reader
