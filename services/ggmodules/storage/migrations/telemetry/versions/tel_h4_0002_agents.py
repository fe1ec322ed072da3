"""telemetry: the agents Telemetry knows (tel_agents), against which turn reports are checked.

An agent ingested before this revision is not in the table: its first turn report confirms it with the
Registry and adds it.

Revision ID: tel_h4_0002
Revises: tel_0001
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "tel_h4_0002"
down_revision = "h1_tel_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tel_agents",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("held", sa.Text(), nullable=False),
        sa.Column("last_turn", sa.BigInteger(), nullable=True),
        sa.Column("last_cursor", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_id"),
    )


def downgrade() -> None:
    op.drop_table("tel_agents")
