"""Handover: one transaction hands a predecessor's modules to its successor (R19-R24, R27, R30-R31, R35).

Checked first: the predecessor exists, has not handed on, and holds what the plan says. Then per kind the
successor's store is carried (same store; caps re-pointed only for a sole holder, R22; the window's
system-prompt slot emptied, R24), re-pointed to a named store (R35), or minted/joined anew; every holder
row of the predecessor goes inactive. Then the events, in this order: a drain on the predecessor's stream
per store it lets go of (R30), the successor's roster (R32), one restate per module the successor holds
(R31).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection

from ggmodules.core.errors import AlreadyExists
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import skills
from ggmodules.core.modules.copying import resolve
from ggmodules.core.modules.handover import (
    HandoverKind,
    HandoverPlan,
    KindResult,
    already_handed_on,
    carried_origin,
    check_held,
    check_plan,
    check_strategy,
    resolved_caps,
    with_implicit_drops,
)
from ggmodules.core.modules.history import HistoryState, forked_figures
from ggmodules.core.modules.states import decode_state, encode_state
from ggmodules.core.modules.store import StoreHead
from ggmodules.core.roster import Caps, RosterRow
from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin, Outcome
from ggmodules.storage.modulestore import handovers, read_sets
from ggmodules.storage.modulestore.agent_reads import held
from ggmodules.storage.modulestore.binding import catalogue_of, hold, join_named, mint_store
from ggmodules.storage.modulestore.events import drain_event, restate_event, roster_event
from ggmodules.storage.modulestore.fast_log import FastOutbox
from ggmodules.storage.modulestore.lookup import AGENTS, HOLDERS, STORES, agent_exists, head_of, store_row
from ggmodules.storage.modulestore.restating import restated

# Built once: building a statement costs more than SQLite running it.
_OTHER_HOLDERS = (
    select(func.count())
    .select_from(HOLDERS)
    .where(
        HOLDERS.c.run_id == bindparam("run_id"),
        HOLDERS.c.store_id == bindparam("store_id"),
        HOLDERS.c.agent_id != bindparam("agent_id"),
        HOLDERS.c.active,
    )
)


@dataclass(frozen=True, slots=True)
class _Held:
    """A store the predecessor actively holds: its row, and the predecessor's read set on it."""

    row: Any
    read_set_id: str


@dataclass(frozen=True, slots=True)
class _Received:
    """What the successor holds for one kind."""

    outcome: Outcome
    store_id: str
    origin: Origin
    may_write: bool
    scope: MemoryScope
    read_set_id: str = ""


def handover(
    conn: Connection, outbox: FastOutbox, plan: HandoverPlan
) -> tuple[list[RosterRow], list[KindResult]]:
    check_plan(plan)
    run_id, pred, succ = plan.run_id, plan.predecessor_agent_id, plan.successor_agent_id
    mine = _held_by(conn, run_id, pred)  # refuses an unknown run or predecessor
    successor = handovers.successor_of(conn, run_id, pred)
    if successor is not None:
        raise already_handed_on(pred, successor)
    if agent_exists(conn, run_id, succ):
        raise AlreadyExists(
            f"agent {succ!r} is already bound in run {run_id!r}; a successor is a new agent (R36): mint a "
            "new agent id",
            metadata={"agent_id": succ},
        )
    check_held(plan, {kind: h.row.store_id for kind, h in mine.items()})
    entries = with_implicit_drops(plan, mine)
    for e in entries:
        if e.outcome == Outcome.CARRIED and e.receive is not None:
            check_strategy(e.kind, e.receive, MemoryStrategy(mine[e.kind].row.strategy))

    history = plan.entry(Kind.HISTORY)
    carry_read_set = history is not None and history.outcome == Outcome.CARRIED
    received: dict[Kind, _Received] = {}
    results: list[KindResult] = []
    for e in entries:
        before = mine.get(e.kind)
        got = _receive(conn, plan, e, before, carry_read_set)
        if got is not None:
            received[e.kind] = got
        before_id = before.row.store_id if before is not None else ""
        results.append(KindResult(e.kind, e.outcome, before_id, got.store_id if got else "", e.note))

    conn.execute(
        update(HOLDERS).where(HOLDERS.c.run_id == run_id, HOLDERS.c.agent_id == pred).values(active=False)
    )
    conn.execute(AGENTS.insert().values(run_id=run_id, agent_id=succ, profile=plan.profile, cause=plan.cause))
    handovers.record(conn, run_id, pred, succ, plan.cause)
    rows = [_roster_row(conn, run_id, kind, received.get(kind)) for kind in Kind]
    _append_events(conn, outbox, plan, mine, received, rows)
    return rows, results


def _held_by(conn: Connection, run_id: str, agent_id: str) -> dict[Kind, _Held]:
    """What the predecessor holds. PostgreSQL: its stores are locked first, as writes lock them, so a
    write racing the handover lands before it or is refused after it."""
    if conn.dialect.name == "postgresql":
        conn.execute(
            select(STORES.c.store_id)
            .join(HOLDERS, (HOLDERS.c.run_id == STORES.c.run_id) & (HOLDERS.c.store_id == STORES.c.store_id))
            .where(HOLDERS.c.run_id == run_id, HOLDERS.c.agent_id == agent_id, HOLDERS.c.active)
            .order_by(STORES.c.store_id)
            .with_for_update(of=STORES)
        ).all()
    return {Kind(row.kind): _Held(row, read_set_id) for row, read_set_id in held(conn, run_id, agent_id)}


