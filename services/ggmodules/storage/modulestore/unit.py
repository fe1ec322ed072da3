"""ModuleStore's unit of work: the storage side of one transaction, as the use cases see it
(usecases/modulestore/port.py). It loads, persists and appends; it decides nothing. `apply_once` runs one
mutation in an open transaction: request id claimed, use case applied on the unit, answer recorded.

The write path's own statements are here, prepared (see storage/prepared.py): the store and all its holders
in one query, its state, and the persisting of an applied write. The other steps are the storage modules'
(binding, receiving, agent_reads, …), run on the transaction's connection.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar

from google.protobuf.message import Message
from sqlalchemy import and_, bindparam, select, text, update

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
from ggmodules.storage.idempotency import RequestKey, RequestLog, recalled
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
from ggmodules.storage.modulestore.lookup import STORES
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.prepared import Prepared, Tx

_S = STORES
M = TypeVar("M", bound=Message)


class StoreHolders(NamedTuple):
    """The store a write goes to, as the write loads it in one query: its head columns (not its state), how
    its run ended, the writer's holding, and every other active holder (their agent ids as one JSON array,
    built by the database: a store held by 256 agents costs no Python per holder)."""

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
    # How the store's run ended ("finished", "internal_error"), None while it runs: read with the store,
    # so a run ended through another replica (EndRun) takes no write here either (R50).
    run_ended: str | None
    # The writer's holding (all None: the writer does not hold the store).
    may_write: bool | None
    active: bool | None
    read_set_id: str | None
    # Every other active holder's agent id, in agent id order (JSON); skills: their read sets, in that order.
    others_json: Any
    others_read_sets_json: Any

    def head(self) -> StoreHead:
        return StoreHead(
            _KINDS[self.kind],
            Caps(self.max_items, self.max_bytes),
            Figures(self.items, self.bytes, self.writes),
            self.head_seq,
            self.turn,
            _STRATEGIES[self.strategy],
            self.skills_directory,
        )

    @property
    def holds(self) -> bool:
        return self.active is not None

    def others(self) -> list[str]:
        return _json_list(self.others_json)

    def others_read_sets(self) -> list[str]:
        return _json_list(self.others_read_sets_json)


# The stored numbers' members, looked up (calling an enum class by value costs a microsecond a write).
_KINDS: dict[int, Kind] = {int(k): k for k in Kind}
_STRATEGIES: dict[int, MemoryStrategy] = {int(m): m for m in MemoryStrategy}


def _json_list(value: Any) -> list[str]:
    """A JSON array as SQLite returns it (text) or psycopg does (parsed; None for no row)."""
    if value is None or value == "[]":  # a store no one else holds: the common case, without a parse
        return []
    return json.loads(value) if isinstance(value, str) else list(value)


# The store, its run's end, the writer's holding and the other active holders (agent id order). PostgreSQL
# locks the store row so writers of one store take turns; SQLite: BEGIN IMMEDIATE did.
_HELD = """
SELECT s.kind, s.max_items, s.max_bytes, s.strategy, s.skills_directory, s.head_seq, s.turn, s.items,
  s.bytes, s.writes, e.status, w.may_write, w.active, w.read_set_id, {ids},
  CASE WHEN s.kind = {skills} THEN {read_sets} END{asked}
