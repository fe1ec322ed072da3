"""Minting stores: `<kind>-<n>` ids counted per kind per run, minted once and never reused (R34)."""

from __future__ import annotations

from sqlalchemy import Table, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ggmodules.core.kinds import Kind
from ggmodules.storage.modulestore.tables import MsCounter, MsNamed
from ggmodules.storage.prepared import Prepared, Tx

COUNTERS: Table = MsCounter.__table__  # type: ignore[attr-defined]
NAMED: Table = MsNamed.__table__  # type: ignore[attr-defined]
_NAMED = Prepared(
    select(NAMED.c.store_id).where(NAMED.c.run_id == bindparam("run_id"), NAMED.c.key == bindparam("key"))
)


def mint_id(conn: Connection, run_id: str, kind: Kind) -> tuple[str, int]:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(COUNTERS).values(run_id=run_id, kind=int(kind), next=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=["run_id", "kind"], set_={"next": COUNTERS.c.next + 1}
    ).returning(COUNTERS.c.next)
    n = int(conn.execute(stmt).scalar_one()) - 1
    return f"{kind.word}-{n}", n


def named_store(conn: Connection | Tx, run_id: str, key: str) -> str | None:
    found = _NAMED.scalar(conn, {"run_id": run_id, "key": key})
    return None if found is None else str(found)


def name_store(conn: Connection, run_id: str, key: str, store_id: str) -> None:
    conn.execute(NAMED.insert().values(run_id=run_id, key=key, store_id=store_id))
