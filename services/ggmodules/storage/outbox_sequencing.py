"""Stream seqs assigned after the write, in bulk (issue 14): ModuleStore's outbox.

A write stores its events with no stream_seq, and takes no stream head: a write to a store held by H
agents would otherwise move H stream heads in its transaction (H row updates), the one cost of a shared
write that grew with H. The sequencer numbers them later, when the outbox is read, in origin_seq order:
every row after `sequenced_through` (a row of the outbox's positions table) up to where the outbox is final
gets, on each of its streams, the next seq of that stream (the stream heads, moved once per stream for the
whole batch), its payload rewritten with them, and `sequenced_through` raised, in the reader's transaction.
Readers only ever see rows at or below `sequenced_through`, so every event is read with the seq it keeps.

The numbers are those the write would have reserved: a stream's seqs run 1, 2, 3... in origin_seq order, and
on PostgreSQL the rows are numbered only up to the outbox frontier (storage/outbox_frontier.py), so no row
that commits later can fall behind one numbered already. Two readers number in turns (the position row is
locked, FOR UPDATE); SQLite admits one writer at a time.

On SQLite a reader positioned where the numbering starts (a caught-up WatchOutbox) is told which rows were
numbered, with their new payloads (`Numbered`): they are every row after its position, so they are its page
and are not selected again (Outbox.read). A caught-up WatchOutbox on SQLite need not even wait for that
transaction: storage/outbox_ahead.py numbers in memory what it sends and stores the numbers after.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Select, Table, bindparam, case, func, literal_column, select, text, update
from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.internal.v1 import fan_out_pb2
from ggmodules.storage.fan_out import is_fan_out
from ggmodules.storage.prepared import Prepared, Tx

SEQUENCED_THROUGH = "sequenced_through"
# Rows numbered in one pass, at most, and events (a fan-out row stands for one event per holder), and bytes
# of payload (the first row whatever its size): a pass is one short transaction (on SQLite it runs on the
# event loop) that reads and rewrites every payload it numbers. Without the byte bound a backlog of large
# events (a 2 MiB write is a 2 MiB event) made one pass read and rewrite up to BATCH of them, a gigabyte.
BATCH = 500
MAX_EVENTS = 8192
MAX_BYTES = 4 * 1024 * 1024

Streams = Counter[tuple[str, str]]


@dataclass(slots=True)
class Numbered:
    """What one `Sequencer.sequence` call on SQLite found and numbered, in its transaction: every row after
    `after` up to the last of `rows` (key, numbered payload), and the outbox's newest origin_seq. A reader
    positioned at `after` has its page in them (Outbox.read), without reading the rows again."""

    after: int = -1
    newest: int | None = None
    rows: list[tuple[int, bytes]] = field(default_factory=list)


Reserve = Callable[[Tx, Streams], dict[tuple[str, str], int]]


class Sequencer:
    """Numbers one outbox's rows on their streams (see the module doc)."""

    def __init__(self, rows: Table, positions: Table, reserve: Reserve, heads: Table | None = None) -> None:
        """`heads`: the stream-head table `reserve` moves, for the pipelined steps (PostgreSQL)."""
        self._reserve = reserve
        key = positions.c.name == SEQUENCED_THROUGH
        self._position = {
            "postgresql": Prepared(select(positions.c.value).where(key).with_for_update()),
            "sqlite": Prepared(select(positions.c.value).where(key)),
        }
        self._start = Prepared(
            text(f"INSERT INTO {positions.name} (name, value) VALUES ('{SEQUENCED_THROUGH}', 0)")
        )
        self._raise = Prepared(update(positions).where(key).values(value=bindparam("v")))
        self._largest = Prepared(select(func.coalesce(func.max(rows.c.origin_seq), 0)))
        self._rows = Prepared(
            bounded(
                select(rows.c.origin_seq, rows.c.run_id, rows.c.agent_id, rows.c.payload)
                .where(rows.c.origin_seq > bindparam("after"), rows.c.origin_seq <= bindparam("through"))
                .order_by(rows.c.origin_seq)
                .limit(BATCH)
            )
        )
        self._set = Prepared(
            update(rows)
            .where(rows.c.origin_seq == bindparam("k"))
            .values(stream_seq=bindparam("s"), payload=bindparam("p"))
        )
        # PostgreSQL, sent with the position's FOR UPDATE (storage/outbox_numbering.py): the rows after the
        # position, read on a snapshot taken once the lock is held.
        self._after_position = Prepared(
            bounded(
                select(rows.c.origin_seq, rows.c.run_id, rows.c.agent_id, rows.c.payload)
                .where(rows.c.origin_seq > select(positions.c.value).where(key).scalar_subquery())
                .order_by(rows.c.origin_seq)
                .limit(BATCH)
            )
        )
        self.batch = BATCH
        self._read_position = Prepared(select(positions.c.value).where(key))
        # PostgreSQL, with them: the heads of the streams those rows' columns name (the writer's stream of a
        # fan-out record; its holders' are in its payload). Only the sequencer moves ModuleStore's heads,
        # holding the position's lock: read after it, they stand until this transaction ends.
        if heads is not None:
            self._heads_after_position = Prepared(
                text(
                    f"SELECT h.run_id, h.agent_id, h.seq FROM {heads.name} h "
                    f"WHERE (h.run_id, h.agent_id) IN (SELECT r.run_id, r.agent_id FROM {rows.name} r "
                    f"WHERE r.origin_seq > (SELECT value FROM {positions.name} "
                    f"WHERE name = '{SEQUENCED_THROUGH}') ORDER BY r.origin_seq LIMIT {BATCH})"
                )
            )
            # Each stream's head set to where this batch leaves it (as `reserve` would have moved it).
            self._set_heads = Prepared(
                text(
                    f"INSERT INTO {heads.name} AS head (run_id, agent_id, seq) "
                    "SELECT run_id, agent_id, seq FROM unnest("
                    "CAST(:run_ids AS text[]), CAST(:agent_ids AS text[]), CAST(:seqs AS bigint[])"
                    ") AS s(run_id, agent_id, seq) "
                    "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = excluded.seq"
                )
            )

    def sequence(
        self, conn: Connection, final: int | None, numbered: Numbered | None = None
    ) -> tuple[int, bool]:
        """Numbers the rows up to `final` not numbered yet (None: every row, SQLite only: on PostgreSQL
        origin_seq values commit out of order, so pass how far the outbox is final: a watcher's frontier, or
        `outbox_frontier.settled`, as Outbox.read does); returns how far the outbox is numbered, and whether
        rows up to `final` are left (more than a batch). SQLite with `final` None: `numbered` is told what
        this call numbered."""
        tx = Tx.of(conn)
        assert final is not None or tx.dialect.name != "postgresql", "PostgreSQL: number only what is final"
        found = self._position[tx.dialect.name].one(tx, {})
        if found is None:  # a database made before any row was written: nothing to number before
            self._start.execute(tx, {})
            done = 0
        else:
            done = int(found[0])
        if final is not None:
            through = final
        else:
            through = int(self._largest.scalar(tx, {}))
            if numbered is not None:
                numbered.after, numbered.newest = done, through
        if through <= done:
            return done, False
        rows = self._rows.all(tx, {"after": done, "through": through})
        left = len(rows) == BATCH
        if rows:
            params = self._number(tx, rows)
            if len(params) < len(rows):
                left, rows = True, rows[: len(params)]
            if left:
                through = int(rows[-1][0])
            if numbered is not None:
                numbered.rows = [(p["k"], p["p"]) for p in params]
        self._raise.execute(tx, {"v": through})
        return through, left

    def position(self, conn: Connection | Tx) -> int:
        """How far the outbox is numbered (and the numbers stored)."""
        return int(self._read_position.scalar(conn, {}) or 0)

    # ---- the steps of `sequence`, for a caller that pipelines them (storage/outbox_numbering.py) ----------

    def locked_position(self, tx: Tx) -> tuple[str, Any]:
        """PostgreSQL: the position read under its row lock, as a statement for `Tx.send`."""
        return self._position["postgresql"].bound(tx, {})

    def unnumbered(self, tx: Tx) -> tuple[str, Any]:
        """PostgreSQL: at most a batch of the rows after the position, in order, for `Tx.send` (after
        `locked_position`)."""
        return self._after_position.bound(tx, {})

    def unnumbered_heads(self, tx: Tx) -> tuple[str, Any]:
        """PostgreSQL: the heads of the streams named by the rows of `unnumbered`, for `Tx.send` with it."""
        return self._heads_after_position.bound(tx, {})

    def start(self, tx: Tx) -> None:
        """The position's row, for an outbox that has none yet."""
        self._start.execute(tx, {})

    def raise_to(self, tx: Tx, through: int) -> None:
        self._raise.execute(tx, {"v": through})

    def number(self, tx: Tx, rows: list[tuple[object, ...]], heads: list[tuple[object, ...]]) -> int:
        """Numbers the first of `rows` (origin_seq, run_id, agent_id, payload, in order, after the position
        and within the frontier) given `heads`, what `unnumbered_heads` read with them; returns how many
        (see `_number`). When they name every stream numbered (no fan-out record's holder beyond them),
        the heads are set from them with the rows' updates, in no round trip of its own; else reserved."""
        known = {(str(r), str(a)): int(seq) for r, a, seq in heads}  # type: ignore[call-overload]
        named = {(str(r), str(a)) for _, r, a, _ in rows}
        return len(self._number(tx, rows, (known, named)))

    def _number(
        self,
        tx: Tx,
        rows: list[tuple[object, ...]],
        heads: tuple[dict[tuple[str, str], int], set[tuple[str, str]]] | None = None,
    ) -> list[dict[str, Any]]:
        """Numbers the first of `rows` (in origin_seq order), as many as make MAX_EVENTS events or at least
        one row: the events of each in their order, a fan-out record's writer's event first, then its
        holders' snapshots (storage/fan_out.py). Returns what it wrote, one per row numbered: its key `k`,
        stream_seq `s` and payload `p`."""
        parsed, counts = parse(rows)
        if heads is not None and heads[1].issuperset(counts):
            known = heads[0]
            last = {s: known.get(s, 0) + n for s, n in counts.items()}
            streams = sorted(last)
            self._set_heads.execute(
                tx,
                {
                    "run_ids": [r for r, _ in streams],
                    "agent_ids": [a for _, a in streams],
                    "seqs": [last[st] for st in streams],
                },
            )
        else:
            last = self._reserve(tx, counts)
        params = assign(parsed, counts, last)
        self._set.many(tx, params)
        return params


