"""registry: sequences, cursors and counters 64-bit on PostgreSQL.

Revision ID: h1_reg_0002
Revises: reg_0001

A request naming a position above 2^31 (after_seq, after_origin_seq, a page token) was refused by
PostgreSQL with "integer out of range". SQLite's INTEGER is 64-bit already: nothing changes there.
"""

from ggmodules.storage.migrations.widen import retype

revision = "h1_reg_0002"
down_revision = "reg_0001"
branch_labels = None
depends_on = None

# table -> its 32-bit integer columns that become BIGINT
COLUMNS = {
    "reg_runs": ["seq"],
    "reg_instances": ["seq"],
    "reg_agent_counters": ["next_n"],
    "reg_outbox": ["origin_seq", "stream_seq"],
    "reg_stream_heads": ["seq"],
}
# tables whose autoincrement key draws from a sequence made `AS integer`
SERIALS = {
    "reg_runs": "seq",
    "reg_instances": "seq",
    "reg_outbox": "origin_seq",
}


def upgrade() -> None:
    retype(COLUMNS, SERIALS, "BIGINT", "bigint")


def downgrade() -> None:
    retype(COLUMNS, SERIALS, "INTEGER", "integer")
