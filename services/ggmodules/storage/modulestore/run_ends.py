"""Runs Registry has ended: recorded once (the first end wins), read back whole when ModuleStore starts."""

from __future__ import annotations

import time

from sqlalchemy import Table, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection

from ggmodules.storage.modulestore.tables import MsEndedRun

ENDED: Table = MsEndedRun.__table__  # type: ignore[attr-defined]


def end_run(conn: Connection, run_id: str, status: str) -> None:
    insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    row = {"run_id": run_id, "status": status, "ended_us": time.time_ns() // 1000}
    conn.execute(insert(ENDED).values(**row).on_conflict_do_nothing(index_elements=["run_id"]))


def ended_runs(conn: Connection) -> dict[str, str]:
    return {r.run_id: r.status for r in conn.execute(select(ENDED.c.run_id, ENDED.c.status))}
