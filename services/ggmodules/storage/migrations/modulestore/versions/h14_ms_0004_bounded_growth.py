"""modulestore: followers' outbox positions (`ms_outbox_positions`) and when each request id was claimed
(`ms_requests.created_at`), so the outbox and the request log can be pruned (issue 14).

Request ids already logged count as claimed when this revision ran.

Revision ID: h14_ms_0004
Revises: h6_ms_0003
"""

import time

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "h14_ms_0004"
down_revision = "h6_ms_0003"
branch_labels = None
depends_on = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "ms_outbox_positions",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("value", SEQ, nullable=False),
        sa.PrimaryKeyConstraint("name"),
        sqlite_with_rowid=False,
    )
    op.add_column(
        "ms_requests", sa.Column("created_at", SEQ, nullable=False, server_default=str(int(time.time())))
    )
    op.create_index("ix_ms_requests_created_at", "ms_requests", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_ms_requests_created_at", "ms_requests")
    op.drop_column("ms_requests", "created_at")
    op.drop_table("ms_outbox_positions")
