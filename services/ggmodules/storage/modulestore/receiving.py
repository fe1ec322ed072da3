"""Handover's storage steps (usecases/modulestore/handover.py decides): what the predecessor holds, locked
as writes lock it, and per kind the successor's store: carried (same store; caps re-pointed only for a
sole holder, R22; the window's system-prompt slot emptied, R24), re-pointed to a named store (R35), or
minted/joined anew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, update

from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.copying import resolve
from ggmodules.core.modules.handover import HandoverKind, HandoverPlan, carried_origin, resolved_caps
from ggmodules.core.modules.history import HistoryState, forked_figures
from ggmodules.core.modules.states import decode_state, encode_state
from ggmodules.core.modules.store import StoreHead
from ggmodules.core.roster import Caps, RosterRow
from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin, Outcome
from ggmodules.storage.modulestore import read_sets
from ggmodules.storage.modulestore.binding import catalogue_of, hold, join_named, mint_store
from ggmodules.storage.modulestore.lookup import HOLDERS, STORES, head_of, require_agent, store_record
from ggmodules.storage.named import NamedPrepared
from ggmodules.storage.prepared import Prepared, Tx

# Prepared (storage.prepared): building and running a Core statement costs more than SQLite running it.
_OTHERS = HOLDERS.alias("others")
# How many other agents actively hold each of the predecessor's stores (R22: caps follow a sole holder).
_OTHER_HOLDERS = (
    select(func.count())
    .select_from(_OTHERS)
    .where(
        _OTHERS.c.run_id == STORES.c.run_id,
        _OTHERS.c.store_id == STORES.c.store_id,
        _OTHERS.c.agent_id != bindparam("agent_id"),
        _OTHERS.c.active,
    )
    .scalar_subquery()
    .label("other_holders")
)
_JOIN = (HOLDERS.c.run_id == STORES.c.run_id) & (HOLDERS.c.store_id == STORES.c.store_id)
_ACTIVE_OF = (HOLDERS.c.run_id == bindparam("run_id")) & (HOLDERS.c.agent_id == bindparam("agent_id")) & (
    HOLDERS.c.active
)
_HELD_SELECT = select(STORES, HOLDERS.c.read_set_id, _OTHER_HOLDERS).join(HOLDERS, _JOIN).where(_ACTIVE_OF)
# The predecessor's stores; PostgreSQL: locked first, in store order, as writes lock them.
_HELD = NamedPrepared(_HELD_SELECT.order_by(STORES.c.kind))
_HELD_LOCKED = Prepared(
    select(STORES.c.store_id)
    .join(HOLDERS, _JOIN)
    .where(_ACTIVE_OF)
    .order_by(STORES.c.store_id)
    .with_for_update(of=STORES)
)
_LET_GO = Prepared(
    update(HOLDERS)
    .where(HOLDERS.c.run_id == bindparam("k_run_id"), HOLDERS.c.agent_id == bindparam("k_agent_id"))
    .values(active=False)
)


@dataclass(frozen=True, slots=True)
class Held:
    """A store the predecessor actively holds: its row, and the predecessor's read set on it."""

    row: Any
    read_set_id: str
    # The row's head, read once (the handover's checks and events read it several times).
    head: StoreHead

    @property
    def store_id(self) -> str:
        return str(self.row.store_id)


@dataclass(frozen=True, slots=True)
class Received:
    """What the successor holds for one kind."""

    outcome: Outcome
    store_id: str
    origin: Origin
    may_write: bool
    scope: MemoryScope
    read_set_id: str = ""
    # The store's row as this transaction last read it, if nothing changed it since (a carried store whose
    # caps and state stay as they were): the events read it rather than reading it again.
    row: Any = None


def let_go(tx: Tx, run_id: str, agent_id: str) -> None:
    """Every holder row of the predecessor goes inactive."""
    _LET_GO.execute(tx, {"k_run_id": run_id, "k_agent_id": agent_id})


def held_for_handover(tx: Tx, run_id: str, agent_id: str) -> dict[Kind, Held]:
    """What the predecessor holds. PostgreSQL: its stores are locked first, as writes lock them, so a
    write racing the handover lands before it or is refused after it."""
    require_agent(tx, run_id, agent_id)
    params = {"run_id": run_id, "agent_id": agent_id}
    if tx.dialect.name == "postgresql":
        _HELD_LOCKED.all(tx, params)
    return {Kind(row.kind): Held(row, row.read_set_id, head_of(row)) for row in _HELD.rows(tx, params)}


