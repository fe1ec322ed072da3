"""The telemetry outbox: events appended in the same transaction as the change they describe.

Each service has its own outbox table (a subclass of `OutboxRow`) and stream-head table. `origin_seq`
is the row's autoincrement key; `stream_seq` increases along each (run, agent) stream.
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from ggmodules.common.v1 import event_pb2


class OutboxRow(SQLModel):
    origin_seq: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(index=True)
    agent_id: str
    stream_seq: int
    # A serialized ggmodules.common.v1.Event, without origin_seq (the key is the truth).
    payload: bytes


class StreamHeadRow(SQLModel):
    run_id: str = Field(primary_key=True)
    agent_id: str = Field(primary_key=True)
    seq: int = 0


class Outbox:
    """Appends to and reads from one service's outbox tables."""

    def __init__(self, origin: str, row: type[OutboxRow], head: type[StreamHeadRow]) -> None:
        self.origin = origin
        self._rows = row.__table__  # type: ignore[attr-defined]
        self._heads = head.__table__  # type: ignore[attr-defined]

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
        self, conn: Connection, after_origin_seq: int, limit: int, run_id: str = ""
    ) -> tuple[list[event_pb2.Event], int]:
        """Events after `after_origin_seq` in order, and the outbox head."""
        stmt = select(self._rows).where(self._rows.c.origin_seq > after_origin_seq)
        if run_id:
            stmt = stmt.where(self._rows.c.run_id == run_id)
        rows = conn.execute(stmt.order_by(self._rows.c.origin_seq).limit(limit)).all()
        events = []
        for row in rows:
            ev = event_pb2.Event.FromString(row.payload)
            ev.origin_seq = row.origin_seq
            events.append(ev)
        head = conn.execute(select(self._rows.c.origin_seq).order_by(self._rows.c.origin_seq.desc()).limit(1))
        return events, int(head.scalar() or 0)
