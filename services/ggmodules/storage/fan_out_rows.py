"""Inserting outbox rows that stand for several events (storage/fan_out.py): each row's key is the last of a
block of consecutive origin_seq numbers, one per event it stands for.

- SQLite admits one writer at a time: the blocks follow the largest key (which is also where SQLite's rowid
  numbering would go on).
- PostgreSQL draws every number from the outbox's sequence, as a plain insert does, inside the table's
  write lock (so the outbox frontier, storage/outbox_frontier.py, counts this transaction among the ones
  that may still commit what it drew): one INSERT draws the block and inserts the rows keyed from it, the
  lock taken as the statement starts, before anything is drawn. The block is consecutive unless another
  transaction drew in between; then the INSERT stores nothing and, rarely, the rows are stored a row per
  event under numbers drawn again (what the outbox did before issue 14), which reads the same.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Table, bindparam, func, select, text

from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.prepared import Prepared, Tx

# Draws `n` numbers from the outbox table's origin_seq sequence (PostgreSQL).
_DRAW = Prepared(
    text(
        "SELECT nextval(s.seq) FROM (SELECT CAST(pg_get_serial_sequence(:table, 'origin_seq') AS regclass) "
        "AS seq) s, generate_series(1, CAST(:n AS integer))"
    )
)


# Draws `n` numbers from the outbox table's sequence (PostgreSQL), as rows `v`.
# The sequence is looked up once (OFFSET 0 keeps the lookup a scan of its own), not once per number.
_BLOCK = (
    "SELECT nextval(q.seq) AS v FROM ("
    "SELECT CAST(pg_get_serial_sequence('{table}', 'origin_seq') AS regclass) AS seq OFFSET 0"
    ") q, generate_series(1, CAST(:n AS integer))"
)
# Draws `n` numbers (_BLOCK) and, when they are consecutive, inserts the rows (given as arrays, in order),
# each keyed by the last number of its block (`sizes`: how many numbers each takes). Returns the keys
# inserted: none when the numbers were not consecutive.
_DRAW_AND_INSERT = """
INSERT INTO {table} (origin_seq, run_id, agent_id, stream_seq, payload)
SELECT b.lo - 1 + r.upto, r.run_id, r.agent_id, r.stream_seq, r.payload
FROM (
  SELECT min(d.v) AS lo, max(d.v) AS hi FROM ({block}) d
) b, (
  SELECT u.run_id, u.agent_id, u.stream_seq, u.payload, sum(u.size) OVER (ORDER BY u.i) AS upto
  FROM unnest(
    CAST(:run_ids AS text[]), CAST(:agent_ids AS text[]), CAST(:stream_seqs AS bigint[]),
    CAST(:payloads AS bytea[]), CAST(:sizes AS integer[])
  ) WITH ORDINALITY AS u(run_id, agent_id, stream_seq, payload, size, i)
) r
WHERE b.hi - b.lo = CAST(:n AS integer) - 1
RETURNING origin_seq
"""


class Row(NamedTuple):
    """One row to insert: an event's, or a fan-out entry's (`entry`, which stands for len(entry) events)."""

    run_id: str
    agent_id: str
    stream_seq: int
    payload: bytes
    entry: FanOutEntry | None = None

    @property
    def size(self) -> int:
        return 1 if self.entry is None else len(self.entry)


class KeyedRows:
    """The statements that insert one outbox table's rows under keys chosen here."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self._insert = Prepared(
            table.insert().values(
                origin_seq=bindparam("origin_seq"),
                run_id=bindparam("run_id"),
                agent_id=bindparam("agent_id"),
                stream_seq=bindparam("stream_seq"),
                payload=bindparam("payload"),
            )
        )
        self._largest = Prepared(select(func.coalesce(func.max(table.c.origin_seq), 0)))
        self._draw_and_insert = Prepared(
            text(_DRAW_AND_INSERT.format(table=table.name, block=_BLOCK.format(table=table.name)))
        )

    def insert(self, tx: Tx, rows: list[Row]) -> None:
        """Inserts `rows` in order, each keyed by the last number of its block."""
        total = sum(r.size for r in rows)
        if tx.dialect.name == "postgresql":
            arrays = {
                "n": total,
                "run_ids": [r.run_id for r in rows],
                "agent_ids": [r.agent_id for r in rows],
                "stream_seqs": [r.stream_seq for r in rows],
                "payloads": [r.payload for r in rows],
                "sizes": [r.size for r in rows],
            }
            if self._draw_and_insert.all(tx, arrays):
                return
            # Another transaction drew in between: a row per event, under numbers drawn again (the lock
            # is held since the INSERT; the numbers drawn by it are a gap, as a rollback's are).
            rows = [single for r in rows for single in _singles(r)]
            drawn = sorted(int(v) for (v,) in _DRAW.all(tx, {"table": self._table.name, "n": len(rows)}))
            self._insert.many(tx, [{**_params(r), "origin_seq": n} for r, n in zip(rows, drawn, strict=True)])
            return
        last = int(self._largest.scalar(tx, {}))
        params = []
        for r in rows:
            last += r.size
            params.append({**_params(r), "origin_seq": last})
        self._insert.many(tx, params)


def _params(r: Row) -> dict[str, Any]:
    return {"run_id": r.run_id, "agent_id": r.agent_id, "stream_seq": r.stream_seq, "payload": r.payload}


def _singles(r: Row) -> list[Row]:
    if r.entry is None:
        return [r]
    return [Row(ev.run_id, ev.agent_id, ev.stream_seq, ev.SerializeToString()) for ev in r.entry.events()]
