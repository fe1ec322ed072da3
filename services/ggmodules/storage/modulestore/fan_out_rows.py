"""Inserting outbox rows that stand for several events (storage/fan_out.py): each row's key is the last of a
block of consecutive origin_seq numbers, one per event it stands for.

- SQLite admits one writer at a time: the blocks follow the largest key (which is also where SQLite's rowid
  numbering would go on).
- PostgreSQL draws every number from the outbox's sequence, as a plain insert does, inside the table's
  write lock (taken first, so the outbox frontier, storage/outbox_frontier.py, counts this transaction among
  the ones that may still commit what it drew). Numbers drawn one statement apart are consecutive unless
  another transaction drew in between; then, rarely, the rows are stored a row per event under the numbers
  drawn (what the outbox did before issue 14), which reads the same.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import Table, bindparam, func, select, text

from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.modulestore.prepared import Prepared, Tx
from ggmodules.storage.modulestore.tables import MsOutbox

_ROWS: Table = MsOutbox.__table__  # type: ignore[attr-defined]
_INSERT_KEYED = Prepared(
    _ROWS.insert().values(
        origin_seq=bindparam("origin_seq"),
        run_id=bindparam("run_id"),
        agent_id=bindparam("agent_id"),
        stream_seq=bindparam("stream_seq"),
        payload=bindparam("payload"),
    )
)
_LARGEST = Prepared(select(func.coalesce(func.max(_ROWS.c.origin_seq), 0)))
_LOCK = Prepared(text(f"LOCK TABLE {_ROWS.name} IN ROW EXCLUSIVE MODE"))
_DRAW = Prepared(
    text(
        "SELECT nextval(s.seq) FROM (SELECT CAST(pg_get_serial_sequence(:table, 'origin_seq') AS regclass) "
        "AS seq) s, generate_series(1, CAST(:n AS integer))"
    )
)


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


def insert(tx: Tx, rows: list[Row]) -> None:
    """Inserts `rows` in order, each keyed by the last number of its block."""
    total = sum(r.size for r in rows)
    if tx.dialect.name == "postgresql":
        _LOCK.execute(tx, {})
        drawn = sorted(int(v) for (v,) in _DRAW.all(tx, {"table": _ROWS.name, "n": total}))
        if drawn[-1] - drawn[0] != total - 1:  # another transaction drew in between: a row per event
            rows = [single for r in rows for single in _singles(r)]
            _INSERT_KEYED.many(
                tx, [{**_params(r), "origin_seq": n} for r, n in zip(rows, drawn, strict=True)]
            )
            return
        last = drawn[0] - 1
    else:
        last = int(_LARGEST.scalar(tx, {}))
    params = []
    for r in rows:
        last += r.size
        params.append({**_params(r), "origin_seq": last})
    _INSERT_KEYED.many(tx, params)


def _params(r: Row) -> dict[str, Any]:
    return {"run_id": r.run_id, "agent_id": r.agent_id, "stream_seq": r.stream_seq, "payload": r.payload}


def _singles(r: Row) -> list[Row]:
    if r.entry is None:
        return [r]
    return [Row(ev.run_id, ev.agent_id, ev.stream_seq, ev.SerializeToString()) for ev in r.entry.events()]
