"""Write: the hot path. One transaction: the store and all its holders in one query, apply, persist,
outbox events (one row, whatever the number of holders: storage/modulestore/co_holders.py). Statements are
prepared (see prepared.py)."""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import and_, bindparam, select, update
from sqlalchemy.engine import Connection

from ggmodules.core.errors import PermissionDenied, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.caps import DEFAULT_LIMITS, StoreLimits
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.handover import handed_on
from ggmodules.core.modules.ops import LOG_OPS, OP_NAME, Op
from ggmodules.core.modules.states import KindState, decode_state, encode_state
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.modules.views import WriteResult
from ggmodules.core.modules.write import apply_write
from ggmodules.core.roster import Caps
from ggmodules.core.vocabulary import MemoryStrategy
from ggmodules.storage.modulestore import co_holders, handovers, read_sets
from ggmodules.storage.modulestore.events import write_event
from ggmodules.storage.modulestore.fast_log import FastOutbox
from ggmodules.storage.modulestore.lineage import MESSAGES, THREADS, thread_json
from ggmodules.storage.modulestore.lookup import HOLDERS, STORES, missing, not_a_holder
from ggmodules.storage.modulestore.prepared import Prepared, Tx

_S, _H = STORES, HOLDERS


class _Row(NamedTuple):
    """One holder of the store, with the store's head columns (not its state)."""

    kind: int
    max_items: int
    max_bytes: int
    strategy: int
    skills_directory: str
    head_seq: int
    turn: int
    items: int
    bytes: int
    writes: int
    agent_id: str | None
    may_write: bool | None
    active: bool | None
    read_set_id: str | None

    def head(self) -> StoreHead:
        return StoreHead(
            Kind(self.kind),
            Caps(self.max_items, self.max_bytes),
            Figures(self.items, self.bytes, self.writes),
            self.head_seq,
            self.turn,
            MemoryStrategy(self.strategy),
            self.skills_directory,
        )


_KEY = and_(_S.c.run_id == bindparam("run_id"), _S.c.store_id == bindparam("store_id"))
_HOLDERS_OF_STORE = (
    select(
        *(_S.c[name] for name in _Row._fields[:10]),
        _H.c.agent_id,
        _H.c.may_write,
        _H.c.active,
        _H.c.read_set_id,
    )
    .select_from(_S.outerjoin(_H, and_(_H.c.run_id == _S.c.run_id, _H.c.store_id == _S.c.store_id)))
    .where(_KEY)
)
_LOAD = {
    # PostgreSQL: lock the store row so writers of one store take turns. SQLite: BEGIN IMMEDIATE did.
    "postgresql": Prepared(_HOLDERS_OF_STORE.with_for_update(of=_S)),
    "sqlite": Prepared(_HOLDERS_OF_STORE),
}
_STATE = Prepared(select(_S.c.state).where(_KEY))
_HEAD_COLUMNS = ("head_seq", "turn", "items", "bytes", "writes")
_UPDATE_HEAD = Prepared(update(_S).where(_KEY).values({c: bindparam(f"v_{c}") for c in _HEAD_COLUMNS}))
_UPDATE_HEAD_AND_STATE = Prepared(
    update(_S).where(_KEY).values({c: bindparam(f"v_{c}") for c in (*_HEAD_COLUMNS, "state")})
)
_INSERT_MESSAGE = Prepared(
    MESSAGES.insert().values(
        {c: bindparam(c) for c in ("run_id", "store_id", "seq", "role", "content", "turn")}
    )
)
_INSERT_THREAD = Prepared(
    THREADS.insert().values({c: bindparam(c) for c in ("run_id", "store_id", "seq", "title", "messages")})
)


def write(
    conn: Connection | Tx,
    outbox: FastOutbox,
    run_id: str,
    agent_id: str,
    store_id: str,
    op: Op,
    limits: StoreLimits = DEFAULT_LIMITS,
) -> WriteResult:
    key = {"run_id": run_id, "store_id": store_id}
    tx = Tx.of(conn)
    rows = [_Row(*r) for r in _LOAD[tx.dialect.name].all(tx, key)]
    if not rows:
        raise missing(tx, run_id, agent_id, store_id)
    writer = _writer(tx, rows, run_id, agent_id, store_id)
    head = rows[0].head()
    state: KindState = None
    if type(op) not in LOG_OPS:
        state = decode_state(head.kind, _STATE.scalar(tx, key))
    read_set_id = writer.read_set_id or ""
    read_set = read_sets.load(tx, read_set_id) if head.kind == Kind.SKILLS else ()

    applied = apply_write(head, op, state, agent_id, read_set, limits)
    _persist(tx, key, read_set_id, applied)

    new = applied.head
    figures = new.figures
    if head.kind == Kind.SKILLS:
        figures = skills.holder_figures(figures, read_set if applied.read_set is None else applied.read_set)
    written = write_event(run_id, agent_id, head.kind, store_id, OP_NAME[type(op)], figures, applied.delta)
    outbox.append_all(tx, [co_holders.fan_out(tx, rows, written, op, applied, read_set_id)])
    return WriteResult(
        store_id,
        figures,
        task_id=applied.task_id,
        issue_id=applied.issue_id,
        thread_id=applied.thread_id,
        last_seq=new.head_seq if head.kind == Kind.HISTORY else 0,
        turn=new.turn,
    )


def _writer(conn: Connection | Tx, rows: list[_Row], run_id: str, agent_id: str, store_id: str) -> _Row:
    writer = next((r for r in rows if r.agent_id == agent_id), None)
    if writer is None or not writer.active:
        error = missing(conn, run_id, agent_id, store_id)
        if error.reason in (Reason.RUN_NOT_FOUND, Reason.AGENT_NOT_FOUND):
            raise error
        successor = handovers.successor_of(conn, run_id, agent_id)
        if successor is not None:
            raise handed_on(agent_id, successor)
        raise not_a_holder(conn, run_id, agent_id, store_id, let_go=writer is not None)
    if not writer.may_write:
        raise PermissionDenied(
            f"agent {agent_id!r} holds {store_id!r} read-only; its profile does not let it write there",
            reason=Reason.READ_ONLY,
            metadata={"agent_id": agent_id, "store_id": store_id},
        )
    return writer


def _persist(conn: Connection | Tx, key: dict[str, str], read_set_id: str, applied: Applied) -> None:
    if applied.messages:
        _INSERT_MESSAGE.many(
            conn,
            [
                {**key, "seq": m.seq, "role": m.role, "content": m.content, "turn": m.turn}
                for m in applied.messages
            ],
        )
    if applied.thread is not None:
        t = applied.thread
        _INSERT_THREAD.execute(conn, {**key, "seq": t.id, "title": t.title, "messages": thread_json(t)})
    if applied.read_set is not None:
        read_sets.save(conn, read_set_id, applied.read_set)
    h = applied.head
    values: dict[str, Any] = {
        **key,
        "v_head_seq": h.head_seq,
        "v_turn": h.turn,
        "v_items": h.figures.items,
        "v_bytes": h.figures.bytes,
        "v_writes": h.figures.writes,
    }
    if applied.state is None:
        _UPDATE_HEAD.execute(conn, values)
    else:
        _UPDATE_HEAD_AND_STATE.execute(conn, {**values, "v_state": encode_state(applied.state)})
