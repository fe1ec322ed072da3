"""Skills read sets: which skill bodies a window has pinned. Held by id, so a share can alias one."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.engine import Connection

from ggmodules.storage.modulestore.tables import MsReadSet
from ggmodules.storage.prepared import Prepared, Tx

READ_SETS: Table = MsReadSet.__table__  # type: ignore[attr-defined]
_LOAD = Prepared(select(READ_SETS.c.names).where(READ_SETS.c.id == bindparam("id")))
_CREATE = Prepared(READ_SETS.insert().values(id=bindparam("id"), names=bindparam("names")))
_SAVE = Prepared(update(READ_SETS).where(READ_SETS.c.id == bindparam("id")).values(names=bindparam("names")))


def load(conn: Connection | Tx, read_set_id: str) -> tuple[str, ...]:
    if not read_set_id:
        return ()
    names = _LOAD.scalar(conn, {"id": read_set_id})
    return tuple(json.loads(names)) if names else ()


def load_many(conn: Connection | Tx, ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
    return {i: load(conn, i) for i in set(ids) if i}


def create(conn: Connection | Tx, names: tuple[str, ...] = ()) -> str:
    read_set_id = uuid.uuid4().hex
    _CREATE.execute(conn, {"id": read_set_id, "names": json.dumps(list(names))})
    return read_set_id


def save(conn: Connection | Tx, read_set_id: str, names: tuple[str, ...]) -> None:
    _SAVE.execute(conn, {"id": read_set_id, "names": json.dumps(list(names))})
