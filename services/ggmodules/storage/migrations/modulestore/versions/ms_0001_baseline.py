"""modulestore: the baseline schema.

Revision ID: ms_0001
Revises:
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "ms_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ms_agents",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("profile", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("parent_agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("cause", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_id"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_archive_threads",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("messages", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "store_id", "seq"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_counters",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("next", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "kind"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_handovers",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("successor_agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("cause", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_id"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_holders",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("origin", sa.Integer(), nullable=False),
        sa.Column("may_write", sa.Boolean(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("watermark", sa.Integer(), nullable=False),
        sa.Column("read_set_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "store_id", "agent_id"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_ms_holders_agent", "ms_holders", ["run_id", "agent_id"], unique=False)
    op.create_table(
        "ms_messages",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "store_id", "seq"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_named",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "key"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_outbox",
        sa.Column("origin_seq", sa.Integer(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("stream_seq", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("origin_seq"),
    )
    op.create_index(op.f("ix_ms_outbox_run_id"), "ms_outbox", ["run_id"], unique=False)
    op.create_table(
        "ms_read_sets",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("names", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_requests",
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("response", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("method", "request_id"),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "ms_stores",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("max_items", sa.Integer(), nullable=False),
        sa.Column("max_bytes", sa.Integer(), nullable=False),
        sa.Column("strategy", sa.Integer(), nullable=False),
        sa.Column("skills_directory", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("forked_from", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("parent_store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("parent_limit", sa.Integer(), nullable=False),
        sa.Column("head_seq", sa.Integer(), nullable=False),
        sa.Column("turn", sa.Integer(), nullable=False),
        sa.Column("items", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("writes", sa.Integer(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "store_id"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_ms_stores_kind", "ms_stores", ["run_id", "kind", "n"], unique=False)
    op.create_table(
        "ms_stream_heads",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_id"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("ms_stream_heads")
    op.drop_index("ix_ms_stores_kind", table_name="ms_stores")
    op.drop_table("ms_stores")
    op.drop_table("ms_requests")
    op.drop_table("ms_read_sets")
    op.drop_index(op.f("ix_ms_outbox_run_id"), table_name="ms_outbox")
    op.drop_table("ms_outbox")
    op.drop_table("ms_named")
    op.drop_table("ms_messages")
    op.drop_index("ix_ms_holders_agent", table_name="ms_holders")
    op.drop_table("ms_holders")
    op.drop_table("ms_handovers")
    op.drop_table("ms_counters")
    op.drop_table("ms_archive_threads")
    op.drop_table("ms_agents")