def bounded(query: Select[Any]) -> Select[Any]:
    """`query`'s rows (origin_seq, run_id, agent_id, payload; a batch, in order) with the payload of each row
    that MAX_BYTES of payloads come before left out (NULL): what one pass numbers (`parse`) is read, the
    rest waits for the next pass, and is not fetched."""
    s = query.subquery()
    size = func.length(s.c.payload)
    before = func.sum(size).over(order_by=s.c.origin_seq) - size
    payload = case((before < literal_column(str(MAX_BYTES)), s.c.payload)).label("payload")
    return select(s.c.origin_seq, s.c.run_id, s.c.agent_id, payload).order_by(s.c.origin_seq)


def parse(
    rows: list[tuple[object, ...]],
) -> tuple[list[tuple[int, str, event_pb2.Event | fan_out_pb2.FanOut]], Streams]:
    """The first of `rows` (key, run_id, agent_id, payload), parsed, as many as make MAX_EVENTS events and
    MAX_BYTES of payload, or at least one row, and up to the first row whose payload was left out (None:
    `bounded`); how many events each stream gets from them."""
    parsed: list[tuple[int, str, event_pb2.Event | fan_out_pb2.FanOut]] = []
    counts: Streams = Counter()
    events = size = 0
    for key, run_id, agent_id, payload in rows:
        if payload is None or (parsed and (events >= MAX_EVENTS or size >= MAX_BYTES)):
            break
        data = bytes(payload)  # type: ignore[call-overload]
        size += len(data)
        run = str(run_id)
        item: event_pb2.Event | fan_out_pb2.FanOut
        if is_fan_out(data):
            item = fan_out_pb2.FanOut.FromString(data)
            counts[(run, item.event.agent_id)] += 1
            counts.update((run, a) for a in item.agent_ids)
            events += 1 + len(item.agent_ids)
        else:
            item = event_pb2.Event.FromString(data)
            counts[(run, str(agent_id))] += 1
            events += 1
        parsed.append((int(key), run, item))  # type: ignore[call-overload]
    return parsed, counts


def assign(
    parsed: list[tuple[int, str, event_pb2.Event | fan_out_pb2.FanOut]],
    counts: Streams,
    last: dict[tuple[str, str], int],
) -> list[dict[str, Any]]:
    """Sets each parsed row's stream seqs, given each stream's `last` seq after them; one `k`/`s`/`p` (key,
    stream_seq, numbered payload) per row."""
    nxt = {s: last[s] - n + 1 for s, n in counts.items()}  # each stream's first seq in this batch
    params = []
    for key, run, item in parsed:
        ev = item.event if isinstance(item, fan_out_pb2.FanOut) else item
        s = (run, ev.agent_id)
        seq = ev.stream_seq = nxt[s]
        nxt[s] = seq + 1
        if isinstance(item, fan_out_pb2.FanOut):
            seqs = []
            for a in item.agent_ids:
                h = (run, a)
                seqs.append(nxt[h])
                nxt[h] += 1
            del item.stream_seqs[:]
            item.stream_seqs.extend(seqs)
        params.append({"k": key, "s": seq, "p": item.SerializeToString()})
    return params
