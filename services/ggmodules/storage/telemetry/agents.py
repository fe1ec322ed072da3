"""The agents Telemetry knows (`tel_agents`): what each holds, from its roster events, and its last reported
turn (ReportTurn checks a turn against them)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.core.kinds import Kind
from ggmodules.core.telemetry.turns import KnownAgent, held_of
from ggmodules.storage.telemetry.tables import TelAgentRow

AGENTS = TelAgentRow.__table__  # type: ignore[attr-defined]


def know(conn: Connection, rosters: Sequence[event_pb2.Event]) -> None:
    """The agents whose roster events these are; one already known stays as it is."""
    if not rosters:
        return
    dialect: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
    rows = {
        (ev.run_id, ev.agent_id): {
            "run_id": ev.run_id,
            "agent_id": ev.agent_id,
            "held": _encode_held(held_of((r.kind, r.store_id, r.enabled) for r in ev.roster.rows)),
            "last_turn": None,
            "last_cursor": 0,
        }
        for ev in rosters
    }
    stmt = dialect.insert(AGENTS).values(list(rows.values()))
    conn.execute(stmt.on_conflict_do_nothing(index_elements=["run_id", "agent_id"]))


def record_turn(conn: Connection, agent: KnownAgent, turn: int, cursor: int) -> None:
    dialect: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dialect.insert(AGENTS).values(
        run_id=agent.run_id,
        agent_id=agent.agent_id,
        held=_encode_held(agent.held),
        last_turn=turn,
        last_cursor=cursor,
    )
    conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["run_id", "agent_id"],
            set_={"last_turn": stmt.excluded.last_turn, "last_cursor": stmt.excluded.last_cursor},
        )
    )


def known(conn: Connection, run_id: str, agent_id: str) -> KnownAgent | None:
    row = conn.execute(
        select(AGENTS).where(AGENTS.c.run_id == run_id, AGENTS.c.agent_id == agent_id)
    ).first()
    if row is None:
        return None
    held = {Kind[word.upper()]: store_id for word, store_id in json.loads(row.held).items()}
    last = None if row.last_turn is None else int(row.last_turn)
    return KnownAgent(row.run_id, row.agent_id, held, last, int(row.last_cursor))


def _encode_held(held: Mapping[Kind, str]) -> str:
    return json.dumps({k.word: held[k] for k in sorted(held)})
