"""An event larger than one NATS message, stored in the JetStream log as parts and read back whole.

A NATS server refuses a message over its `max_payload` (1 MiB unless configured otherwise), but an event may
be larger: one write of several large messages, under every limit ModuleStore applies. Published whole, such
an event was refused at every try, and every later event of its origin waited behind it for good. So an
event whose payload does not fit is published as `n` messages on its subject, each with the header
`Ggm-Part: k/n` and the dedupe id `<event's dedupe id>#k` (JetStreamLog.publish), in order, each
acknowledged before the next. An event's cursor is the stream sequence of its last part.

Why a reader can join them: a relay publishes an event's parts in order and only then the origin's next
event; any other relay publishing the same parts has them dropped as duplicates (or, past the duplicate
window, starts them again from part 1). So on the stream, an event's parts come in order, with no part of
another event of the same origin between them; other origins' messages may be.

Each reader (the tail, one subscription's consumer, one read) keeps a `Parts`: `take` hands back a whole
payload at the last part, and `resumable` keeps a position it reports (a heartbeat's cursor) before the first
part of an event not yet whole, so a subscriber resuming there reads that event's parts again. Parts whose
first part this reader never saw (it started between them, or retention took the first) are let go: that
event is below where the reader can resume, as for any event retention took.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

PART_HEADER = "Ggm-Part"
DEDUPE_HEADER = "Nats-Msg-Id"
# Room left in a message for its subject and headers (a few hundred bytes at most).
OVERHEAD = 4096


def split(payload: bytes, max_payload: int) -> list[bytes]:
    """The payload in messages of at most `max_payload` bytes with their headers (itself when it fits)."""
    room = max(max_payload - OVERHEAD, 1)
    if len(payload) <= room:
        return [payload]
    return [payload[i : i + room] for i in range(0, len(payload), room)]


def part_headers(dedupe_id: str, k: int, n: int) -> dict[str, str]:
    """Headers of part `k` (from 1) of `n`; one part is published as a plain message."""
    if n == 1:
        return {DEDUPE_HEADER: dedupe_id}
    return {DEDUPE_HEADER: f"{dedupe_id}#{k}", PART_HEADER: f"{k}/{n}"}


@dataclass(slots=True)
class _Open:
    first: int  # the stream sequence of its first part
    chunks: list[bytes] = field(default_factory=list)


class Parts:
    """One reader's events in progress: parts taken in stream order."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}  # event's dedupe id -> its parts so far

    def take(self, seq: int, headers: Mapping[str, str] | None, data: bytes) -> bytes | None:
        """The whole payload when the message at `seq` is a whole event or an event's last part; None for a
        part before the last (or one of an event whose first part this reader did not see)."""
        part = headers.get(PART_HEADER) if headers else None
        if part is None or headers is None:
            return data
        k, n = (int(x) for x in part.split("/", 1))
        event = headers.get(DEDUPE_HEADER, "").rsplit("#", 1)[0]
        if k == 1:
            self._open[event] = _Open(seq)
        held = self._open.get(event)
        if held is None or len(held.chunks) != k - 1:  # started before this reader, or a part missed
            self._open.pop(event, None)
            return None
        held.chunks.append(data)
        if k < n:
            return None
        del self._open[event]
        # An origin's next event comes only once this one is whole: a part of its earlier events still open
        # here (a relay that stopped part-way, then started again from part 1) never will be.
        origin = event.split(":", 1)[0] + ":"
        for stale in [e for e in self._open if e.startswith(origin)]:
            del self._open[stale]
        return b"".join(held.chunks)

    def resumable(self, position: int) -> int:
        """`position`, or just before the first part of an event not yet whole when that is earlier."""
        if not self._open:
            return position
        return min(position, min(o.first for o in self._open.values()) - 1)
