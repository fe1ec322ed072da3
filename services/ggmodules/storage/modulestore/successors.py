"""Who handed their modules on, and to whom: read on the refusal paths of writes and tool calls."""

from __future__ import annotations

from sqlalchemy import Table, bindparam, select
from sqlalchemy.engine import Connection

from ggmodules.storage.modulestore.tables import MsHandover
from ggmodules.storage.prepared import Prepared, Tx

HANDOVERS: Table = MsHandover.__table__  # type: ignore[attr-defined]
_SUCCESSOR = Prepared(
    select(HANDOVERS.c.successor_agent_id).where(
        HANDOVERS.c.run_id == bindparam("run_id"), HANDOVERS.c.agent_id == bindparam("agent_id")
    )
)
_RECORD = Prepared(
    HANDOVERS.insert().values(
        run_id=bindparam("run_id"),
        agent_id=bindparam("agent_id"),
        successor_agent_id=bindparam("successor_agent_id"),
        cause=bindparam("cause"),
    )
)


def successor_of(conn: Connection | Tx, run_id: str, agent_id: str) -> str | None:
    """The agent `agent_id` handed on to, or None if it never handed on."""
    found = _SUCCESSOR.scalar(conn, {"run_id": run_id, "agent_id": agent_id})
    return str(found) if found is not None else None


def record(conn: Connection | Tx, run_id: str, agent_id: str, successor: str, cause: str) -> None:
    """The key (run, agent) makes a second handover of one predecessor collide (R27)."""
    _RECORD.execute(
        conn,
        {"run_id": run_id, "agent_id": agent_id, "successor_agent_id": successor, "cause": cause},
    )
