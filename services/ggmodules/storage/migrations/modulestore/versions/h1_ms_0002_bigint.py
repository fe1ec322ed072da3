"""modulestore: sequences, cursors and counters 64-bit on PostgreSQL.

Revision ID: h1_ms_0002
Revises: ms_0001

A request naming a position above 2^31 (after_seq, after_origin_seq, a page token) was refused by
PostgreSQL with "integer out of range". SQLite's INTEGER is 64-bit already: nothing changes there.
"""

from ggmodules.storage.migrations.widen import retype

revision = "h1_ms_0002"
down_revision = "ms_0001"
branch_labels = None
depends_on = None

# table -> its 32-bit integer columns that become BIGINT
COLUMNS = {
    "ms_stores": [
        "n", "max_items", "max_bytes", "parent_limit", "head_seq", "turn", "items", "bytes", "writes"
    ],
    "ms_messages": ["seq", "turn"],
    "ms_archive_threads": ["seq"],
    "ms_counters": ["next"],
    "ms_holders": ["watermark"],
    "ms_outbox": ["origin_seq", "stream_seq"],
    "ms_stream_heads": ["seq"],
}
# tables whose autoincrement key draws from a sequence made `AS integer`
SERIALS = {
    "ms_outbox": "origin_seq",
}


def upgrade() -> None:
    retype(COLUMNS, SERIALS, "BIGINT", "bigint")


def downgrade() -> None:
    retype(COLUMNS, SERIALS, "INTEGER", "integer")
