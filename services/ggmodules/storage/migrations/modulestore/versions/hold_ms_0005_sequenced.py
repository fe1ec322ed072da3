"""modulestore: stream_seq assigned after the write (issue 14): `sequenced_through` in ms_outbox_positions.

Every row written before this revision carries its stream_seq; the rows after it get theirs from the
outbox's sequencer (storage/outbox_sequencing.py), which starts here.

Revision ID: hold_ms_0005
Revises: h8_ms_0004
"""

from alembic import op

revision = "hold_ms_0005"
down_revision = "h8_ms_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "INSERT INTO ms_outbox_positions (name, value) "
        "SELECT 'sequenced_through', coalesce(max(origin_seq), 0) FROM ms_outbox"
    )


def downgrade() -> None:
    op.execute("DELETE FROM ms_outbox_positions WHERE name = 'sequenced_through'")
