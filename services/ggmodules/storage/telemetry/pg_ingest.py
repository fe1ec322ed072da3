"""PostgreSQL: the start of a Telemetry log write, in one round trip.

A write of the log on PostgreSQL takes the write lock (an advisory transaction lock: replicas write one at a
time, so cursors commit in the order they were drawn) and reads the counters it moves (tel_meta). An ingest
also stores its origin's events not stored yet: those above the origin's position, which the same read
gives. Sent one after the other, that was three round trips an event waited on: the lock and the read, the
INSERT, the counters' write and COMMIT (issue 10: write→subscriber on PostgreSQL). Here the INSERT goes in the
first: it passes over the events at or below the origin's position itself (`origin_seq > (SELECT value
FROM tel_meta ...)`), so it needs nothing the read returns. psycopg's pipeline mode sends BEGIN, the lock,
the read and the INSERT at once; the server runs them in order, and under READ COMMITTED each statement
takes its snapshot when it starts: the read and the INSERT's subquery see every write committed before the
lock was granted (the position read is the one this write raises, under the lock).

`ingest_at_once` goes further, for the common ingest (no roster to record, no retention bound in reach):
the counters' and the position's raise go in the INSERT's statement (a data-modifying WITH, counting what
the INSERT returned) and COMMIT in the same pipeline, so the whole write is one round trip. The counters
are added to (`value + n`), not set: that needs them present, which they are once any write found them
(tel_meta rows are never deleted); the repository takes this way only then. Whether a bound was crossed
is known from the counts read in the same round trip, after the COMMIT; the repository then prunes in a
write of its own before the ingest returns.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import pg_pipeline
from ggmodules.storage.telemetry import meta
from ggmodules.storage.telemetry.event_rows import stored_payload
from ggmodules.storage.telemetry.recent import StoredEvent
from ggmodules.storage.telemetry.retention_bounds import RetentionBounds

LOCK_KEY = 0x67676D74  # "ggmt": Telemetry's write lock on PostgreSQL

_LOCK = "SELECT pg_advisory_xact_lock(%(key)s)"
_META = "SELECT key, value FROM tel_meta WHERE key = ANY(CAST(%(keys)s AS text[]))"
# The events of one origin above its position, in the order given (cursors are drawn in that order).
_INSERT = (
    "INSERT INTO tel_events (origin, origin_seq, run_id, agent_id, payload, stored_at) "
    "SELECT e.origin, e.origin_seq, e.run_id, e.agent_id, e.payload, %(now)s FROM unnest("
    "CAST(%(origins)s AS text[]), CAST(%(seqs)s AS bigint[]), CAST(%(runs)s AS text[]), "
    "CAST(%(agents)s AS text[]), CAST(%(payloads)s AS bytea[])"
    ") WITH ORDINALITY AS e(origin, origin_seq, run_id, agent_id, payload, n) "
    "WHERE e.origin_seq > coalesce((SELECT value FROM tel_meta WHERE key = %(position)s), 0) "
    "ORDER BY e.n RETURNING cursor, origin, origin_seq"
)
# The same INSERT with the counters and the origin's position raised by what it stored, in one statement.
_COUNTS = (meta.STORED, meta.STORED_BYTES)
_INSERT_COUNTED = (
    "WITH ins AS (" + _INSERT.replace("RETURNING cursor", "RETURNING length(payload) AS size, cursor") + "), "
    "m AS (INSERT INTO tel_meta (key, value) VALUES "
    f"('{_COUNTS[0]}', (SELECT count(*) FROM ins)), "
    f"('{_COUNTS[1]}', (SELECT coalesce(sum(size), 0) FROM ins)), (%(position)s, %(highest)s) "
    "ON CONFLICT (key) DO UPDATE SET value = CASE WHEN tel_meta.key = %(position)s "
    "THEN greatest(tel_meta.value, excluded.value) ELSE tel_meta.value + excluded.value END) "
    "SELECT cursor, origin, origin_seq FROM ins ORDER BY cursor"
)


def locked_meta(
    conn: Connection, keys: list[str], position: str = "", events: Sequence[event_pb2.Event] = ()
) -> tuple[dict[str, int], list[StoredEvent]]:
    """Begins the transaction, takes the write lock, reads the `keys` of tel_meta and, with `events`, inserts
    those above the tel_meta key `position` (the origin's): one round trip. Returns the keys read (before
    the INSERT) and the events stored, with their cursors, in cursor order. The rest of the transaction
    may run through psycopg, which finds it open (libpq's transaction status) and sends no BEGIN."""
    raw: Any = conn.connection.dbapi_connection
    assert raw is not None
    payloads = {(ev.origin, ev.origin_seq): (ev, stored_payload(ev)) for ev in events}
    wanted = [(_META, {"keys": keys})]
    if payloads:
        wanted.append((_INSERT, _rows(position, list(payloads.values()))))
    found = pg_pipeline.send(raw, [("BEGIN", None), (_LOCK, {"key": LOCK_KEY})], wanted)
    got = {str(k): int(v) for k, v in found[0].fetchall()}
    return got, _stored(found[1].fetchall(), payloads) if payloads else []


def fits(events: Sequence[event_pb2.Event], bounds: RetentionBounds, stored: int, stored_bytes: int) -> bool:
    """Whether an ingest of `events` may take `ingest_at_once`, the counts known to be in tel_meta: no roster
    to record (agents.know), and no retention bound in reach as far as the caller knows the counts
    (`stored`, `stored_bytes`; another replica's writes may have moved them: see the module doc)."""
    if any(ev.WhichOneof("body") == "roster" for ev in events):
        return False
    return not bounds.due(stored + len(events), stored_bytes + sum(ev.ByteSize() for ev in events))


def ingest_at_once(
    conn: Connection, position: str, events: Sequence[event_pb2.Event]
) -> tuple[dict[str, int], list[StoredEvent]]:
    """The whole ingest of `events` (one origin's; `position` its tel_meta key) in one round trip, committed
    (see the module doc): BEGIN, the write lock, the counters as they were, and the INSERT of the events
    above the position with the counters' and the position's raise, then COMMIT. Returns the counters read
    (before the INSERT) and the events stored, in cursor order."""
    raw: Any = conn.connection.dbapi_connection
    assert raw is not None
    payloads = {(ev.origin, ev.origin_seq): (ev, stored_payload(ev)) for ev in events}
    params = _rows(position, list(payloads.values()))
    params["highest"] = max(ev.origin_seq for ev in events)
    found = pg_pipeline.send(
        raw,
        [("BEGIN", None), (_LOCK, {"key": LOCK_KEY})],
        [(_META, {"keys": list(_COUNTS)}), (_INSERT_COUNTED, params)],
        commit=True,
    )
    return {str(k): int(v) for k, v in found[0].fetchall()}, _stored(found[1].fetchall(), payloads)


def _stored(
    rows: list[tuple[Any, ...]], payloads: dict[tuple[str, int], tuple[event_pb2.Event, bytes]]
) -> list[StoredEvent]:
    stored = []
    for cursor, origin, origin_seq in rows:
        ev, payload = payloads[(origin, origin_seq)]
        stored.append(StoredEvent(int(cursor), ev, len(payload)))
    return stored


def _rows(position: str, rows: list[tuple[event_pb2.Event, bytes]]) -> dict[str, Any]:
    return {
        "now": int(time.time()),
        "origins": [ev.origin for ev, _ in rows],
        "seqs": [ev.origin_seq for ev, _ in rows],
        "runs": [ev.run_id for ev, _ in rows],
        "agents": [ev.agent_id for ev, _ in rows],
        "payloads": [p for _, p in rows],
        "position": position,
    }
