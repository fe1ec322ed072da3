"""modulestore: archived threads' embeddings for semantic search (`ms_archive_vectors`).

Revision ID: h6_ms_0003
Revises: h6_ms_0002
"""

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = "h6_ms_0003"
down_revision = "h6_ms_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ms_archive_vectors",
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("store_id", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        # 64-bit on PostgreSQL, like the thread's seq (h1_ms_0002).
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "store_id", "seq", "model"),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("ms_archive_vectors")