FROM ms_stores s
LEFT JOIN ms_holders w ON w.run_id = s.run_id AND w.store_id = s.store_id AND w.agent_id = :agent_id
LEFT JOIN ms_ended_runs e ON e.run_id = s.run_id{asked_join}
WHERE s.run_id = :run_id AND s.store_id = :store_id
"""
# SQLite, a write with a request id: the request log's row for it read with the store (`apply_once`).
_ASKED = ", r.request_hash, r.response"
_ASKED_JOIN = "\nLEFT JOIN ms_requests r ON r.method = :method AND r.request_id = :request_id"
_OTHERS = (
    "FROM ms_holders o WHERE o.run_id = :run_id AND o.store_id = :store_id AND o.active "
    "AND o.agent_id <> :agent_id"
)
_SKILLS = int(Kind.SKILLS)
# SQLite aggregates the rows in the order its subquery gives them.
_SQLITE_HELD = {
    "ids": f"(SELECT json_group_array(h.agent_id) FROM (SELECT o.agent_id {_OTHERS} ORDER BY 1) h)",
    "read_sets": (
        "(SELECT json_group_array(h.read_set_id) FROM "
        f"(SELECT o.agent_id, o.read_set_id {_OTHERS} ORDER BY 1) h)"
    ),
    "skills": _SKILLS,
}
_LOAD = {
    "postgresql": Prepared(
        text(
            _HELD.format(
                ids=f"(SELECT json_agg(o.agent_id ORDER BY o.agent_id) {_OTHERS})",
                read_sets=f"(SELECT json_agg(o.read_set_id ORDER BY o.agent_id) {_OTHERS})",
                skills=_SKILLS,
                asked="",
                asked_join="",
            )
            + "FOR UPDATE OF s"
        )
    ),
    "sqlite": Prepared(text(_HELD.format(**_SQLITE_HELD, asked="", asked_join=""))),
}
_LOAD_ASKED = Prepared(text(_HELD.format(**_SQLITE_HELD, asked=_ASKED, asked_join=_ASKED_JOIN)))
_KEY = and_(_S.c.run_id == bindparam("run_id"), _S.c.store_id == bindparam("store_id"))
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
        self.preloaded: tuple[tuple[str, str, str], StoreHolders | None] | None = None

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

    def holders(self, run_id: str, store_id: str, agent_id: str) -> StoreHolders | None:
        if self.preloaded is not None and self.preloaded[0] == (run_id, store_id, agent_id):
            found, self.preloaded = self.preloaded[1], None
            return found
        tx = self.tx
        row = _LOAD[tx.dialect.name].one(tx, {"run_id": run_id, "store_id": store_id, "agent_id": agent_id})
        return None if row is None else StoreHolders(*row)

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


def holders_statement(tx: Tx, run_id: str, store_id: str, agent_id: str) -> tuple[str, Any]:
    """`ModuleStoreUnit.holders` as a statement to send with others (pg_write.py)."""
    return _LOAD[tx.dialect.name].bound(tx, {"run_id": run_id, "store_id": store_id, "agent_id": agent_id})


def apply_once(
    tx: Tx,
    outbox: Outbox,
    requests: RequestLog,
    key: RequestKey | None,
    apply: Callable[[ModuleStoreUnit], M],
    response_type: type[M],
    store: tuple[str, ...] = (),
) -> M:
    """One mutation inside the open transaction `tx`: its request id claimed first (R49; the first answer
    returned if it has one), the use case `apply` run on a unit of work, its answer recorded. On SQLite the
    transaction holds the write lock from its BEGIN IMMEDIATE: the claim is a lookup and the answer one
    insert (storage/idempotency.py), which writes the request-log row once instead of twice; and when the
    mutation names the store it writes (`store`: run id, store id, the writer) the lookup is read in the
    query that loads that store and its holders for the use case."""
    unit = ModuleStoreUnit(tx, outbox)
    if key is None:
        return apply(unit)
    locked = tx.dialect.name == "sqlite"
    if locked and len(store) == 3:
        first = _load_asked(unit, requests, key, store)
    elif locked:
        first = requests.recall(tx, key.method, key.request_id, key.request_hash)
    else:
        first = requests.claim(tx, key.method, key.request_id, key.request_hash)
    if first is not None:
        return response_type.FromString(first)
    response = apply(unit)
    answer = response.SerializeToString(deterministic=True)
    if locked:
        requests.record(tx, key.method, key.request_id, key.request_hash, answer)
    else:
        requests.answer(tx, key.method, key.request_id, answer)
    return response


def _load_asked(
    unit: ModuleStoreUnit, requests: RequestLog, key: RequestKey, store: tuple[str, ...]
) -> bytes | None:
    """SQLite: the store `store` names and its holders (kept for `holders`), and the request id's first
    answer if it has one, in one query; the request log alone when the store is not there."""
    run_id, store_id, agent_id = store[0], store[1], store[2]
    params = {
        "run_id": run_id,
        "store_id": store_id,
        "agent_id": agent_id,
        "method": key.method,
        "request_id": key.request_id,
    }
    row = _LOAD_ASKED.one(unit.tx, params)
    if row is None:
        unit.preloaded = ((run_id, store_id, agent_id), None)
        return requests.recall(unit.tx, key.method, key.request_id, key.request_hash)
    unit.preloaded = ((run_id, store_id, agent_id), StoreHolders(*row[:-2]))
    return recalled(row[-2], row[-1], key.method, key.request_id, key.request_hash)
