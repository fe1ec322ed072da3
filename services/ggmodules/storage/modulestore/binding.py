"""Binding stores to a new holder: minting, joining a named store or a directory's catalogue, sharing or
forking a source (storage steps of BindInstance and Handover; usecases/modulestore/bind.py decides).

A new holder's watermark starts at the store's head: a sharer gets no backlog (R13).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.engine import Connection

from ggmodules.core.errors import FailedPrecondition, NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.copying import Resolved, catalogue_key, forked
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.states import decode_state, empty_state, encode_state
from ggmodules.core.modules.store import StoreHead
from ggmodules.core.roster import Binding, BindPlan
from ggmodules.core.vocabulary import BindAction, MemoryStrategy, Origin
from ggmodules.storage.modulestore import read_sets
from ggmodules.storage.modulestore.lookup import AGENTS, HOLDERS, STORES, head_of, store_record, store_row
from ggmodules.storage.modulestore.minting import mint_id, name_store, named_store
from ggmodules.storage.prepared import Prepared, Tx

LOG_KINDS = frozenset({Kind.HISTORY, Kind.ARCHIVE})
# A new holder row and a new agent, prepared (storage.prepared).
_HOLD = Prepared(HOLDERS.insert().values({
    c: bindparam(c)
    for c in (
        "run_id", "store_id", "agent_id", "kind", "origin", "may_write", "active", "watermark", "read_set_id",
    )
}))
_ADD_AGENT = Prepared(AGENTS.insert().values({
    c: bindparam(c) for c in ("run_id", "agent_id", "profile", "parent_agent_id", "cause")
}))


@dataclass(frozen=True, slots=True)
class Bound:
    store_id: str
    origin: Origin
    source_store_id: str
    head: StoreHead
    read_set_id: str = ""


def bind_store(conn: Connection, plan: BindPlan, b: Binding, resolved: Resolved) -> Bound:
    """Mints, joins or shares the store `b` asks for, as resolved by the copy rules, and makes the plan's
    agent a holder."""
    run_id = plan.run_id
    if b.kind == Kind.SKILLS:
        return _bind_skills(conn, plan, b, resolved)
    match resolved.action:
        case BindAction.CREATE:
            store_id, head = mint_store(conn, run_id, b)
        case BindAction.NAMED:
            store_id, head = join_named(conn, run_id, b)
        case BindAction.SHARE:
            source = _source(conn, run_id, b)
            store_id, head = source.store_id, head_of(source)
        case BindAction.FORK:
            source = _source(conn, run_id, b)
            store_id, head = mint_store(conn, run_id, b, fork_of=source, agent_id=plan.agent_id)
            hold(conn, run_id, store_id, plan.agent_id, b, resolved.origin, head)
            return Bound(store_id, resolved.origin, source.store_id, head)
    hold(conn, run_id, store_id, plan.agent_id, b, resolved.origin, head)
    return Bound(store_id, resolved.origin, "", head)


def _bind_skills(conn: Connection, plan: BindPlan, b: Binding, resolved: Resolved) -> Bound:
    """The catalogue is the directory's one store whatever the action; the read set follows the window:
    a fork copies it, a share aliases it, a new window starts empty (R16)."""
    run_id = plan.run_id
    if resolved.action in (BindAction.SHARE, BindAction.FORK):
        source = _source(conn, run_id, b)
        store_id, head = source.store_id, head_of(source)
        holder = conn.execute(
            select(HOLDERS.c.read_set_id).where(
                HOLDERS.c.run_id == run_id,
                HOLDERS.c.store_id == store_id,
                HOLDERS.c.agent_id == b.read_set_source_agent_id,
            )
        ).first()
        if holder is None:
            raise NotFound(
                f"agent {b.read_set_source_agent_id!r} holds no read set on {store_id!r} to "
                f"{'fork' if resolved.action == BindAction.FORK else 'share'}",
                reason=Reason.AGENT_NOT_FOUND,
                metadata={"agent_id": b.read_set_source_agent_id},
            )
        read_set_id = holder.read_set_id
        if resolved.action == BindAction.FORK:
            read_set_id = read_sets.create(conn, read_sets.load(conn, read_set_id))
    else:
        store_id, head = catalogue_of(conn, run_id, b)
        read_set_id = read_sets.create(conn)
    hold(conn, run_id, store_id, plan.agent_id, b, resolved.origin, head, read_set_id)
    source_id = store_id if resolved.action == BindAction.FORK else ""
    return Bound(store_id, resolved.origin, source_id, head, read_set_id)


def join_named(conn: Connection, run_id: str, b: Binding) -> tuple[str, StoreHead]:
    """The run's store registered under `b.named_key`, minted (with `b`'s caps) on first use."""
    found = named_store(conn, run_id, b.named_key)
    if found is not None:
        return found, head_of(store_row(conn, run_id, found))
    store_id, head = mint_store(conn, run_id, b)
    name_store(conn, run_id, b.named_key, store_id)
    return store_id, head


def catalogue_of(conn: Connection | Tx, run_id: str, b: Binding) -> tuple[str, StoreHead]:
    """The skills catalogue of `b`'s directory: one store per directory key per run (R16)."""
    directory = b.skills_directory or b.named_key.removeprefix("skills/")
    key = catalogue_key(directory)
    found = named_store(conn, run_id, key)
    if found is not None:
        return found, head_of(store_record(conn, run_id, found))
    core = conn.conn if isinstance(conn, Tx) else conn
    store_id, head = mint_store(core, run_id, b, directory=directory)
    name_store(core, run_id, key, store_id)
    return store_id, head


