"""telemetry: sequences, cursors and counters 64-bit on PostgreSQL.

Revision ID: h1_tel_0002
Revises: tel_0001

A request naming a position above 2^31 (after_seq, after_origin_seq, a page token) was refused by
PostgreSQL with "integer out of range". SQLite's INTEGER is 64-bit already: nothing changes there.
"""

from ggmodules.storage.migrations.widen import retype

revision = "h1_tel_0002"
down_revision = "tel_0001"
branch_labels = None
depends_on = None

# table -> its 32-bit integer columns that become BIGINT
COLUMNS = {
    "tel_outbox": ["origin_seq", "stream_seq"],
    "tel_stream_heads": ["seq"],
}
# tables whose autoincrement key draws from a sequence made `AS integer`
SERIALS = {
    "tel_outbox": "origin_seq",
}


def upgrade() -> None:
    retype(COLUMNS, SERIALS, "BIGINT", "bigint")


def downgrade() -> None:
    retype(COLUMNS, SERIALS, "INTEGER", "integer")