def receive(
    tx: Tx, plan: HandoverPlan, e: HandoverKind, before: Held | None, carry_read_set: bool
) -> Received | None:
    r = e.receive
    if e.outcome == Outcome.DROPPED or r is None:
        return None
    run_id, kind = plan.run_id, e.kind
    b = r.binding(kind)
    read_set_id = ""
    conn = tx.conn
    row = None
    if kind == Kind.SKILLS:
        store_id, head, origin, read_set_id = _receive_skills(tx, plan, e, before, carry_read_set)
    elif e.outcome == Outcome.CARRIED and r.action is None:
        assert before is not None  # check_held saw to it
        store_id, origin = before.row.store_id, carried_origin(kind)
        head, changed = _carry(tx, before.row, r.caps)
        row = None if changed else before.row
    else:
        minted = r.action == BindAction.CREATE
        store_id, head = mint_store(conn, run_id, b) if minted else join_named(conn, run_id, b)
        origin = resolve(kind, b.action, r.origin).origin
    hold(tx, run_id, store_id, plan.successor_agent_id, b, origin, head, read_set_id)
    scope = r.scope if kind == Kind.MEMORIES else MemoryScope.UNSPECIFIED
    return Received(e.outcome, store_id, origin, r.may_write, scope, read_set_id, row)


def row_of(tx: Tx, run_id: str, got: Any) -> Any:
    """The received store's row as it is now."""
    return got.row if got.row is not None else store_record(tx, run_id, got.store_id)


def _receive_skills(
    tx: Tx, plan: HandoverPlan, e: HandoverKind, before: Held | None, carry_read_set: bool
) -> tuple[str, StoreHead, Origin, str]:
    """The catalogue is the successor's directory's (R16); the read set follows the window: carried with
    it, else empty."""
    r = e.receive
    assert r is not None
    run_id = plan.run_id
    if e.outcome != Outcome.CARRIED:
        store_id, head = catalogue_of(tx, run_id, r.binding(Kind.SKILLS))
        origin = resolve(Kind.SKILLS, r.action or BindAction.NAMED, r.origin).origin
        return store_id, head, origin, read_sets.create(tx)
    assert before is not None
    if r.skills_directory or r.named_key:
        store_id, head = catalogue_of(tx, run_id, r.binding(Kind.SKILLS))
    else:
        store_id, head = before.row.store_id, head_of(before.row)
    same = store_id == before.row.store_id
    if same:
        head, _ = _carry(tx, before.row, r.caps)
    origin = carried_origin(Kind.SKILLS) if same else (r.origin or Origin.PROFILE)
    if not carry_read_set:
        return store_id, head, origin, read_sets.create(tx)
    if same:
        return store_id, head, origin, before.read_set_id
    decoded = decode_state(Kind.SKILLS, store_record(tx, run_id, store_id).state)
    catalogue = decoded.catalogue if isinstance(decoded, skills.SkillsState) else {}
    names = tuple(n for n in read_sets.load(tx, before.read_set_id) if n in catalogue)
    return store_id, head, origin, read_sets.create(tx, names)


def _carry(tx: Tx, row: Any, wanted: Caps) -> tuple[StoreHead, bool]:
    """The predecessor's store, as the successor finds it: caps re-pointed only if the predecessor held it
    alone (R22), contents over a tighter cap kept (R23), the window's system-prompt slot empty (R24); and
    whether that changed its row."""
    head = head_of(row)
    caps = resolved_caps(head.caps, wanted, sole_holder=row.other_holders == 0)
    values: dict[str, Any] = {}
    if caps != head.caps:
        values.update(max_items=caps.max_items, max_bytes=caps.max_bytes)
    figures = head.figures
    if head.kind == Kind.HISTORY:
        state = decode_state(Kind.HISTORY, row.state)
        if isinstance(state, HistoryState) and (state.system_prompt_set or state.system_prompt):
            figures = forked_figures(figures, state)
            values.update(state=encode_state(state.forked()), bytes=figures.bytes)
    if values:
        tx.conn.execute(
            update(STORES)
            .where(STORES.c.run_id == row.run_id, STORES.c.store_id == row.store_id)
            .values(**values)
        )
    head = StoreHead(head.kind, caps, figures, head.head_seq, head.turn, head.strategy, head.directory)
    return head, bool(values)


def roster_row(tx: Tx, run_id: str, kind: Kind, got: Received | None) -> RosterRow:
    if got is None:
        return RosterRow(kind)
    strategy = MemoryStrategy.UNSPECIFIED
    if kind == Kind.MEMORIES:
        strategy = MemoryStrategy(row_of(tx, run_id, got).strategy)
    return RosterRow(kind, got.store_id, True, got.origin, got.scope, got.may_write, strategy)
