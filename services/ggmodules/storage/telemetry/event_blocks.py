"""Telemetry's older events, packed into compressed blocks (`tel_event_blocks`; issue 14, stored bytes).

An event is inserted as a row of `tel_events`, as it always was: the write that stores it and hands it to
its subscribers (from memory) pays nothing more. Once BLOCK rows have gathered, TelemetryRepository.pack
moves the oldest BLOCK into one row of `tel_event_blocks`, compressed together on a worker thread, off the
write path. Compressed alone a 300-byte event gains little; BLOCK consecutive events share their words, run
and agent ids and protobuf framing. A block of up to BZIP2_UP_TO bytes is compressed with bzip2 (level 1),
a larger one with zlib (level 6):
- on LLM-history-like text (tests/bench/growth.py) a block of 64 history appends is about 15 kB: bzip2 takes
  1.8 ms of a worker thread and 90 bytes an event, zlib 0.7 ms and 111 bytes (LZMA 97, zstd 107-115);
- a store many agents hold sends large events (each holder's snapshot carries the store's contents): a
  block of 64 such events of 6 kB took bzip2 93 ms for 353 bytes an event, zlib 3 ms for 146. With bzip2
  for every block, packing held two fifths of a Telemetry replica's CPU under a crowd of writers on shared
  stores (two replicas of every service on one 2-core machine).
`decode` tells the two apart by their first bytes. Reading a block back costs about 1 ms, which only a
subscriber further behind than the in-memory recent events pays.

Blocks always hold older cursors than rows (only the oldest rows are packed, in cursor order), never overlap,
and never change: pruning deletes a block once every event in it is pruned, and until then readers pass over
its events at or below `pruned_through`. A block keeps each event's cursor, origin, origin_seq, run, agent,
stored payload (`event_rows.stored_payload`) and stored_at, so an event reads back exactly as its row did,
with the same size for retention by bytes.

A block's payload, decompressed: per event, unsigned LEB128 varints cursor-delta (from the previous event;
the first from `first_cursor`, so 0), origin_seq and stored_at, then four length-prefixed byte strings:
origin, run_id, agent_id, payload.
"""

from __future__ import annotations

import bz2
import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select
from sqlalchemy.engine import Connection

from ggmodules.storage.telemetry.tables import TelEventBlockRow, TelEventRow

BLOCK = 64
BZIP2_UP_TO = 64 * 1024
# How bzip2's output begins (its stream magic); zlib's begins 0x78.
BZIP2 = b"BZh"
BLOCKS = TelEventBlockRow.__table__  # type: ignore[attr-defined]
ROWS = TelEventRow.__table__  # type: ignore[attr-defined]
_ROW_COLUMNS = ("cursor", "origin", "origin_seq", "run_id", "agent_id", "payload", "stored_at")


@dataclass(frozen=True, slots=True)
class PackedEvent:
    cursor: int
    origin: str
    origin_seq: int
    run_id: str
    agent_id: str
    payload: bytes
    stored_at: int


def _varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def encode(events: Sequence[PackedEvent]) -> bytes:
    """The compressed payload of a block holding `events` (in cursor order)."""
    raw = bytearray()
    previous = events[0].cursor
    for ev in events:
        _varint(ev.cursor - previous, raw)
        previous = ev.cursor
        _varint(ev.origin_seq, raw)
        _varint(ev.stored_at, raw)
        for field in (ev.origin.encode(), ev.run_id.encode(), ev.agent_id.encode(), ev.payload):
            _varint(len(field), raw)
            raw += field
    return bz2.compress(bytes(raw), 1) if len(raw) <= BZIP2_UP_TO else zlib.compress(bytes(raw), 6)


