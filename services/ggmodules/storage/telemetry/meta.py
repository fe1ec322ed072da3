"""`tel_meta`: Telemetry's named counters (each origin's position, the events stored and their bytes, how
far the log is pruned), kept in the database so every replica reads the same."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.engine import Connection

from ggmodules.storage import pg_pipeline
from ggmodules.storage.telemetry.tables import TelMetaRow

META = TelMetaRow.__table__  # type: ignore[attr-defined]
# The keys every replica reads alike: how far the log is pruned, how many events tel_events holds and their
# payload bytes (each origin's position is "origin/<origin>").
PRUNED_THROUGH = "pruned_through"
STORED = "stored"
STORED_BYTES = "stored_bytes"


def value(conn: Connection, key: str) -> int:
    return int(conn.execute(select(META.c.value).where(META.c.key == key)).scalar() or 0)


# One plain statement per shape (dialect, keys set, keys raised): nothing compiled per write.
_STATEMENTS: dict[tuple[bool, int, int], Any] = {}
_SQL: dict[tuple[bool, int, int], str] = {}
_PSYCOPG: dict[tuple[bool, int, int], str] = {}  # the same text with psycopg's placeholders


def write(conn: Connection, sets: dict[str, int] | None = None, raises: dict[str, int] | None = None) -> None:
    """In one statement: the `sets` keys to their value, the `raises` keys to at least theirs (never
    lowered)."""
    sets, raises = sets or {}, raises or {}
    if not sets and not raises:
        return
    postgres = conn.dialect.name == "postgresql"
    shape = _shape(postgres, sets, raises)
    params = _params(sets, raises)
    if postgres:
        conn.execute(_STATEMENTS[shape], params)
    else:  # sqlite3 takes the same named parameters: no Core execution on an event's way
        conn.connection.dbapi_connection.execute(_SQL[shape], params)  # type: ignore[union-attr]


def write_and_commit(conn: Connection, sets: dict[str, int], raises: dict[str, int]) -> None:
    """PostgreSQL: `write`, then COMMIT, in one round trip (libpq's pipeline mode, storage/pg_pipeline.py:
    one Sync; psycopg's own pipeline sent two); the transaction has ended when it returns (SQLAlchemy's
    own COMMIT after it finds nothing open and sends nothing)."""
    waiting = []
    if sets or raises:
        waiting.append((_PSYCOPG[_shape(True, sets, raises)], _params(sets, raises)))
    pg_pipeline.send(conn.connection.dbapi_connection, waiting, [], commit=True)


def _params(sets: dict[str, int], raises: dict[str, int]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for i, (key, v) in enumerate([*sets.items(), *raises.items()]):
        params[f"k{i}"], params[f"v{i}"] = key, v
    return params


def _shape(postgres: bool, sets: dict[str, int], raises: dict[str, int]) -> tuple[bool, int, int]:
    """The statement for this shape, built the first time."""
    shape = (postgres, len(sets), len(raises))
    if shape not in _STATEMENTS:
        rows = ", ".join(f"(:k{i}, :v{i})" for i in range(len(sets) + len(raises)))
        raised = ", ".join(f":k{i}" for i in range(len(sets), len(sets) + len(raises)))
        larger = "greatest" if postgres else "max"  # scalar max on SQLite
        update = (f"CASE WHEN tel_meta.key IN ({raised}) THEN {larger}(tel_meta.value, excluded.value) "
                 "ELSE excluded.value END") if raises else "excluded.value"  # fmt: skip
        _SQL[shape] = (f"INSERT INTO tel_meta (key, value) VALUES {rows} "
                       f"ON CONFLICT (key) DO UPDATE SET value = {update}")  # fmt: skip
        _STATEMENTS[shape] = text(_SQL[shape])
        _PSYCOPG[shape] = re.sub(r":(k|v)(\d+)", r"%(\1\2)s", _SQL[shape])
    return shape
