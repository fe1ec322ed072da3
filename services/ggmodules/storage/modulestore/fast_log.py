"""The outbox and request log of `ggmodules.storage`, with their statements prepared (see prepared.py).

Same tables, same semantics; only how the statements are executed differs.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Table, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.idempotency import RequestLog, request_id_reused
from ggmodules.storage.modulestore.prepared import Prepared, Tx
from ggmodules.storage.modulestore.tables import MsOutbox, MsRequest, MsStreamHead
from ggmodules.storage.outbox import Outbox

_ROWS: Table = MsOutbox.__table__  # type: ignore[attr-defined]
_HEADS: Table = MsStreamHead.__table__  # type: ignore[attr-defined]
_REQUESTS: Table = MsRequest.__table__  # type: ignore[attr-defined]


def _next_seq(dialect: Any) -> Prepared:
    stmt = dialect.insert(_HEADS).values(run_id=bindparam("run_id"), agent_id=bindparam("agent_id"), seq=1)
    return Prepared(
        stmt.on_conflict_do_update(
            index_elements=["run_id", "agent_id"], set_={"seq": _HEADS.c.seq + 1}
        ).returning(_HEADS.c.seq)
    )


_NEXT_SEQ = {"sqlite": _next_seq(sqlite), "postgresql": _next_seq(postgresql)}
_INSERT_EVENT = Prepared(
    _ROWS.insert()
    .values(
        run_id=bindparam("run_id"),
        agent_id=bindparam("agent_id"),
        stream_seq=bindparam("stream_seq"),
        payload=bindparam("payload"),
    )
    .returning(_ROWS.c.origin_seq)
)
_RECALL = Prepared(
    select(_REQUESTS.c.request_hash, _REQUESTS.c.response).where(
        _REQUESTS.c.method == bindparam("method"), _REQUESTS.c.request_id == bindparam("request_id")
    )
)
_RECORD = Prepared(
    _REQUESTS.insert().values(
        method=bindparam("method"),
        request_id=bindparam("request_id"),
        request_hash=bindparam("request_hash"),
        response=bindparam("response"),
    )
)


class FastOutbox(Outbox):
    def __init__(self, origin: str) -> None:
        super().__init__(origin, MsOutbox, MsStreamHead)

    def append(self, conn: Connection | Tx, event: event_pb2.Event) -> event_pb2.Event:
        tx = Tx.of(conn)
        stream = {"run_id": event.run_id, "agent_id": event.agent_id}
        stream_seq = int(_NEXT_SEQ[tx.dialect.name].scalar(tx, stream))
        event.origin = self.origin
        event.stream_seq = stream_seq
        if not event.HasField("time"):
            seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
            event.time.seconds, event.time.nanos = seconds, nanos
        event.origin_seq = int(
            _INSERT_EVENT.scalar(
                tx, {**stream, "stream_seq": stream_seq, "payload": event.SerializeToString()}
            )
        )
        return event


class FastRequestLog(RequestLog):
    def __init__(self) -> None:
        super().__init__(MsRequest)

    def recall(self, conn: Connection | Tx, method: str, request_id: str, request_hash: str) -> bytes | None:
        row = _RECALL.one(conn, {"method": method, "request_id": request_id})
        if row is None:
            return None
        if row[0] != request_hash:
            raise request_id_reused(method, request_id)
        return bytes(row[1])

    def record(
        self, conn: Connection | Tx, method: str, request_id: str, request_hash: str, response: bytes
    ) -> None:
        _RECORD.execute(
            conn,
            {"method": method, "request_id": request_id, "request_hash": request_hash, "response": response},
        )
