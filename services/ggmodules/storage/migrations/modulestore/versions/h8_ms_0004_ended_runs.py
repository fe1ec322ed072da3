"""modulestore: runs Registry has ended (`ms_ended_runs`), whose writes are refused (R50).

Revision ID: h8_ms_0004
Revises: h9log_ms_0004
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "h8_ms_0004"
down_revision = "h9log_ms_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ms_ended_runs",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("ended_us", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("ms_ended_runs")
