"""registry: followers' outbox positions (`reg_outbox_positions`) and when each request id was claimed
(`reg_requests.created_at`), so the outbox and the request log can be pruned (issue 14).

Request ids already logged count as claimed when this revision ran.

Revision ID: h14_reg_0003
Revises: h1_reg_0002
"""

import time

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "h14_reg_0003"
down_revision = "h1_reg_0002"
branch_labels = None
depends_on = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "reg_outbox_positions",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("value", SEQ, nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.add_column(
        "reg_requests", sa.Column("created_at", SEQ, nullable=False, server_default=str(int(time.time())))
    )
    op.create_index("ix_reg_requests_created_at", "reg_requests", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_reg_requests_created_at", "reg_requests")
    op.drop_column("reg_requests", "created_at")
    op.drop_table("reg_outbox_positions")
