"""Appending to an outbox, with its statements prepared (see prepared.py): one implementation for every
service's outbox (storage/outbox.py).

A transaction appends its events at once (`append_all`), after its other work: first it reserves each
stream's next seqs, taking the stream heads in one order, (run id, agent id) bytewise; then it inserts the
events in their natural order. Two transactions whose streams overlap (a write to the run's board and one
to a profile's shared memories, each re-stated to every holder) thus never hold one head each while
waiting for the other's: no deadlock. Per-stream order and origin_seq order are the events' order.
On PostgreSQL the reservation is one statement; SQLite admits one writer at a time. A write with other
holders appends one FanOutEntry: one row for all its events (storage/fan_out.py, fan_out_rows.py).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence

from sqlalchemy import Table, bindparam, text
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.fan_out_rows import KeyedRows, Row
from ggmodules.storage.pg_outbox_append import OneEvent
from ggmodules.storage.prepared import Prepared, Tx


class Appender:
    """The append statements of one outbox table and its stream-head table."""

    def __init__(self, origin: str, rows: Table, heads: Table) -> None:
        self.origin = origin
        # PostgreSQL: reserves `counts[i]` seqs on each stream (run_ids[i], agent_ids[i]) in one statement.
        # Rows are inserted, and so their heads locked, in the order selected: (run id, agent id) bytewise,
        # whatever the database's collation. Returns each stream's last reserved seq.
        self._reserve = Prepared(
            text(
                f"INSERT INTO {heads.name} AS head (run_id, agent_id, seq) "
                "SELECT run_id, agent_id, n FROM unnest("
                "CAST(:run_ids AS text[]), CAST(:agent_ids AS text[]), CAST(:counts AS integer[])"
                ") AS s(run_id, agent_id, n) "
                'ORDER BY run_id COLLATE "C", agent_id COLLATE "C" '
                "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = head.seq + excluded.seq "
                "RETURNING run_id, agent_id, seq"
            )
        )
        # SQLite: the same for one stream.
        self._reserve_one = Prepared(
            sqlite.insert(heads)
            .values(run_id=bindparam("run_id"), agent_id=bindparam("agent_id"), seq=bindparam("n"))
            .on_conflict_do_update(
                index_elements=["run_id", "agent_id"], set_={"seq": heads.c.seq + bindparam("n")}
            )
            .returning(heads.c.seq)
        )
        # SQLite: the same for many streams in one statement, given as a JSON array of [run_id, agent_id, n]
        # (a write to a store with H holders reserves H streams: one statement instead of H).
        self._reserve_many = Prepared(
            text(
                f"INSERT INTO {heads.name} (run_id, agent_id, seq) "
                "SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(:streams) WHERE true "
                "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = seq + excluded.seq "
                "RETURNING run_id, agent_id, seq"
            )
        )
        insert = rows.insert().values(
            run_id=bindparam("run_id"),
            agent_id=bindparam("agent_id"),
            stream_seq=bindparam("stream_seq"),
            payload=bindparam("payload"),
        )
        self._insert = Prepared(insert)
        self._keyed = KeyedRows(rows)
        self._insert_returning = Prepared(insert.returning(rows.c.origin_seq))
        self._one_event = OneEvent(rows, heads)  # PostgreSQL, a transaction that defers

    def append(self, conn: Connection | Tx, event: event_pb2.Event) -> event_pb2.Event:
        """Appends `event` to its (run, agent) stream and reads back its origin_seq."""
        tx = Tx.of(conn)
        row = self._stamp(tx, [event])[0]
        event.origin_seq = int(self._insert_returning.scalar(tx, _params(row)))
        return event

    def append_all(self, conn: Connection | Tx, events: Sequence[event_pb2.Event | FanOutEntry]) -> None:
        """Appends `events` to their streams, in this order, once per transaction (see the module doc).
        Sets each event's origin, stream_seq and time; origin_seq is the row's key, not read back. A
        FanOutEntry is one row standing for its writer's event and its holders' snapshots
        (storage/fan_out.py): their streams are reserved here all the same."""
        if not events:
            return
        tx = Tx.of(conn)
        if len(events) == 1 and not isinstance(events[0], FanOutEntry):  # a write no other holder hears of
            if tx.deferred is not None:  # PostgreSQL, deferring: no round trip of its own
                self._one_event.append(tx, self._stamped(events[0]))
                return
            if tx.dialect.name == "sqlite":  # the common case, without the bookkeeping for many
                self._append_one(tx, events[0])
                return
        rows = self._stamp(tx, events)
        if any(r.entry is not None for r in rows):
            self._keyed.insert(tx, rows)
            return
        self._insert.many(tx, [_params(r) for r in rows])

    def _append_one(self, tx: Tx, e: event_pb2.Event) -> None:
        """SQLite: `append_all` of one event, without the bookkeeping for many."""
        run_id, agent_id = e.run_id, e.agent_id
        seq = int(self._reserve_one.scalar(tx, {"run_id": run_id, "agent_id": agent_id, "n": 1}))
        e.origin = self.origin
        e.stream_seq = seq
        if not e.HasField("time"):
            e.time.seconds, e.time.nanos = divmod(time.time_ns(), 1_000_000_000)
        params = {"run_id": run_id, "agent_id": agent_id, "stream_seq": seq, "payload": e.SerializeToString()}
        self._insert.execute(tx, params)

    def _stamp(self, tx: Tx, events: Sequence[event_pb2.Event | FanOutEntry]) -> list[Row]:
        """Reserves the events' stream seqs and sets origin, stream_seq and time: their rows, in order."""
        counts = Counter(s for e in events for s in (e.streams() if isinstance(e, FanOutEntry) else [_of(e)]))
        last = self._reserved(tx, counts)
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
                rows.append(Row(e.run_id, e.agent_id, seq, entry.payload(), entry))
            else:
                rows.append(Row(e.run_id, e.agent_id, seq, e.SerializeToString()))
        return rows

    def _stamped(self, e: event_pb2.Event) -> event_pb2.Event:
        """Sets origin and time (stream_seq is the database's, pg_outbox_append.py)."""
        e.origin = self.origin
        if not e.HasField("time"):
            e.time.seconds, e.time.nanos = divmod(time.time_ns(), 1_000_000_000)
        return e

    def _reserved(self, tx: Tx, counts: Counter[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """The last seq reserved on each stream, `counts[stream]` of them."""
        streams = sorted(counts)
        if tx.dialect.name == "postgresql":
            params = {
                "run_ids": [r for r, _ in streams],
                "agent_ids": [a for _, a in streams],
                "counts": [counts[s] for s in streams],
            }
            return {(r, a): int(seq) for r, a, seq in self._reserve.all(tx, params)}
        if len(streams) > 1:
            many = json.dumps([[r, a, counts[(r, a)]] for r, a in streams])
            return {(r, a): int(seq) for r, a, seq in self._reserve_many.all(tx, {"streams": many})}
        ((r, a),) = streams
        n = counts[(r, a)]
        return {(r, a): int(self._reserve_one.scalar(tx, {"run_id": r, "agent_id": a, "n": n}))}


def _of(e: event_pb2.Event) -> tuple[str, str]:
    return e.run_id, e.agent_id


def _params(r: Row) -> dict[str, object]:
    return {"run_id": r.run_id, "agent_id": r.agent_id, "stream_seq": r.stream_seq, "payload": r.payload}
