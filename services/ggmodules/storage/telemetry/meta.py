"""`tel_meta`: Telemetry's named counters (each origin's position, the events stored and their bytes, how
far the log is pruned), kept in the database so every replica reads the same."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ggmodules.storage.telemetry.tables import TelMetaRow

META = TelMetaRow.__table__  # type: ignore[attr-defined]


def value(conn: Connection, key: str) -> int:
    return int(conn.execute(select(META.c.value).where(META.c.key == key)).scalar() or 0)


def raise_to(conn: Connection, key: str, at_least: int) -> None:
    """`key` to at least `at_least` (never lowered)."""
    dialect: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
    larger = func.greatest if conn.dialect.name == "postgresql" else func.max  # scalar max on SQLite
    stmt = dialect.insert(META).values(key=key, value=at_least)
    raised = {"value": larger(META.c.value, stmt.excluded.value)}
    conn.execute(stmt.on_conflict_do_update(index_elements=["key"], set_=raised))


def set_to(conn: Connection, key: str, new: int) -> None:
    dialect: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(META).values(key=key, value=new)
    conn.execute(stmt.on_conflict_do_update(index_elements=["key"], set_={"value": stmt.excluded.value}))


class MetaWriter:
    """Sets and raises several keys in one statement, a plain one per shape (nothing compiled per write)."""

    def __init__(self) -> None:
        self._statements: dict[tuple[bool, int, int], Any] = {}

    def write(self, conn: Connection, sets: dict[str, int], raises: dict[str, int]) -> None:
        """The `sets` keys to their value, the `raises` keys to at least theirs."""
        if not sets and not raises:
            return
        postgres = conn.dialect.name == "postgresql"
        shape = (postgres, len(sets), len(raises))
        if shape not in self._statements:
            rows = ", ".join(f"(:k{i}, :v{i})" for i in range(len(sets) + len(raises)))
            raised = ", ".join(f":k{i}" for i in range(len(sets), len(sets) + len(raises)))
            larger = "greatest" if postgres else "max"  # scalar max on SQLite
            update = (f"CASE WHEN tel_meta.key IN ({raised}) THEN {larger}(tel_meta.value, excluded.value) "
                     "ELSE excluded.value END") if raises else "excluded.value"  # fmt: skip
            self._statements[shape] = text(
                f"INSERT INTO tel_meta (key, value) VALUES {rows} "
                f"ON CONFLICT (key) DO UPDATE SET value = {update}"
            )
        params: dict[str, Any] = {}
        for i, (key, v) in enumerate([*sets.items(), *raises.items()]):
            params[f"k{i}"], params[f"v{i}"] = key, v
        conn.execute(self._statements[shape], params)
