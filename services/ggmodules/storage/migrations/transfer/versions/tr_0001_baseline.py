"""transfer: the baseline schema.

Revision ID: tr_0001
Revises:
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "tr_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tr_transfers",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("transfer_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("request_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("predecessor_agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("from_state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("to_state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("successor_profile", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("successor_fsm_state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("state", sa.Integer(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("plan", sa.LargeBinary(), nullable=True),
        sa.Column("opening_note", sa.Text(), nullable=False),
        sa.Column("successor_agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("handover", sa.LargeBinary(), nullable=True),
        sa.Column("failure", sa.Text(), nullable=False),
        sa.Column("failure_code", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("failure_reason", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("failure_metadata", sa.Text(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("completed_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("request_id"),
        sa.UniqueConstraint("transfer_id"),
    )
    op.create_index(op.f("ix_tr_transfers_run_id"), "tr_transfers", ["run_id"], unique=False)
    op.create_index(op.f("ix_tr_transfers_state"), "tr_transfers", ["state"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_tr_transfers_state"), table_name="tr_transfers")
    op.drop_index(op.f("ix_tr_transfers_run_id"), table_name="tr_transfers")
    op.drop_table("tr_transfers")