def _receive(
    conn: Connection, plan: HandoverPlan, e: HandoverKind, before: _Held | None, carry_read_set: bool
) -> _Received | None:
    r = e.receive
    if e.outcome == Outcome.DROPPED or r is None:
        return None
    run_id, kind = plan.run_id, e.kind
    b = r.binding(kind)
    read_set_id = ""
    if kind == Kind.SKILLS:
        store_id, head, origin, read_set_id = _receive_skills(conn, plan, e, before, carry_read_set)
    elif e.outcome == Outcome.CARRIED and r.action is None:
        assert before is not None  # check_held saw to it
        store_id, origin = before.row.store_id, carried_origin(kind)
        head = _carry(conn, plan.predecessor_agent_id, before.row, r.caps)
    else:
        minted = r.action == BindAction.CREATE
        store_id, head = mint_store(conn, run_id, b) if minted else join_named(conn, run_id, b)
        origin = resolve(kind, b.action, r.origin).origin
    hold(conn, run_id, store_id, plan.successor_agent_id, b, origin, head, read_set_id)
    scope = r.scope if kind == Kind.MEMORIES else MemoryScope.UNSPECIFIED
    return _Received(e.outcome, store_id, origin, r.may_write, scope, read_set_id)


def _receive_skills(
    conn: Connection, plan: HandoverPlan, e: HandoverKind, before: _Held | None, carry_read_set: bool
) -> tuple[str, StoreHead, Origin, str]:
    """The catalogue is the successor's directory's (R16); the read set follows the window: carried with
    it, else empty."""
    r = e.receive
    assert r is not None
    run_id = plan.run_id
    if e.outcome != Outcome.CARRIED:
        store_id, head = catalogue_of(conn, run_id, r.binding(Kind.SKILLS))
        origin = resolve(Kind.SKILLS, r.action or BindAction.NAMED, r.origin).origin
        return store_id, head, origin, read_sets.create(conn)
    assert before is not None
    if r.skills_directory or r.named_key:
        store_id, head = catalogue_of(conn, run_id, r.binding(Kind.SKILLS))
    else:
        store_id, head = before.row.store_id, head_of(before.row)
    same = store_id == before.row.store_id
    if same:
        head = _carry(conn, plan.predecessor_agent_id, before.row, r.caps)
    origin = carried_origin(Kind.SKILLS) if same else (r.origin or Origin.PROFILE)
    if not carry_read_set:
        return store_id, head, origin, read_sets.create(conn)
    if same:
        return store_id, head, origin, before.read_set_id
    decoded = decode_state(Kind.SKILLS, store_row(conn, run_id, store_id).state)
    catalogue = decoded.catalogue if isinstance(decoded, skills.SkillsState) else {}
    names = tuple(n for n in read_sets.load(conn, before.read_set_id) if n in catalogue)
    return store_id, head, origin, read_sets.create(conn, names)


def _carry(conn: Connection, predecessor: str, row: Any, wanted: Caps) -> StoreHead:
    """The predecessor's store, as the successor finds it: caps re-pointed only if the predecessor held it
    alone (R22), contents over a tighter cap kept (R23), the window's system-prompt slot empty (R24)."""
    head = head_of(row)
    others = conn.execute(
        _OTHER_HOLDERS, {"run_id": row.run_id, "store_id": row.store_id, "agent_id": predecessor}
    ).scalar_one()
    caps = resolved_caps(head.caps, wanted, sole_holder=others == 0)
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
        conn.execute(
            update(STORES)
            .where(STORES.c.run_id == row.run_id, STORES.c.store_id == row.store_id)
            .values(**values)
        )
    return StoreHead(head.kind, caps, figures, head.head_seq, head.turn, head.strategy, head.directory)


def _roster_row(conn: Connection, run_id: str, kind: Kind, got: _Received | None) -> RosterRow:
    if got is None:
        return RosterRow(kind)
    strategy = MemoryStrategy.UNSPECIFIED
    if kind == Kind.MEMORIES:
        strategy = MemoryStrategy(store_row(conn, run_id, got.store_id).strategy)
    return RosterRow(kind, got.store_id, True, got.origin, got.scope, got.may_write, strategy)


def _append_events(
    conn: Connection,
    outbox: FastOutbox,
    plan: HandoverPlan,
    mine: dict[Kind, _Held],
    received: dict[Kind, _Received],
    rows: list[RosterRow],
) -> None:
    run_id, pred, succ = plan.run_id, plan.predecessor_agent_id, plan.successor_agent_id
    kept = {got.store_id for got in received.values()}
    events = []
    for kind, h in sorted(mine.items()):
        if h.row.store_id in kept:
            continue
        figures = head_of(h.row).figures
        if kind == Kind.SKILLS:
            figures = skills.holder_figures(figures, read_sets.load(conn, h.read_set_id))
        events.append(drain_event(run_id, pred, kind, h.row.store_id, figures, succ))
    events.append(
        roster_event(
            run_id,
            succ,
            plan.profile,
            "",
            plan.cause,
            rows,
            predecessor_agent_id=pred,
            opening_note=plan.opening_note,
        )
    )
    for kind, got in sorted(received.items()):
        row = store_row(conn, run_id, got.store_id)
        figures, contents = restated(conn, row, read_sets.load(conn, got.read_set_id))
        events.append(restate_event(run_id, succ, kind, got.store_id, got.outcome, figures, contents, pred))
    outbox.append_all(conn, events)