def _source(conn: Connection, run_id: str, b: Binding) -> Any:
    row = store_row(conn, run_id, b.source_store_id)
    if row.kind != b.kind:
        raise FailedPrecondition(
            f"source store {b.source_store_id!r} is a {Kind(row.kind).word} store, not {b.kind.word}",
            reason=Reason.WRONG_KIND,
            metadata={"store_id": b.source_store_id},
        )
    return row


def mint_store(
    conn: Connection, run_id: str, b: Binding, *, directory: str = "", fork_of: Any = None, agent_id: str = ""
) -> tuple[str, StoreHead]:
    store_id, n = mint_id(conn, run_id, b.kind)
    memories = b.kind == Kind.MEMORIES
    strategy = (b.strategy or MemoryStrategy.SCRATCHPAD) if memories else MemoryStrategy.UNSPECIFIED
    values: dict[str, Any] = {}
    if fork_of is None:
        state, figures = empty_state(b.kind, strategy), Figures()
    else:
        source = head_of(fork_of)
        state, figures = forked(decode_state(b.kind, fork_of.state), source.figures, agent_id)
        strategy, directory = source.strategy, source.directory
        values = {"forked_from": fork_of.store_id, "head_seq": source.head_seq, "turn": source.turn}
        if b.kind in LOG_KINDS:
            # Copy-on-write: point at the source's log; skip a source that added nothing of its own.
            own = fork_of.head_seq > fork_of.parent_limit
            values["parent_store_id"] = fork_of.store_id if own else fork_of.parent_store_id
            values["parent_limit"] = fork_of.head_seq if own else fork_of.parent_limit
    conn.execute(
        STORES.insert().values(
            run_id=run_id,
            store_id=store_id,
            kind=int(b.kind),
            n=n,
            max_items=b.caps.max_items,
            max_bytes=b.caps.max_bytes,
            strategy=int(strategy),
            skills_directory=directory,
            items=figures.items,
            bytes=figures.bytes,
            writes=figures.writes,
            state=encode_state(state),
            **values,
        )
    )
    head = StoreHead(
        b.kind,
        b.caps,
        figures,
        int(values.get("head_seq", 0)),
        int(values.get("turn", 0)),
        strategy,
        directory,
    )
    return store_id, head


def hold(
    conn: Connection | Tx,
    run_id: str,
    store_id: str,
    agent_id: str,
    b: Binding,
    origin: Origin,
    head: StoreHead,
    read_set_id: str = "",
) -> None:
    """The new holder's watermark starts at the store's head (R13)."""
    _HOLD.execute(
        conn,
        {
            "run_id": run_id, "store_id": store_id, "agent_id": agent_id, "kind": int(b.kind),
            "origin": int(origin), "may_write": b.may_write, "active": True, "watermark": head.figures.writes,
            "read_set_id": read_set_id,
        },
    )


def add_agent(
    conn: Connection | Tx, run_id: str, agent_id: str, profile: str, cause: str, parent_agent_id: str
) -> None:
    _ADD_AGENT.execute(conn, {
        "run_id": run_id, "agent_id": agent_id, "profile": profile, "parent_agent_id": parent_agent_id,
        "cause": str(cause),
    })