def decode(first_cursor: int, data: bytes) -> list[PackedEvent]:
    """The events of a block, in cursor order."""
    raw = bz2.decompress(data) if data[:3] == BZIP2 else zlib.decompress(data)
    pos, cursor, out = 0, first_cursor, []

    def varint() -> int:
        nonlocal pos
        n = shift = 0
        while True:
            b = raw[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            if b < 0x80:
                return n
            shift += 7

    def field() -> bytes:
        nonlocal pos
        size = varint()
        pos += size
        return raw[pos - size : pos]

    while pos < len(raw):
        cursor += varint()
        origin_seq, stored_at = varint(), varint()
        origin, run_id, agent_id, payload = field(), field(), field(), field()
        out.append(
            PackedEvent(
                cursor, origin.decode(), origin_seq, run_id.decode(), agent_id.decode(), payload, stored_at
            )
        )
    return out


class BlockCache:
    """The blocks decoded last, by database and first cursor (a block never changes, and no cursor of a
    database is ever drawn twice): pruning and reads near the oldest events decode a block once."""

    def __init__(self, capacity: int = 16) -> None:
        self._held: dict[tuple[str, int], list[PackedEvent]] = {}
        self._capacity = capacity
        self._lock = threading.Lock()

    def events(self, conn: Connection, first_cursor: int) -> list[PackedEvent]:
        key = (conn.engine.url.render_as_string(hide_password=True), first_cursor)
        with self._lock:
            held = self._held.pop(key, None)
        if held is None:
            data = conn.execute(
                select(BLOCKS.c.payload).where(BLOCKS.c.first_cursor == first_cursor)
            ).scalar()
            if data is None:  # pruned since it was listed: a reader finds pruned_through past its events
                return []
            held = decode(first_cursor, bytes(data))
        with self._lock:
            self._held[key] = held
            while len(self._held) > self._capacity:
                del self._held[next(iter(self._held))]
        return held


CACHE = BlockCache()


def blocks_after(
    conn: Connection, after: int, run_id: str = "", page: int = 8
) -> Iterator[tuple[int, list[PackedEvent]]]:
    """The blocks holding a cursor above `after` (and, with `run_id`, an event of that run), oldest first,
    read a few at a time; each with its events (decoded once, see CACHE)."""
    seen = -1
    while True:
        stmt = select(BLOCKS.c.first_cursor).where(BLOCKS.c.last_cursor > after, BLOCKS.c.first_cursor > seen)
        if run_id:
            stmt = stmt.where((BLOCKS.c.run_id == run_id) | BLOCKS.c.run_id.is_(None))
        got = [
            int(first) for first in conn.execute(stmt.order_by(BLOCKS.c.first_cursor).limit(page)).scalars()
        ]
        for first in got:
            yield first, CACHE.events(conn, first)
            seen = first
        if len(got) < page:
            return


def retained(conn: Connection, pruned: int) -> Iterator[PackedEvent]:
    """The packed events above `pruned`, oldest first."""
    for _, events in blocks_after(conn, pruned):
        for p in events:
            if p.cursor > pruned:
                yield p


def totals(conn: Connection, pruned: int) -> tuple[int, int]:
    """How many packed events lie above `pruned`, and their stored payload bytes."""
    count, size = conn.execute(
        select(func.sum(BLOCKS.c.events), func.sum(BLOCKS.c.payload_bytes)).where(
            BLOCKS.c.first_cursor > pruned
        )
    ).one()
    count, size = int(count or 0), int(size or 0)
    straddling = conn.execute(
        select(BLOCKS.c.first_cursor).where(BLOCKS.c.first_cursor <= pruned, BLOCKS.c.last_cursor > pruned)
    ).scalar()
    if straddling is not None:  # partly pruned: its events above `pruned` only
        kept = [p for p in CACHE.events(conn, int(straddling)) if p.cursor > pruned]
        count, size = count + len(kept), size + sum(len(p.payload) for p in kept)
    return count, size


def prune(conn: Connection, pruned: int, through: int) -> tuple[int, int]:
    """Deletes every block wholly at or below `through`; returns how many packed events (and their bytes)
    in (pruned, through] this pruning takes, whether their block goes now or later."""
    before = totals(conn, pruned)
    after = totals(conn, through)
    conn.execute(delete(BLOCKS).where(BLOCKS.c.last_cursor <= through))
    return before[0] - after[0], before[1] - after[1]


def oldest_blocks(conn: Connection) -> Iterator[tuple[int, int, int]]:
    """(first_cursor, last_cursor, events) of every block, oldest first."""
    stmt = select(BLOCKS.c.first_cursor, BLOCKS.c.last_cursor, BLOCKS.c.events).order_by(
        BLOCKS.c.first_cursor
    )
    for first, last, count in conn.execute(stmt):
        yield int(first), int(last), int(count)


def oldest_rows(conn: Connection, limit: int) -> list[PackedEvent]:
    """The oldest `limit` rows of `tel_events` (fewer if there are fewer)."""
    stmt = select(*(ROWS.c[name] for name in _ROW_COLUMNS)).order_by(ROWS.c.cursor).limit(limit)
    return [PackedEvent(*(r[i] for i in range(7))) for r in conn.execute(stmt)]


def store_block(conn: Connection, events: Sequence[PackedEvent], data: bytes) -> bool:
    """Replaces the rows of `events` by one block holding `data` (their `encode`), in the caller's
    transaction. False, changing nothing, when they are no longer the oldest rows; raises Moved (the caller
    rolls back) when some of them are gone (pruned while they were compressed)."""
    first, last = events[0].cursor, events[-1].cursor
    older = conn.execute(select(func.count()).select_from(ROWS).where(ROWS.c.cursor < first)).scalar()
    if older:
        return False
    gone = conn.execute(delete(ROWS).where(ROWS.c.cursor >= first, ROWS.c.cursor <= last)).rowcount
    if gone != len(events):
        raise Moved()
    runs = {ev.run_id for ev in events}
    conn.execute(
        insert(BLOCKS).values(
            first_cursor=first,
            last_cursor=last,
            events=len(events),
            payload_bytes=sum(len(ev.payload) for ev in events),
            run_id=runs.pop() if len(runs) == 1 else None,
            payload=data,
        )
    )
    return True


class Moved(Exception):
    """The rows to pack changed under the packing transaction: it is rolled back."""
