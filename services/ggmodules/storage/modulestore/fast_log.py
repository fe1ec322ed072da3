"""The outbox and request log of `ggmodules.storage`, with their statements prepared (see prepared.py).

Same tables, same semantics; only how the statements are executed differs.

A transaction appends all its events at once (`append_all`), after its other work: first it reserves
each stream's next seqs, taking the stream heads in one order, (run id, agent id) bytewise; then it inserts
the events in their natural order. Two transactions whose streams overlap (a write to the run's board and
one to a profile's shared memories, each re-stated to every holder) thus never hold one head each while
waiting for the other's: no deadlock. Per-stream order and origin_seq order are the events' order.
On PostgreSQL the reservation is one statement; SQLite admits one writer at a time.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, bindparam, select, text, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.idempotency import ClaimLost, RequestLog, request_id_reused
from ggmodules.storage.modulestore import fan_out_rows
from ggmodules.storage.modulestore.prepared import Prepared, Tx
from ggmodules.storage.modulestore.tables import MsOutbox, MsRequest, MsStreamHead
from ggmodules.storage.outbox import Outbox

_ROWS: Table = MsOutbox.__table__  # type: ignore[attr-defined]
_HEADS: Table = MsStreamHead.__table__  # type: ignore[attr-defined]
_REQUESTS: Table = MsRequest.__table__  # type: ignore[attr-defined]


# PostgreSQL: reserves `counts[i]` seqs on each stream (run_ids[i], agent_ids[i]) in one statement. Rows are
# inserted, and so their heads locked, in the order selected: (run id, agent id) bytewise, whatever the
# database's collation. Returns each stream's last reserved seq.
_RESERVE = Prepared(
    text(
        f"INSERT INTO {_HEADS.name} AS head (run_id, agent_id, seq) "
        "SELECT run_id, agent_id, n FROM unnest("
        "CAST(:run_ids AS text[]), CAST(:agent_ids AS text[]), CAST(:counts AS integer[])"
        ") AS s(run_id, agent_id, n) "
        'ORDER BY run_id COLLATE "C", agent_id COLLATE "C" '
        "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = head.seq + excluded.seq "
        "RETURNING run_id, agent_id, seq"
    )
)
# SQLite: the same for one stream.
_RESERVE_ONE = Prepared(
    sqlite.insert(_HEADS)
    .values(run_id=bindparam("run_id"), agent_id=bindparam("agent_id"), seq=bindparam("n"))
    .on_conflict_do_update(index_elements=["run_id", "agent_id"], set_={"seq": _HEADS.c.seq + bindparam("n")})
    .returning(_HEADS.c.seq)
)
# SQLite: the same for many streams in one statement, given as a JSON array of [run_id, agent_id, n] (a write
# to a store with H holders reserves H streams: one statement instead of H).
_RESERVE_MANY = Prepared(
    text(
        f"INSERT INTO {_HEADS.name} (run_id, agent_id, seq) "
        "SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(:streams) WHERE true "
        "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = seq + excluded.seq "
        "RETURNING run_id, agent_id, seq"
    )
)
_INSERT_EVENTS = Prepared(
    _ROWS.insert().values(
        run_id=bindparam("run_id"),
        agent_id=bindparam("agent_id"),
        stream_seq=bindparam("stream_seq"),
        payload=bindparam("payload"),
    )
)


def _claim(dialect: Any) -> Prepared:
    stmt = dialect.insert(_REQUESTS).values(
        method=bindparam("method"),
        request_id=bindparam("request_id"),
        request_hash=bindparam("request_hash"),
        response=bindparam("response"),
        created_at=bindparam("created_at"),
    )
    return Prepared(
        stmt.on_conflict_do_nothing(index_elements=["method", "request_id"]).returning(_REQUESTS.c.request_id)
    )


_CLAIM = {"sqlite": _claim(sqlite), "postgresql": _claim(postgresql)}
_RECALL = Prepared(
    select(_REQUESTS.c.request_hash, _REQUESTS.c.response).where(
        _REQUESTS.c.method == bindparam("method"), _REQUESTS.c.request_id == bindparam("request_id")
    )
)
_ANSWER = Prepared(
    update(_REQUESTS)
    .where(_REQUESTS.c.method == bindparam("k_method"), _REQUESTS.c.request_id == bindparam("k_request_id"))
    .values(response=bindparam("v_response"))
)


class FastOutbox(Outbox):
    def __init__(self, origin: str) -> None:
        super().__init__(origin, MsOutbox, MsStreamHead)

    def append_all(self, conn: Connection | Tx, events: Sequence[event_pb2.Event | FanOutEntry]) -> None:
        """Appends `events` to their streams, in this order, once per transaction (see the module doc).
        Sets each event's origin, stream_seq and time; origin_seq is the row's key, not read back. A
        FanOutEntry is one row standing for its writer's event and its holders' snapshots
        (storage/fan_out.py): their streams are reserved here all the same."""
        if not events:
            return
        tx = Tx.of(conn)
        counts = Counter(s for e in events for s in (e.streams() if isinstance(e, FanOutEntry) else [_of(e)]))
        last = self._reserve(tx, counts)
        seconds, nanos = divmod(time.time_ns(), 1_000_000_000)

        def next_seq(stream: tuple[str, str]) -> int:
            counts[stream] -= 1
            return last[stream] - counts[stream]

        rows = []
        for entry in events:
            e = entry.event if isinstance(entry, FanOutEntry) else entry
            seq = next_seq(_of(e))
            e.origin = self.origin
            e.stream_seq = seq
            if not e.HasField("time"):
                e.time.seconds, e.time.nanos = seconds, nanos
            if isinstance(entry, FanOutEntry):
                entry.stream_seqs = [next_seq((e.run_id, agent_id)) for agent_id, _ in entry.holders]
                rows.append(fan_out_rows.Row(e.run_id, e.agent_id, seq, entry.payload(), entry))
            else:
                rows.append(fan_out_rows.Row(e.run_id, e.agent_id, seq, e.SerializeToString()))
        if any(r.entry is not None for r in rows):
            fan_out_rows.insert(tx, rows)
            return
        _INSERT_EVENTS.many(
            tx, [{"run_id": r[0], "agent_id": r[1], "stream_seq": r[2], "payload": r[3]} for r in rows]
        )

    @staticmethod
    def _reserve(tx: Tx, counts: Counter[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The last seq reserved on each stream, `counts[stream]` of them."""
        streams = sorted(counts)
        if tx.dialect.name == "postgresql":
            params = {
                "run_ids": [r for r, _ in streams],
                "agent_ids": [a for _, a in streams],
                "counts": [counts[s] for s in streams],
            }
            return {(r, a): int(seq) for r, a, seq in _RESERVE.all(tx, params)}
        if len(streams) > 1:
            many = json.dumps([[r, a, counts[(r, a)]] for r, a in streams])
            return {(r, a): int(seq) for r, a, seq in _RESERVE_MANY.all(tx, {"streams": many})}
        ((r, a),) = streams
        return {(r, a): int(_RESERVE_ONE.scalar(tx, {"run_id": r, "agent_id": a, "n": counts[(r, a)]}))}


def _of(e: event_pb2.Event) -> tuple[str, str]:
    return e.run_id, e.agent_id


class FastRequestLog(RequestLog):
    def __init__(self) -> None:
        super().__init__(MsRequest)

    def claim(self, conn: Connection | Tx, method: str, request_id: str, request_hash: str) -> bytes | None:
        tx = Tx.of(conn)
        params = {
            "method": method,
            "request_id": request_id,
            "request_hash": request_hash,
            "response": b"",
            "created_at": int(time.time()),
        }
        if _CLAIM[tx.dialect.name].one(tx, params) is not None:
            return None
        answer = self.recall(tx, method, request_id, request_hash)
        if answer is None:
            raise ClaimLost(method, request_id)
        return answer

    def recall(self, conn: Connection | Tx, method: str, request_id: str, request_hash: str) -> bytes | None:
        row = _RECALL.one(conn, {"method": method, "request_id": request_id})
        if row is None:
            return None
        if row[0] != request_hash:
            raise request_id_reused(method, request_id)
        return bytes(row[1])

    def answer(self, conn: Connection | Tx, method: str, request_id: str, response: bytes) -> None:
        _ANSWER.execute(conn, {"k_method": method, "k_request_id": request_id, "v_response": response})
