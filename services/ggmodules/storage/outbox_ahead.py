"""Numbering ahead of storing (issue 9, write→subscriber latency): a caught-up WatchOutbox of ModuleStore's
outbox, whose stream seqs are numbered when read (storage/outbox_sequencing.py), need not wait for the
numbering transaction between a write's commit and its event's way to Telemetry (or to JetStream, when
ModuleStore publishes its own events: runtime/origin_relay.py).

One statement on no transaction (`ahead`) reads the numbering position, the rows after it and their streams'
heads; the rows are numbered in memory and sent, and the numbers are stored afterwards (`keep`), in a write
transaction, only if the position has not moved meanwhile. On PostgreSQL the statement follows the outbox
frontier's (storage/outbox_frontier.py) in the same round trip, on a snapshot taken after it, and only the
rows up to the frontier are numbered (storage/outbox_numbering.py, `NumberingFeed.read_ahead`); the numbers
are stored by one statement (`keep_statement`) whose updates of the rows and the heads apply only when its
own update of the position did: a numberer that moved the position first (it holds the position's lock
while it moves the heads) is never written over. The numbers are a function of what is committed
(each stream's head at the position and the rows after it in origin_seq order, none of which changes until
the position moves), so whoever numbers those rows gets the same seqs: another reader numbering them first
(then `keep` stores nothing and no head moves twice), or any reader after a kill -9 between the send and
`keep` (and Telemetry stores an origin_seq once). Pruning never passes the position (outbox_pruning.py), so
a row a follower took in before its numbers were stored is still there to be numbered.

A reader behind the position, or a position not made yet, is read through the numbering transaction as
before. So is a fan-out record among the rows on SQLite (its holders' heads are in its payload, not read
there); on PostgreSQL a second round trip reads the heads of every stream of the rows' runs, with the
position again (`run_heads_statement`), and the record is numbered ahead as well, unless the position moved
between the two reads. Falling back to the transaction there cost a board write's pass 1.0-1.08 ms, against
0.79-0.84 ms for the transaction alone and 0.73-0.81 ms numbered ahead (with `keep`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, bindparam, text, update

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import fan_out
from ggmodules.storage.fan_out import EVENT_OVERHEAD, is_fan_out
from ggmodules.storage.outbox_sequencing import BATCH, MAX_BYTES, SEQUENCED_THROUGH, assign, parse
from ggmodules.storage.prepared import Prepared, Tx

# outbox_pruning.PRUNED_THROUGH, in the same positions table (that module imports the outbox, which imports
# this one).
_PRUNED_THROUGH = "pruned_through"


@dataclass(slots=True)
class Ahead:
    """The rows after the position numbered in memory, before `keep` stores the numbers: the page they make
    (`events`, the outbox's `newest` key, `pruned` through, `more` to read), the position they were numbered
    from (`since`) and up to (`through`), each row's update (`params`: key `k`, stream_seq `s`, payload `p`)
    and each stream's head after them (`last`)."""

    events: list[event_pb2.Event]
    newest: int
    pruned: int
    more: bool
    since: int
    through: int
    params: list[dict[str, Any]]
    last: dict[tuple[str, str], int]


class NumberingAhead:
    """The statements of one outbox (its rows, positions and stream-head tables), SQLite only."""

    def __init__(self, rows: Table, positions: Table, heads: Table) -> None:
        # The position, the pruning point and the newest key, with the rows after the position and the head
        # of each one's stream: one statement, one snapshot. The payloads past what one pass numbers are left
        # out (outbox_sequencing.MAX_BYTES, as its `bounded` leaves them out).
        where = f"WHERE name = '{SEQUENCED_THROUGH}'"
        self._read = Prepared(
            text(
                f"SELECT p.value, (SELECT value FROM {positions.name} WHERE name = '{_PRUNED_THROUGH}'), "
                f"(SELECT max(origin_seq) FROM {rows.name}), "
                "r.origin_seq, r.run_id, r.agent_id, r.payload, h.seq "
                f"FROM {positions.name} p LEFT JOIN ("
                "SELECT origin_seq, run_id, agent_id, CASE WHEN "
                f"sum(length(payload)) OVER (ORDER BY origin_seq) - length(payload) < {MAX_BYTES} "
                "THEN payload END AS payload FROM ("
                f"SELECT origin_seq, run_id, agent_id, payload FROM {rows.name} "
                f"WHERE origin_seq > (SELECT value FROM {positions.name} {where}) "
                f"ORDER BY origin_seq LIMIT {BATCH}) s) r ON 1 = 1 "
                f"LEFT JOIN {heads.name} h ON h.run_id = r.run_id AND h.agent_id = r.agent_id "
                f"WHERE p.name = '{SEQUENCED_THROUGH}' ORDER BY r.origin_seq"
            )
        )
        # PostgreSQL: the same, its rows bounded as a page is (`max_bytes`, sizes counted as outbox.py's page
        # read counts them): the rows while what comes before each fits, then the first row past the bound
        # without its payload (it says rows were left out). The rows of a caught-up read reach the service
        # on a write's way (storage/outbox_commit_read.py): up to BATCH payloads of any size, unbounded, would
        # make a write's answer wait for them all.
        size = f"(length(payload) + {EVENT_OVERHEAD})"
        self._read_bounded = Prepared(
            text(
                f"SELECT p.value, (SELECT value FROM {positions.name} WHERE name = '{_PRUNED_THROUGH}'), "
                f"(SELECT max(origin_seq) FROM {rows.name}), "
                "r.origin_seq, r.run_id, r.agent_id, r.payload, h.seq "
                f"FROM {positions.name} p LEFT JOIN ("
                "SELECT origin_seq, run_id, agent_id, CASE WHEN past = 0 THEN payload END AS payload FROM ("
                "SELECT *, count(*) FILTER (WHERE before > :max_bytes) OVER (ORDER BY origin_seq) AS past "
                "FROM ("
                f"SELECT *, sum{size} OVER (ORDER BY origin_seq) - {size} AS before FROM ("
                f"SELECT origin_seq, run_id, agent_id, payload FROM {rows.name} "
                f"WHERE origin_seq > (SELECT value FROM {positions.name} {where}) "
                f"ORDER BY origin_seq LIMIT {BATCH}) s) b) c WHERE past <= 1) r ON 1 = 1 "
                f"LEFT JOIN {heads.name} h ON h.run_id = r.run_id AND h.agent_id = r.agent_id "
                f"WHERE p.name = '{SEQUENCED_THROUGH}' ORDER BY r.origin_seq"
            )
        )
        # PostgreSQL, with it: the position again, with the head of every stream of the runs of those rows. A
        # fan-out record's holders' streams are in its payload, not in the rows' columns: their heads are
        # among these. Heads move only with the position, so the same position means the same heads.
        # Read, in a round trip of its own, only when a fan-out record is among the rows: sent with them on
        # every pass it cost a plain event's 30 µs (302 -> 333 µs a read).
        self._run_heads = Prepared(
            text(
                f"SELECT p.value, h.run_id, h.agent_id, h.seq FROM {positions.name} p "
                f"LEFT JOIN {heads.name} h ON h.run_id IN (SELECT run_id FROM {rows.name} "
                f"WHERE origin_seq > (SELECT value FROM {positions.name} {where}) "
                f"ORDER BY origin_seq LIMIT {BATCH}) "
                f"WHERE p.name = '{SEQUENCED_THROUGH}'"
            )
        )
        # The position raised only from where the numbers were made (else another reader stored them).
        self._advance = Prepared(
            update(positions)
            .where(positions.c.name == SEQUENCED_THROUGH, positions.c.value == bindparam("since"))
            .values(value=bindparam("through"))
        )
        self._set = Prepared(
            update(rows)
            .where(rows.c.origin_seq == bindparam("k"))
            .values(stream_seq=bindparam("s"), payload=bindparam("p"))
        )
        # PostgreSQL: all of `keep` in one statement; the rows' and the heads' updates apply only when its own
        # update of the position did (`moved`): a numberer that moved the position first holds its lock
        # while it sets the heads (storage/outbox_numbering.py), and is never written over.
        self._keep_pg = Prepared(
            text(
                f"WITH moved AS (UPDATE {positions.name} SET value = :through "
                f"WHERE name = '{SEQUENCED_THROUGH}' AND value = :since RETURNING value), "
                f"numbered AS (UPDATE {rows.name} r SET stream_seq = u.s, payload = u.p FROM unnest("
                "CAST(:keys AS bigint[]), CAST(:seqs AS bigint[]), CAST(:payloads AS bytea[])) AS u(k, s, p) "
                "WHERE r.origin_seq = u.k AND EXISTS (SELECT 1 FROM moved)), "
                f"heads AS (INSERT INTO {heads.name} AS head (run_id, agent_id, seq) "
                "SELECT run_id, agent_id, seq FROM unnest(CAST(:run_ids AS text[]), "
                "CAST(:agent_ids AS text[]), CAST(:last AS bigint[])) AS h(run_id, agent_id, seq) "
                "WHERE EXISTS (SELECT 1 FROM moved) "
                "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = excluded.seq) "
                "SELECT count(*) FROM moved"
            )
        )
        # Each stream's head set to where the rows numbered leave it.
        self._set_heads = Prepared(
            text(
                f"INSERT INTO {heads.name} (run_id, agent_id, seq) "
                "SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(:streams) WHERE true "
                "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = excluded.seq"
            )
        )

    def ahead(self, tx: Tx, after: int, limit: int, max_bytes: int) -> Ahead | None:
        """SQLite, on no transaction: the rows after the position numbered in memory, for a reader positioned
        there (`after`), in a page of at most `limit` events and `max_bytes` (the first alone when larger);
        None when it does not apply (see the module doc)."""
        if tx.dialect.name != "sqlite" or tx.dbapi().in_transaction:
            return None
        return self.numbered(self._read.all(tx, {}), after, limit, max_bytes)

    def read_statement(self, tx: Tx, max_bytes: int) -> tuple[str, Any]:
        """PostgreSQL: `ahead`'s statement, its rows bounded by `max_bytes` as a page is, for `Tx.send` after
        the frontier's (its rows go to `numbered`)."""
        return self._read_bounded.bound(tx, {"max_bytes": max_bytes})

    def run_heads_statement(self, tx: Tx) -> tuple[str, Any]:
        """PostgreSQL: the position and the heads of every stream of the runs of the rows after it, for
        `Tx.send` when `has_fan_out` (its rows go to `numbered`)."""
        return self._run_heads.bound(tx, {})

    @staticmethod
    def has_fan_out(found: list[tuple[Any, ...]]) -> bool:
        """Whether a fan-out record is among the rows `ahead`'s statement read."""
        return any(p is not None and is_fan_out(bytes(p)) for _, _, _, _, _, _, p, _ in found)

    def numbered(
        self,
        found: list[tuple[Any, ...]],
        after: int,
        limit: int,
        max_bytes: int,
        final: int | None = None,
        run_heads: list[tuple[Any, ...]] | None = None,
    ) -> Ahead | None:
        """What `ahead`'s statement read (`found`), numbered in memory; with `final` (PostgreSQL's frontier),
        the rows after it are left for a later read; with `run_heads` (what `run_heads_statement` read),
        fan-out records are numbered too. None when it does not apply (see the module doc)."""
        if not found:
            return None
        position, pruned, newest = int(found[0][0]), int(found[0][1] or 0), int(found[0][2] or 0)
        if position != after:
            return None
        known = {(str(r), str(a)): int(h or 0) for _, _, _, _, r, a, _, h in found if r is not None}
        if self.has_fan_out(found):
            if not run_heads or int(run_heads[0][0]) != position:  # another reader numbered in between
                return None
            known = {(str(r), str(a)): int(h) for _, r, a, h in run_heads if r is not None}
        rows: list[tuple[object, ...]] = [
            (k, r, a, p) for _, _, _, k, r, a, p, _ in found if k is not None and p is not None
        ]
        # A row without its payload says the read left rows out past its byte bound.
        left_out = any(k is not None and p is None for _, _, _, k, _, _, p, _ in found)
        read = len(rows)
        if final is not None:
            rows = [row for row in rows if int(row[0]) <= final]  # type: ignore[call-overload]
        parsed, counts = parse(rows)
        last = {s: known.get(s, 0) + n for s, n in counts.items()}
        params = assign(parsed, counts, last)
        events, cut = fan_out.page([(p["k"], p["p"]) for p in params], after, limit, max_bytes)
        through = int(params[-1]["k"]) if params else position
        # Not counting rows held by the frontier.
        more = cut or left_out or len(parsed) < len(rows) or read == len(rows) == BATCH
        return Ahead(events, newest, pruned, more, position, through, params, last)

    def keep_statement(self, tx: Tx, ahead: Ahead) -> tuple[str, Any]:
        """PostgreSQL: `keep` as one statement, for `Tx.send` (its one row: 1 when it stored the numbers)."""
        streams = sorted(ahead.last)
        return self._keep_pg.bound(
            tx,
            {
                "since": ahead.since,
                "through": ahead.through,
                "keys": [p["k"] for p in ahead.params],
                "seqs": [p["s"] for p in ahead.params],
                "payloads": [p["p"] for p in ahead.params],
                "run_ids": [r for r, _ in streams],
                "agent_ids": [a for _, a in streams],
                "last": [ahead.last[s] for s in streams],
            },
        )

    def keep(self, tx: Tx, ahead: Ahead) -> bool:
        """Stores the numbers `ahead` gave, in the caller's write transaction, unless another reader numbered
        those rows first; returns whether it stored them."""
        if not ahead.params:
            return False
        if self._advance.count(tx, {"since": ahead.since, "through": ahead.through}) != 1:
            return False
        self._set.many(tx, ahead.params)
        streams = json.dumps([[r, a, seq] for (r, a), seq in sorted(ahead.last.items())])
        self._set_heads.execute(tx, {"streams": streams})
        return True
