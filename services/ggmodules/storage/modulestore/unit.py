"""ModuleStore's unit of work: the storage side of one transaction, as the use cases see it
(usecases/modulestore/port.py). It loads, persists and appends; it decides nothing. `apply_once` runs one
mutation in an open transaction: request id claimed, use case applied on the unit, answer recorded.

The write path's own statements are here, prepared (see storage/prepared.py): the store and all its holders
in one query, its state, and the persisting of an applied write. The other steps are the storage modules'
(binding, receiving, agent_reads, …), run on the transaction's connection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from google.protobuf.message import Message
from sqlalchemy import and_, bindparam, select, update

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import DomainError, PermissionDenied
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.archive_search import ArchiveSearch, SearchPage
from ggmodules.core.modules.contents import Contents
from ggmodules.core.modules.copying import Resolved
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.handover import HandoverKind, HandoverPlan
from ggmodules.core.modules.states import KindState, decode_state, encode_state
from ggmodules.core.modules.store import Applied, StoreHead
from ggmodules.core.roster import Binding, BindPlan, Caps, RosterRow
from ggmodules.core.vocabulary import MemoryStrategy
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.idempotency import RequestKey, RequestLog
from ggmodules.storage.modulestore import (
    agent_reads,
    archive_index,
    binding,
    lookup,
    read_sets,
    reading,
    receiving,
    restating,
    successors,
)
from ggmodules.storage.modulestore.lineage import MESSAGES, THREADS, thread_json
from ggmodules.storage.modulestore.lookup import HOLDERS, STORES
from ggmodules.storage.modulestore.run_ends import ENDED
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.prepared import Prepared, Tx

_S, _H = STORES, HOLDERS
_E = ENDED
M = TypeVar("M", bound=Message)


class HolderRow(NamedTuple):
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
    # How the store's run ended ("finished", "internal_error"), None while it runs: read with the holders,
    # so a run ended through another replica (EndRun) takes no write here either (R50).
    run_ended: str | None

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
        *(_S.c[name] for name in HolderRow._fields[:10]),
        _H.c.agent_id,
        _H.c.may_write,
        _H.c.active,
        _H.c.read_set_id,
        _E.c.status,
    )
    .select_from(
        _S.outerjoin(_H, and_(_H.c.run_id == _S.c.run_id, _H.c.store_id == _S.c.store_id)).outerjoin(
            _E, _E.c.run_id == _S.c.run_id
        )
    )
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


class ModuleStoreUnit:
    """One open transaction (`tx`) and the outbox its events go to."""

    __slots__ = ("outbox", "preloaded", "tx")

    def __init__(self, tx: Tx, outbox: Outbox) -> None:
        self.tx = tx
        self.outbox = outbox
        # ((run id, store id), its holders) read ahead with the request id's claim (pg_write.py).
        self.preloaded: tuple[tuple[str, str], list[HolderRow]] | None = None

    # ---- refusals and lookups -----------------------------------------------------------------------

    def missing(self, run_id: str, agent_id: str, store_id: str = "") -> DomainError:
        return lookup.missing(self.tx, run_id, agent_id, store_id)

    def not_a_holder(
        self, run_id: str, agent_id: str, store_id: str, *, let_go: bool = False
    ) -> PermissionDenied:
        return lookup.not_a_holder(self.tx, run_id, agent_id, store_id, let_go=let_go)

    def successor_of(self, run_id: str, agent_id: str) -> str | None:
        return successors.successor_of(self.tx, run_id, agent_id)

    def agent_exists(self, run_id: str, agent_id: str) -> bool:
        return lookup.agent_exists(self.tx, run_id, agent_id)

    # ---- write --------------------------------------------------------------------------------------

    def holders(self, run_id: str, store_id: str) -> list[HolderRow]:
        if self.preloaded is not None and self.preloaded[0] == (run_id, store_id):
            rows, self.preloaded = self.preloaded[1], None
            return rows
        tx = self.tx
        return [
            HolderRow(*r) for r in _LOAD[tx.dialect.name].all(tx, {"run_id": run_id, "store_id": store_id})
        ]

    def state(self, run_id: str, store_id: str, kind: Kind) -> KindState:
        return decode_state(kind, _STATE.scalar(self.tx, {"run_id": run_id, "store_id": store_id}))

    def read_set(self, read_set_id: str) -> tuple[str, ...]:
        return read_sets.load(self.tx, read_set_id)

    def read_sets(self, read_set_ids: Iterable[str]) -> dict[str, tuple[str, ...]]:
        return read_sets.load_many(self.tx, read_set_ids)

    def persist(self, run_id: str, store_id: str, read_set_id: str, applied: Applied) -> None:
        tx, key = self.tx, {"run_id": run_id, "store_id": store_id}
        if applied.messages:
            _INSERT_MESSAGE.many(
                tx,
                [
                    {**key, "seq": m.seq, "role": m.role, "content": m.content, "turn": m.turn}
                    for m in applied.messages
                ],
            )
        if applied.thread is not None:
            t = applied.thread
            _INSERT_THREAD.execute(tx, {**key, "seq": t.id, "title": t.title, "messages": thread_json(t)})
        if applied.read_set is not None:
            read_sets.save(tx, read_set_id, applied.read_set)
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
            _UPDATE_HEAD.execute(tx, values)
        else:
            _UPDATE_HEAD_AND_STATE.execute(tx, {**values, "v_state": encode_state(applied.state)})

    def append(self, events: Sequence[event_pb2.Event | FanOutEntry]) -> None:
        self.outbox.append_all(self.tx, events)

    # ---- tool call ----------------------------------------------------------------------------------

    def held(self, run_id: str, agent_id: str, kind: Kind | None = None) -> list[tuple[Any, str]]:
        return agent_reads.held(self.tx.conn, run_id, agent_id, kind)

    def search(self, run_id: str, store_id: str, head_seq: int, search: ArchiveSearch) -> SearchPage:
        return archive_index.search(self.tx.conn, run_id, store_id, head_seq, search)

    def contents(self, run_id: str, store_id: str, read_set_id: str) -> Contents:
        return self.contents_of(lookup.store_row(self.tx.conn, run_id, store_id), read_set_id)

    def contents_of(self, row: Any, read_set_id: str) -> Contents:
        conn = self.tx.conn
        return reading.contents_of(conn, row, read_sets.load(self.tx, read_set_id))

    # ---- bind and handover --------------------------------------------------------------------------

    def bind_store(self, plan: BindPlan, b: Binding, resolved: Resolved) -> binding.Bound:
        return binding.bind_store(self.tx.conn, plan, b, resolved)

    def add_agent(
        self, run_id: str, agent_id: str, profile: str, cause: str, parent_agent_id: str = ""
    ) -> None:
        binding.add_agent(self.tx, run_id, agent_id, profile, cause, parent_agent_id)

    def held_for_handover(self, run_id: str, agent_id: str) -> dict[Kind, receiving.Held]:
        return receiving.held_for_handover(self.tx, run_id, agent_id)

    def receive(
        self, plan: HandoverPlan, entry: HandoverKind, before: Any, carry_read_set: bool
    ) -> receiving.Received | None:
        return receiving.receive(self.tx, plan, entry, before, carry_read_set)

    def let_go(self, run_id: str, agent_id: str) -> None:
        receiving.let_go(self.tx, run_id, agent_id)

    def record_handover(self, run_id: str, agent_id: str, successor: str, cause: str) -> None:
        successors.record(self.tx, run_id, agent_id, successor, cause)

    def roster_row(self, run_id: str, kind: Kind, received: Any) -> RosterRow:
        return receiving.roster_row(self.tx, run_id, kind, received)

    def restated(self, run_id: str, received: Any) -> tuple[Figures, Contents | None]:
        row = receiving.row_of(self.tx, run_id, received)
        return restating.restated(self.tx.conn, row, read_sets.load(self.tx, received.read_set_id))


def holders_statement(tx: Tx, run_id: str, store_id: str) -> tuple[str, Any]:
    """`ModuleStoreUnit.holders` as a statement to send with others (pg_write.py)."""
    return _LOAD[tx.dialect.name].bound(tx, {"run_id": run_id, "store_id": store_id})


def apply_once(
    tx: Tx,
    outbox: Outbox,
    requests: RequestLog,
    key: RequestKey | None,
    apply: Callable[[ModuleStoreUnit], M],
    response_type: type[M],
) -> M:
    """One mutation inside the open transaction `tx`: its request id claimed first (R49; the first answer
    returned if it has one), the use case `apply` run on a unit of work, its answer recorded."""
    if key is not None:
        first = requests.claim(tx, key.method, key.request_id, key.request_hash)
        if first is not None:
            return response_type.FromString(first)
    response = apply(ModuleStoreUnit(tx, outbox))
    if key is not None:
        requests.answer(tx, key.method, key.request_id, response.SerializeToString(deterministic=True))
    return response
