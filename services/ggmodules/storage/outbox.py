"""The telemetry outbox: events appended in the same transaction as the change they describe.

Each service has its own outbox table (a subclass of `OutboxRow`) and stream-head table. `origin_seq`
is the row's autoincrement key; `stream_seq` increases along each (run, agent) stream.

Reads come in pages bounded in count and in bytes (`MAX_BATCH_BYTES`, counted as the events travel), so a
page always fits in one gRPC message; an event larger than the bound makes a page of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import ColumnElement, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.columns import SEQ, seq_field

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

    def __init__(self, origin: str, row: type[OutboxRow], head: type[StreamHeadRow]) -> None:
        self.origin = origin
        self._rows = row.__table__  # type: ignore[attr-defined]
        self._heads = head.__table__  # type: ignore[attr-defined]

    @property
    def table_name(self) -> str:
        return str(self._rows.name)

    def append(self, conn: Connection, event: event_pb2.Event) -> event_pb2.Event:
        """Appends `event` to its (run, agent) stream inside the caller's transaction."""
        stream_seq = self._next_stream_seq(conn, event.run_id, event.agent_id)
        event.origin = self.origin
        event.stream_seq = stream_seq
        if not event.HasField("time"):
            ts = Timestamp()
            ts.FromDatetime(datetime.now(UTC))
            event.time.CopyFrom(ts)
        result = conn.execute(
            self._rows.insert().values(
                run_id=event.run_id,
                agent_id=event.agent_id,
                stream_seq=stream_seq,
                payload=event.SerializeToString(),
            )
        )
        key = result.inserted_primary_key
        assert key is not None
        event.origin_seq = int(key[0])
        return event

    def _next_stream_seq(self, conn: Connection, run_id: str, agent_id: str) -> int:
        dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
        stmt = dialect.insert(self._heads).values(run_id=run_id, agent_id=agent_id, seq=1)
        stmt = stmt.on_conflict_do_update(
            index_elements=["run_id", "agent_id"], set_={"seq": self._heads.c.seq + 1}
        ).returning(self._heads.c.seq)
        return int(conn.execute(stmt).scalar_one())

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
        `max_bytes` of events, or the first one alone when it is larger. Sizes are read before payloads,
        so what does not fit is never fetched."""
        rows = self._rows
        where: list[ColumnElement[bool]] = [rows.c.origin_seq > after_origin_seq]
        if through is not None:
            where.append(rows.c.origin_seq <= through)
        if run_id:
            where.append(rows.c.run_id == run_id)
        sizes = conn.execute(
            select(rows.c.origin_seq, func.length(rows.c.payload))
            .where(*where)
            .order_by(rows.c.origin_seq)
            .limit(limit)
        ).all()
        last, taken, total = 0, 0, 0
        for seq, size in sizes:
            total += int(size) + _EVENT_OVERHEAD
            if taken and total > max_bytes:
                break
            last, taken = int(seq), taken + 1
        events = []
        if taken:
            stmt = select(rows.c.origin_seq, rows.c.payload).where(*where, rows.c.origin_seq <= last)
            for seq, payload in conn.execute(stmt.order_by(rows.c.origin_seq)):
                ev = event_pb2.Event.FromString(payload)
                ev.origin_seq = seq
                events.append(ev)
        head = conn.execute(select(func.max(rows.c.origin_seq))).scalar()
        return OutboxPage(events, int(head or 0), more=taken < len(sizes) or len(sizes) == limit)
