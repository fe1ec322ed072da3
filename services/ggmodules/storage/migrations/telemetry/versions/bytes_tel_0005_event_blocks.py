"""telemetry: older events packed into compressed blocks (issue 14, stored bytes per appended byte).

`tel_event_blocks` holds Telemetry's older events BLOCK at a time, zlib-compressed together
(storage/telemetry/event_blocks.py). The upgrade packs an existing log's events as the service would: every
full BLOCK of the oldest rows becomes one block, the newest (fewer than BLOCK) stay rows. Cursors, origins,
payloads and stored_at are kept as they were; no cursor is drawn again (tel_events keeps its counter).
The downgrade puts every packed event back as a row.

Revision ID: bytes_tel_0005
Revises: fanout_tel_0004
"""

import sqlalchemy as sa
from alembic import op

from ggmodules.storage.telemetry import event_blocks

revision = "bytes_tel_0005"
down_revision = "fanout_tel_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    cursor = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "tel_event_blocks",
        sa.Column("first_cursor", cursor, primary_key=True, autoincrement=False),
        sa.Column("last_cursor", sa.BigInteger(), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("payload_bytes", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.String(), nullable=True),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
    )
    conn = op.get_bind()
    while True:
        rows = event_blocks.oldest_rows(conn, event_blocks.BLOCK)
        if len(rows) < event_blocks.BLOCK:
            break
        event_blocks.store_block(conn, rows, event_blocks.encode(rows))


def downgrade() -> None:
    conn = op.get_bind()
    columns = "cursor, origin, origin_seq, run_id, agent_id, payload, stored_at"
    insert = sa.text(
        f"INSERT INTO tel_events ({columns}) "
        "VALUES (:cursor, :origin, :origin_seq, :run_id, :agent_id, :payload, :stored_at)"
    )
    for first, _last, _count in list(event_blocks.oldest_blocks(conn)):
        for ev in event_blocks.CACHE.events(conn, first):
            conn.execute(insert, {name: getattr(ev, name) for name in columns.split(", ")})
    op.drop_table("tel_event_blocks")
