"""telemetry: leaner tel_events (issue 14, stored bytes per appended byte).

- The unique key on (origin, origin_seq) goes: an event is stored once because ingestion passes over every
  event at or below the highest origin_seq stored for its origin (`tel_meta` origin/<name>), read and raised
  under Telemetry's write lock (storage/telemetry/repository.py). The key only repeated that, at about 26
  bytes an event.
- The run index (run_id, cursor) and the agent index (run_id, agent_id, cursor) become one index
  (run_id, cursor, agent_id): a run's events in cursor order, and an agent's among them read off the index
  without touching the table.

SQLite cannot drop a table's unique constraint: the table is rebuilt (its rows, and its AUTOINCREMENT
counter, so no cursor is ever drawn twice).

Revision ID: fanout_tel_0004
Revises: h9log_tel_0003
"""

import time

from alembic import op

revision = "fanout_tel_0004"
down_revision = "h9log_tel_0003"
branch_labels = None
depends_on = None

COLUMNS = "cursor, origin, origin_seq, run_id, agent_id, payload, stored_at"


def upgrade() -> None:
    op.drop_index("ix_tel_events_run", table_name="tel_events")
    op.drop_index("ix_tel_events_agent", table_name="tel_events")
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint("uq_tel_events_origin_seq", "tel_events", type_="unique")
    else:
        _rebuild(unique=False)
    op.create_index("ix_tel_events_run_cursor", "tel_events", ["run_id", "cursor", "agent_id"])


def downgrade() -> None:
    op.drop_index("ix_tel_events_run_cursor", table_name="tel_events")
    if op.get_bind().dialect.name == "postgresql":
        op.create_unique_constraint("uq_tel_events_origin_seq", "tel_events", ["origin", "origin_seq"])
    else:
        _rebuild(unique=True)
    op.create_index("ix_tel_events_agent", "tel_events", ["run_id", "agent_id", "cursor"])
    op.create_index("ix_tel_events_run", "tel_events", ["run_id", "cursor"])


def _rebuild(unique: bool) -> None:
    """SQLite: tel_events again, with or without the unique key, its rows and its cursor counter kept."""
    key = ",\n\tCONSTRAINT uq_tel_events_origin_seq UNIQUE (origin, origin_seq)" if unique else ""
    op.execute(
        "CREATE TABLE tel_events_rebuilt (\n"
        "\tcursor INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,\n"
        "\torigin VARCHAR NOT NULL,\n"
        "\torigin_seq BIGINT NOT NULL,\n"
        "\trun_id VARCHAR NOT NULL,\n"
        "\tagent_id VARCHAR NOT NULL,\n"
        "\tpayload BLOB NOT NULL,\n"
        f"\tstored_at BIGINT DEFAULT '{int(time.time())}' NOT NULL{key}\n"
        ")"
    )
    op.execute(f"INSERT INTO tel_events_rebuilt ({COLUMNS}) SELECT {COLUMNS} FROM tel_events ORDER BY cursor")
    # The counter stays where it was, even past the newest row left (pruned rows' cursors are never reused).
    counter = "SELECT max(seq) FROM sqlite_sequence WHERE name IN ('tel_events', 'tel_events_rebuilt')"
    op.execute(f"UPDATE sqlite_sequence SET seq = ({counter}) WHERE name = 'tel_events_rebuilt'")
    op.execute(
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'tel_events_rebuilt', seq FROM sqlite_sequence "
        "WHERE name = 'tel_events' AND NOT EXISTS "
        "(SELECT 1 FROM sqlite_sequence WHERE name = 'tel_events_rebuilt')"
    )
    op.execute("DROP TABLE tel_events")
    op.execute("ALTER TABLE tel_events_rebuilt RENAME TO tel_events")
