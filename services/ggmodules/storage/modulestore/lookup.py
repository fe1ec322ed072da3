"""Finding runs, agents and stores, and saying precisely which one is missing."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table, bindparam, select
from sqlalchemy.engine import Connection, Row

from ggmodules.core.errors import DomainError, NotFound, PermissionDenied, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.store import StoreHead
from ggmodules.core.roster import Caps
from ggmodules.core.vocabulary import MemoryStrategy
from ggmodules.storage.modulestore.tables import MsAgent, MsHolder, MsStore
from ggmodules.storage.named import NamedPrepared
from ggmodules.storage.prepared import Prepared, Tx

STORES: Table = MsStore.__table__  # type: ignore[attr-defined]
HOLDERS: Table = MsHolder.__table__  # type: ignore[attr-defined]
AGENTS: Table = MsAgent.__table__  # type: ignore[attr-defined]


_RUN_EXISTS = Prepared(select(AGENTS.c.agent_id).where(AGENTS.c.run_id == bindparam("run_id")).limit(1))
_AGENT_EXISTS = Prepared(
    select(AGENTS.c.agent_id).where(
        AGENTS.c.run_id == bindparam("run_id"), AGENTS.c.agent_id == bindparam("agent_id")
    )
)

# Built once (rows with attributes, as every caller reads them): building costs more than running it.
_STORE_ROW = select(STORES).where(
    STORES.c.run_id == bindparam("run_id"), STORES.c.store_id == bindparam("store_id")
)


def run_exists(conn: Connection | Tx, run_id: str) -> bool:
    return _RUN_EXISTS.one(conn, {"run_id": run_id}) is not None


def agent_exists(conn: Connection | Tx, run_id: str, agent_id: str) -> bool:
    return _AGENT_EXISTS.one(conn, {"run_id": run_id, "agent_id": agent_id}) is not None


def require_agent(conn: Connection | Tx, run_id: str, agent_id: str) -> None:
    if not agent_exists(conn, run_id, agent_id):
        raise missing(conn, run_id, agent_id)


def missing(conn: Connection | Tx, run_id: str, agent_id: str, store_id: str = "") -> DomainError:
    """Which of run, agent, store is unknown, in that order."""
    if not run_exists(conn, run_id):
        return NotFound(
            f"no run {run_id!r} has bound any instance in ModuleStore",
            reason=Reason.RUN_NOT_FOUND,
            metadata={"run_id": run_id},
        )
    if agent_id and not agent_exists(conn, run_id, agent_id):
        return NotFound(
            f"no agent {agent_id!r} in run {run_id!r}",
            reason=Reason.AGENT_NOT_FOUND,
            metadata={"run_id": run_id, "agent_id": agent_id},
        )
    return NotFound(
        f"no store {store_id!r} in run {run_id!r}",
        reason=Reason.STORE_NOT_FOUND,
        metadata={"run_id": run_id, "store_id": store_id},
    )


_HELD_STORES = Prepared(
    select(HOLDERS.c.store_id)
    .where(
        HOLDERS.c.run_id == bindparam("run_id"),
        HOLDERS.c.agent_id == bindparam("agent_id"),
        HOLDERS.c.active,
    )
    .order_by(HOLDERS.c.kind)
)


def held_store_ids(conn: Connection | Tx, run_id: str, agent_id: str) -> list[str]:
    """The stores `agent_id` actively holds, in kind order (its roster's bound stores)."""
    return [str(r[0]) for r in _HELD_STORES.all(conn, {"run_id": run_id, "agent_id": agent_id})]


def not_a_holder(
    conn: Connection | Tx, run_id: str, agent_id: str, store_id: str, *, let_go: bool = False
) -> PermissionDenied:
    """The refusal names the target and lists the stores the caller does hold (metadata `held`, comma
    separated), so it can retry on the right one."""
    why = "has let it go" if let_go else "does not hold it"
    held = held_store_ids(conn, run_id, agent_id)
    listed = ", ".join(held) or "none"
    return PermissionDenied(
        f"agent {agent_id!r} cannot use {store_id!r}: it {why}; the stores on its roster are {listed}",
        reason=Reason.NOT_A_HOLDER,
        metadata={"agent_id": agent_id, "store_id": store_id, "held": ",".join(held)},
    )


def store_row(conn: Connection, run_id: str, store_id: str, agent_id: str = "") -> Row[Any]:
    row = conn.execute(_STORE_ROW, {"run_id": run_id, "store_id": store_id}).first()
    if row is None:
        raise missing(conn, run_id, agent_id, store_id)
    return row


_STORE_RECORD = NamedPrepared(_STORE_ROW)


def store_record(conn: Connection | Tx, run_id: str, store_id: str, agent_id: str = "") -> Any:
    """`store_row`, prepared: the same columns by name (a handover reads several)."""
    row = _STORE_RECORD.first(conn, {"run_id": run_id, "store_id": store_id})
    if row is None:
        raise missing(conn, run_id, agent_id, store_id)
    return row


def head_of(row: Any) -> StoreHead:
    return StoreHead(
        kind=Kind(row.kind),
        caps=Caps(row.max_items, row.max_bytes),
        figures=Figures(row.items, row.bytes, row.writes),
        head_seq=row.head_seq,
        turn=row.turn,
        strategy=MemoryStrategy(row.strategy),
        directory=row.skills_directory,
    )
