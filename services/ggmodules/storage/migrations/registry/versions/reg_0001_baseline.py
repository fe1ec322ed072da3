"""registry: the baseline schema.

Revision ID: reg_0001
Revises:
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "reg_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reg_agent_counters",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("profile", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("next_n", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "profile"),
    )
    op.create_table(
        "reg_instances",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("profile", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("parent_agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("cause", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("fsm_state", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("roster", sa.Text(), nullable=False),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("request_method", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("request_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("bind_request", sa.LargeBinary(), nullable=True),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("reserved_for", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("released", sa.Boolean(), nullable=False),
        sa.Column("opening_note", sa.Text(), nullable=False),
        sa.Column("successor_agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("request_method", "request_id", name="uq_reg_instances_request"),
        sa.UniqueConstraint("run_id", "agent_id", name="uq_reg_instances_agent"),
        sa.UniqueConstraint("run_id", "reserved_for", name="uq_reg_instances_successor"),
    )
    op.create_index(op.f("ix_reg_instances_run_id"), "reg_instances", ["run_id"], unique=False)
    op.create_table(
        "reg_outbox",
        sa.Column("origin_seq", sa.Integer(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("stream_seq", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("origin_seq"),
    )
    op.create_index(op.f("ix_reg_outbox_run_id"), "reg_outbox", ["run_id"], unique=False)
    op.create_table(
        "reg_requests",
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("response", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("method", "request_id"),
    )
    op.create_table(
        "reg_runs",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("board_enabled", sa.Boolean(), nullable=False),
        sa.Column("spec", sa.Text(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("status_detail", sa.Text(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("run_id"),
    )
    op.create_table(
        "reg_stream_heads",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_id"),
    )


def downgrade() -> None:
    op.drop_table("reg_stream_heads")
    op.drop_table("reg_runs")
    op.drop_table("reg_requests")
    op.drop_index(op.f("ix_reg_outbox_run_id"), table_name="reg_outbox")
    op.drop_table("reg_outbox")
    op.drop_index(op.f("ix_reg_instances_run_id"), table_name="reg_instances")
    op.drop_table("reg_instances")
    op.drop_table("reg_agent_counters")
