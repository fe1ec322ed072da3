"""telemetry: when each request id was claimed (`tel_requests.created_at`) and each event stored
(`tel_events.stored_at`), so the request log and the event log can be pruned by age (issue 14). Request ids
and events already there count as claimed and stored when this revision ran.

Revision ID: h14_tel_0003
Revises: tel_h4_0002
"""

import time

import sqlalchemy as sa
from alembic import op

revision = "h14_tel_0003"
down_revision = "tel_h4_0002"
branch_labels = None
depends_on = None

SEQ = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column(
        "tel_requests", sa.Column("created_at", SEQ, nullable=False, server_default=str(int(time.time())))
    )
    op.create_index("ix_tel_requests_created_at", "tel_requests", ["created_at"])
    now = str(int(time.time()))
    op.add_column("tel_events", sa.Column("stored_at", sa.BigInteger(), nullable=False, server_default=now))


def downgrade() -> None:
    op.drop_column("tel_events", "stored_at")
    op.drop_index("ix_tel_requests_created_at", "tel_requests")
    op.drop_column("tel_requests", "created_at")
