"""PostgreSQL: one event appended to its outbox stream in one statement, without reading anything back.

The stream head is advanced and the row inserted by one data-modifying statement: the event's payload is
serialized without its stream_seq, and the statement appends the field (Event.stream_seq, field 5, a
varint) after reserving the seq, so the stored payload parses to the same event as before (a field given
last wins). The statement returns nothing, so a transaction that defers (storage/pg_pipeline.py) sends it
with its other statements and its COMMIT in one round trip. Used for a lone event (a write to a store with
no other holder); anything else reserves first (outbox_append.py).
"""

from __future__ import annotations

from sqlalchemy import Table, text

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.prepared import Prepared, Tx

# Event.stream_seq: field 5, wire type 0 (varint).
_STREAM_SEQ_TAG = "28"
assert event_pb2.Event.DESCRIPTOR.fields_by_name["stream_seq"].number == 5


def _varint(value: str) -> str:
    """SQL for the protobuf varint of the bigint expression `value` (positive): 7 bits a byte, low first,
    the high bit set on every byte but the last."""
    return (
        "(SELECT string_agg(set_byte(decode('00', 'hex'), 0, "
        f"CAST((({value} >> (7 * i)) & 127) | CASE WHEN {value} >> (7 * (i + 1)) > 0 THEN 128 ELSE 0 END "
        "AS integer)), decode('', 'hex') ORDER BY i) "
        f"FROM generate_series(0, 9) AS i WHERE i = 0 OR {value} >> (7 * i) > 0)"
    )


class OneEvent:
    """The statement of one outbox table and its stream-head table."""

    def __init__(self, rows: Table, heads: Table) -> None:
        self._statement = Prepared(
            text(
                f"WITH head AS (INSERT INTO {heads.name} AS h (run_id, agent_id, seq) "
                "VALUES (:run_id, :agent_id, 1) "
                "ON CONFLICT (run_id, agent_id) DO UPDATE SET seq = h.seq + 1 RETURNING seq) "
                f"INSERT INTO {rows.name} (run_id, agent_id, stream_seq, payload) "
                f"SELECT :run_id, :agent_id, head.seq, "
                f"CAST(:payload AS bytea) || decode('{_STREAM_SEQ_TAG}', 'hex') || {_varint('head.seq')} "
                "FROM head"
            )
        )

    def append(self, tx: Tx, event: event_pb2.Event) -> None:
        """Appends `event` (origin and time set) to its stream; deferred when `tx` defers."""
        event.ClearField("stream_seq")
        params = {"run_id": event.run_id, "agent_id": event.agent_id, "payload": event.SerializeToString()}
        self._statement.execute(tx, params)
