"""Changing integer columns (and the sequences behind autoincrement keys) between 32 and 64 bits on
PostgreSQL: one step that the 64-bit revisions of every service share. SQLite's INTEGER is 64-bit already, so
nothing changes there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from alembic import op


def retype(
    columns: Mapping[str, Sequence[str]], serials: Mapping[str, str], column_type: str, sequence_type: str
) -> None:
    """`columns`: table -> its integer columns; `serials`: table -> its autoincrement key column."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, names in columns.items():  # one ALTER per table: the table is rewritten once
        changes = ", ".join(f'ALTER COLUMN "{c}" TYPE {column_type}' for c in names)
        op.execute(f'ALTER TABLE "{table}" {changes}')
    for table, column in serials.items():
        sequence = op.get_bind().exec_driver_sql(
            f"SELECT pg_get_serial_sequence('{table}', '{column}')"
        ).scalar_one()
        op.execute(f"ALTER SEQUENCE {sequence} AS {sequence_type}")
