"""telemetry: the baseline schema.

Revision ID: tel_0001
Revises:
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "tel_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tel_events",
        sa.Column(
            "cursor", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False
        ),
        sa.Column("origin", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("origin_seq", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("cursor"),
        sa.UniqueConstraint("origin", "origin_seq", name="uq_tel_events_origin_seq"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_tel_events_agent", "tel_events", ["run_id", "agent_id", "cursor"], unique=False)
    op.create_index("ix_tel_events_run", "tel_events", ["run_id", "cursor"], unique=False)
    op.create_table(
        "tel_meta",
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    )
    op.create_table(
        "tel_outbox",
        sa.Column("origin_seq", sa.Integer(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("stream_seq", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("origin_seq"),
    )
    op.create_index(op.f("ix_tel_outbox_run_id"), "tel_outbox", ["run_id"], unique=False)
    op.create_table(
        "tel_requests",
        sa.Column("method", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("request_hash", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("response", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("method", "request_id"),
    )
    op.create_table(
        "tel_stream_heads",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("agent_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "agent_id"),
    )


def downgrade() -> None:
    op.drop_table("tel_stream_heads")
    op.drop_table("tel_requests")
    op.drop_index(op.f("ix_tel_outbox_run_id"), table_name="tel_outbox")
    op.drop_table("tel_outbox")
    op.drop_table("tel_meta")
    op.drop_index("ix_tel_events_run", table_name="tel_events")
    op.drop_index("ix_tel_events_agent", table_name="tel_events")
    op.drop_table("tel_events")
