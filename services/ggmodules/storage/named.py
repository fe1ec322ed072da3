"""Prepared statements (storage.prepared) that answer as SQLAlchemy's results do, without its per-call cost:
SELECTs whose rows read by column name (`row.store_id`), and UPDATEs that say how many rows they changed."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from ggmodules.storage.prepared import Prepared, Tx


class NamedPrepared(Prepared):
    """A prepared SELECT; its rows are named tuples of its columns (names as the statement labels them)."""

    def __init__(self, statement: Any) -> None:
        super().__init__(statement)
        row = namedtuple("Row", [c.name for c in statement.selected_columns], rename=True)  # type: ignore[misc]
        self._make: Callable[[Sequence[Any]], Any] = row._make

    def first(self, conn: Connection | Tx, params: Mapping[str, Any]) -> Any:
        """The first row, or None."""
        row = self.one(conn, params)
        return None if row is None else self._make(row)

    def rows(self, conn: Connection | Tx, params: Mapping[str, Any]) -> list[Any]:
        return [self._make(r) for r in self.all(conn, params)]


class Counted(Prepared):
    """A prepared UPDATE or DELETE that answers how many rows it changed."""

    def count(self, conn: Connection | Tx, params: Mapping[str, Any]) -> int:
        return int(self._cursor(conn, params).rowcount)
