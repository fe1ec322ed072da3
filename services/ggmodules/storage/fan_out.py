"""Per-holder fan-out stored once (issue 14): a write to a store with other holders is one outbox row.

The write's transaction stores a `FanOut` record (ggmodules/internal/v1/fan_out.proto): the writer's event
(R28), the snapshot every other holder gets (R29) once per distinct content, and the holders with the
stream_seq reserved for each. The row's key is the last of a block of origin_seq numbers, one per event the
record stands for (`len(entry)`): the writer's event has the first, the holders' snapshots follow in order.

Reading the outbox (`page`) derives the events from the record: the same events, in the same order, with
the same origin_seq, stream_seq and time as if each had been a row of its own, so WatchOutbox, ReadOutbox
and every follower see exactly what they saw before. A page may end inside a record's block (its count or
byte bound): the next read, after the last origin_seq sent, derives the record again and sends the rest.
So a follower killed part way through a record resumes after the last event it stored and gets each event
once; and since the row's key is its block's last number, pruning below a follower's position removes a
record only once every event derived from it was taken in.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ggmodules.common.v1 import event_pb2
from ggmodules.internal.v1 import fan_out_pb2

# The tag of FanOut's field 100 (length-delimited): a payload that starts with it is a FanOut record.
FAN_OUT_TAG = b"\xa2\x06"
# What an event adds on the wire to its size: its tag and length as an element of a repeated field.
EVENT_OVERHEAD = 16


class FanOutEntry:
    """A write with other holders, as its transaction appends it: the writer's event, the distinct snapshot
    events (without agent_id, stream_seq, origin_seq) and each other holder, in the order their events
    follow the writer's, with the index of its snapshot: given as (agent id, index) pairs, or as the agent
    ids alone when there is one snapshot for all (`agent_ids=`, no Python per holder)."""

    __slots__ = ("agent_ids", "event", "snapshot_of", "snapshots", "stream_seqs")

    def __init__(
        self,
        event: event_pb2.Event,
        snapshots: list[event_pb2.Event],
        holders: Sequence[tuple[str, int]] = (),
        *,
        agent_ids: Sequence[str] | None = None,
    ) -> None:
        self.event = event
        self.snapshots = snapshots
        self.agent_ids = [a for a, _ in holders] if agent_ids is None else list(agent_ids)
        # Each holder's snapshot index, only when there are several snapshots.
        self.snapshot_of = [i for _, i in holders] if agent_ids is None and len(snapshots) > 1 else []
        # Set by the outbox when it reserves the holders' streams (one stream_seq per holder); left empty
        # where the outbox numbers its streams when read (storage/outbox_sequencing.py).
        self.stream_seqs: list[int] = []

    def __len__(self) -> int:
        """How many events the entry stands for (and origin_seq numbers it takes)."""
        return 1 + len(self.agent_ids)

    def streams(self) -> Iterator[tuple[str, str]]:
        """The (run, agent) streams of its events, in event order."""
        run_id = self.event.run_id
        yield run_id, self.event.agent_id
        for agent_id in self.agent_ids:
            yield run_id, agent_id

    def payload(self) -> bytes:
        """The stored record (after the outbox set the events' origin, stream_seqs and time)."""
        record = fan_out_pb2.FanOut(event=self.event)
        for snapshot in self.snapshots:
            snapshot.origin = self.event.origin
            snapshot.time.CopyFrom(self.event.time)
        record.snapshots.extend(self.snapshots)
        record.agent_ids.extend(self.agent_ids)
        record.stream_seqs.extend(self.stream_seqs)
        record.snapshot_of.extend(self.snapshot_of)
        data = record.SerializeToString()
        assert data.startswith(FAN_OUT_TAG)
        return data

    def events(self) -> list[event_pb2.Event]:
        """The entry as the separate events it stands for, without origin_seq (for a row per event)."""
        derived = list(_derived(fan_out_pb2.FanOut.FromString(self.payload()), 0))
        for ev in derived:
            ev.ClearField("origin_seq")
        return derived


def is_fan_out(payload: bytes) -> bool:
    return payload[:2] == FAN_OUT_TAG


def events_of(key: int, payload: bytes, after: int = 0) -> Iterator[event_pb2.Event]:
    """The events a stored row stands for, with their origin_seq, those numbered after `after` only."""
    if not is_fan_out(payload):
        if key > after:
            ev = event_pb2.Event.FromString(payload)
            ev.origin_seq = key
            yield ev
        return
    record = fan_out_pb2.FanOut.FromString(payload)
    first = key - len(record.agent_ids)
    yield from _derived(record, first, after)


def _derived(record: fan_out_pb2.FanOut, first: int, after: int = -1) -> Iterator[event_pb2.Event]:
    """The writer's event numbered `first`, then each holder's snapshot numbered on from it."""
    if first > after:
        ev = event_pb2.Event()
        ev.CopyFrom(record.event)
        ev.origin_seq = first
        yield ev
    which = record.snapshot_of or [0] * len(record.agent_ids)
    # No stream_seqs: a record not numbered yet (storage/outbox_sequencing.py), split into rows per event.
    seqs = record.stream_seqs or [0] * len(record.agent_ids)
    holders = zip(record.agent_ids, seqs, which, strict=True)
    for n, (agent_id, seq, index) in enumerate(holders, start=1):
        if first + n <= after:
            continue
        ev = event_pb2.Event()
        ev.CopyFrom(record.snapshots[index])
        ev.agent_id, ev.stream_seq, ev.origin_seq = agent_id, seq, first + n
        yield ev


def page(
    rows: Sequence[tuple[int, bytes]], after: int, limit: int, max_bytes: int
) -> tuple[list[event_pb2.Event], bool]:
    """The events of `rows` (in key order) numbered after `after`: at most `limit` of them and `max_bytes`
    (counted as they travel), or the first one alone when it is larger. True when the bounds cut the page."""
    events: list[event_pb2.Event] = []
    total = 0
    for key, payload in rows:
        if not is_fan_out(payload):  # the common case: the stored size is the size
            if key <= after:
                continue
            total += len(payload) + EVENT_OVERHEAD
            if events and (total > max_bytes or len(events) == limit):
                return events, True
            ev = event_pb2.Event.FromString(payload)
            ev.origin_seq = key
            events.append(ev)
            continue
        for ev in events_of(key, payload, after):
            total += ev.ByteSize() + EVENT_OVERHEAD
            if events and (total > max_bytes or len(events) == limit):
                return events, True
            events.append(ev)
    return events, False
