"""The Registry repository: one unit of work per transaction, over SQLAlchemy Core.

Every mutation and the answer recorded for its request id (R49) commit together. A mutation claims its
request id first (storage.idempotency): a concurrent call with the same id waits for the first one and
answers as it did. A unit that loses to a concurrent one is run again (storage.contention).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import AlreadyExists, NotFound, Reason
from ggmodules.core.registry.records import InstanceRecord, RunRecord
from ggmodules.core.registry.runs import RunSpec
from ggmodules.core.roster import RosterRow
from ggmodules.core.vocabulary import Cause, RunStatus
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.contention import DEFAULT, Retries
from ggmodules.storage.idempotency import RequestKey, RequestLog
from ggmodules.storage.migrations import migrate
from ggmodules.storage.named import NamedPrepared
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.pinned import Transact
from ggmodules.storage.prepared import Prepared, Tx
from ggmodules.storage.registry.codec import decode_roster, decode_spec, encode_roster, encode_spec
from ggmodules.storage.registry.tables import (
    RegAgentCounterRow,
    RegInstanceRow,
    RegOutboxRow,
    RegRequestRow,
    RegRunRow,
    RegStreamHeadRow,
)

T = TypeVar("T")
ORIGIN = "registry"

_runs = RegRunRow.__table__  # type: ignore[attr-defined]
_instances = RegInstanceRow.__table__  # type: ignore[attr-defined]
_counters = RegAgentCounterRow.__table__  # type: ignore[attr-defined]

# The statements of a transfer's steps, prepared (storage.prepared): building and running a Core statement
# costs more than SQLite running it.
_RUN_SELECT = select(_runs).where(_runs.c.run_id == bindparam("run_id"))
_RUN = NamedPrepared(_RUN_SELECT)
_RUN_SHARED = NamedPrepared(_RUN_SELECT.with_for_update(read=True))
_RUN_LOCKED = NamedPrepared(_RUN_SELECT.with_for_update())
_INSTANCE_SELECT = select(_instances).where(
    _instances.c.run_id == bindparam("run_id"), _instances.c.agent_id == bindparam("agent_id")
)
_INSTANCE = NamedPrepared(_INSTANCE_SELECT)
_INSTANCE_LOCKED = NamedPrepared(_INSTANCE_SELECT.with_for_update())
_SUCCESSOR = NamedPrepared(select(_instances).where(
    _instances.c.run_id == bindparam("run_id"), _instances.c.reserved_for == bindparam("reserved_for")
))
_NEXT_NUMBER = {
    name: Prepared(
        dialect.insert(_counters)
        .values(run_id=bindparam("run_id"), profile=bindparam("profile"), next_n=1)
        .on_conflict_do_update(index_elements=["run_id", "profile"], set_={"next_n": _counters.c.next_n + 1})
        .returning(_counters.c.next_n)
    )
    for name, dialect in (("sqlite", sqlite), ("postgresql", postgresql))
}
_RESERVE = Prepared(_instances.insert().values({
    name: bindparam(name) for name in (
        "run_id", "agent_id", "profile", "parent_agent_id", "cause", "fsm_state", "roster", "pending",
        "created_us", "reserved_for", "request_method", "request_id", "request_hash",
    )
}).values(released=False, opening_note="", successor_agent_id=""))
_COMPLETE_SUCCESSOR = Prepared(
    update(_instances)
    .where(_instances.c.run_id == bindparam("k_run_id"), _instances.c.agent_id == bindparam("k_agent_id"))
    .values(roster=bindparam("roster"), opening_note=bindparam("opening_note"), pending=False)
)
_NAME_SUCCESSOR = Prepared(
    update(_instances)
    .where(_instances.c.run_id == bindparam("k_run_id"), _instances.c.agent_id == bindparam("k_agent_id"))
    .values(successor_agent_id=bindparam("successor_agent_id"))
)


def now_us() -> int:
    return time.time_ns() // 1000


class RegistryRepository:
    def __init__(self, engine: Engine, retries: Retries = DEFAULT) -> None:
        self.engine = engine
        self.retries = retries
        self.requests = RequestLog(RegRequestRow)
        self.outbox = Outbox(ORIGIN, RegOutboxRow, RegStreamHeadRow)
        self.committed = CommitSignal()  # notified after every unit of work: wakes WatchOutbox streams
        # SQLite: the event loop's transactions (inline) on a connection of their own (storage.pinned).
        self._transact = Transact(engine, retries)

    def create_tables(self) -> None:
        migrate(self.engine, "registry")

    def transact(self, work: Callable[[RegistryUnit], T]) -> T:
        """Runs `work` in one transaction, again when it loses to a concurrent one."""
        result = self._transact(lambda tx: work(RegistryUnit(tx, self)))
        self.committed.notify()
        return result

    def close(self) -> None:
        self._transact.close()


class RegistryUnit:
    """The operations of one transaction."""

    def __init__(self, tx: Tx, repo: RegistryRepository) -> None:
        self.tx = tx
        self.conn: Connection = tx.conn
        self._repo = repo

    # -- request ids (R49)

    def claim(self, key: RequestKey | None) -> bytes | None:
        """The first answer to this request id, or None once this unit holds it (then `answer` it)."""
        if key is None:
            return None
        return self._repo.requests.claim(self.conn, key.method, key.request_id, key.request_hash)

    def recall(self, key: RequestKey | None) -> bytes | None:
        """The first answer to this request id, or None, without claiming it."""
        if key is None:
            return None
        return self._repo.requests.recall(self.conn, key.method, key.request_id, key.request_hash)

    def answer(self, key: RequestKey | None, response: bytes) -> None:
        if key is not None:
            self._repo.requests.answer(self.conn, key.method, key.request_id, response)

    # -- runs

    def add_run(self, run: RunRecord) -> None:
        self.conn.execute(
            _runs.insert().values(
                run_id=run.run_id, name=run.spec.name, board_enabled=run.spec.board_enabled,
                spec=encode_spec(run.spec.profiles, run.spec.fsm), status=int(run.status),
                status_detail=run.status_detail, created_us=run.created_us,
            )
        )
        self.emit_run_event(run.run_id, "created")

    def run(self, run_id: str, *, lock: bool = False, share: bool = False) -> RunRecord:
        stmt = _RUN_LOCKED if lock else _RUN_SHARED if share else _RUN
        row = stmt.first(self.tx, {"run_id": run_id})
        if row is None:
            raise NotFound(
                f"run {run_id!r} does not exist; create it with CreateRun or list runs with ListRuns",
                reason=Reason.RUN_NOT_FOUND,
                metadata={"run_id": run_id},
            )
        return _run_record(row)

    def list_runs(self, after_seq: int, limit: int) -> list[RunRecord]:
        rows = self.conn.execute(
            select(_runs).where(_runs.c.seq > after_seq).order_by(_runs.c.seq).limit(limit)
        ).all()
        return [_run_record(r) for r in rows]

    def set_run_status(self, run_id: str, status: RunStatus, detail: str = "") -> None:
        self.conn.execute(
            update(_runs).where(_runs.c.run_id == run_id).values(status=int(status), status_detail=detail)
        )
        self.emit_run_event(run_id, status.word, detail)

    def emit_run_event(self, run_id: str, status: str, detail: str = "") -> None:
        event = event_pb2.Event(run_id=run_id, run=event_pb2.RunEvent(status=status, detail=detail))
        self._repo.outbox.append(self.conn, event)

    # -- instances

    def next_agent_number(self, run_id: str, profile: str) -> int:
        stmt = _NEXT_NUMBER[self.tx.dialect.name]
        return int(stmt.scalar(self.tx, {"run_id": run_id, "profile": profile})) - 1

    def add_pending(self, inst: InstanceRecord, key: RequestKey | None) -> None:
        self.conn.execute(
            _instances.insert().values(
                run_id=inst.run_id, agent_id=inst.agent_id, profile=inst.profile,
                parent_agent_id=inst.parent_agent_id, cause=inst.cause, fsm_state=inst.fsm_state,
                roster="[]", pending=True, bind_request=inst.bind_request, created_us=inst.created_us,
                request_method=key.method if key else None,
                request_id=key.request_id if key else None,
                request_hash=key.request_hash if key else None,
            )
        )

    def pending_for(self, key: RequestKey | None) -> InstanceRecord | None:
        """The instance this request id already minted and has not finished opening, if any."""
        if key is None:
            return None
        row = self.conn.execute(
            select(_instances).where(
                _instances.c.request_method == key.method, _instances.c.request_id == key.request_id
            )
        ).first()
        if row is None or not row.pending:
            return None
        if row.request_hash != key.request_hash:
            raise AlreadyExists(
                f"request_id {key.request_id!r} was already used for a different {key.method} request; "
                "use a new request id for a new request",
                reason=Reason.REQUEST_ID_REUSED,
                metadata={"request_id": key.request_id, "method": key.method},
            )
        return _instance_record(row)

    def instance(self, run_id: str, agent_id: str, *, pending_ok: bool = False) -> InstanceRecord:
        row = _INSTANCE.first(self.tx, {"run_id": run_id, "agent_id": agent_id})
        if row is None or (row.pending and not pending_ok):
            raise NotFound(
                f"agent {agent_id!r} is not an instance of run {run_id}; list them with ListInstances",
                reason=Reason.AGENT_NOT_FOUND,
                metadata={"run_id": run_id, "agent_id": agent_id},
            )
        return _instance_record(row)

    def complete(self, run_id: str, agent_id: str, roster: Sequence[RosterRow]) -> InstanceRecord:
        """Records the roster ModuleStore bound and makes the instance visible. The roster never changes."""
        self.conn.execute(
            update(_instances)
            .where(_instances.c.run_id == run_id, _instances.c.agent_id == agent_id, _instances.c.pending)
            .values(roster=encode_roster(roster), pending=False, bind_request=None)
        )
        return self.instance(run_id, agent_id)

    def drop_pending(self, run_id: str, agent_id: str) -> None:
        self.conn.execute(
            delete(_instances).where(
                _instances.c.run_id == run_id, _instances.c.agent_id == agent_id, _instances.c.pending
            )
        )

    # -- transfer successors

    def find_instance(self, run_id: str, agent_id: str, *, lock: bool = False) -> InstanceRecord | None:
        """Any row of that agent id, pending and released ones included."""
        stmt = _INSTANCE_LOCKED if lock else _INSTANCE
        row = stmt.first(self.tx, {"run_id": run_id, "agent_id": agent_id})
        return None if row is None else _instance_record(row)

    def successor_of(self, run_id: str, predecessor_agent_id: str) -> InstanceRecord | None:
        """The successor reserved or completed for a predecessor, if any (released ones are not)."""
        row = _SUCCESSOR.first(self.tx, {"run_id": run_id, "reserved_for": predecessor_agent_id})
        return None if row is None else _instance_record(row)

    def add_reservation(self, inst: InstanceRecord, key: RequestKey | None) -> None:
        """A pending, invisible successor; the unique (run, reserved_for) refuses a second one."""
        _RESERVE.execute(self.tx, {
            "run_id": inst.run_id, "agent_id": inst.agent_id, "profile": inst.profile,
            "parent_agent_id": inst.parent_agent_id, "cause": str(inst.cause), "fsm_state": inst.fsm_state,
            "roster": "[]", "pending": True, "created_us": inst.created_us, "reserved_for": inst.reserved_for,
            "request_method": key.method if key else None,
            "request_id": key.request_id if key else None,
            "request_hash": key.request_hash if key else None,
        })

    def complete_successor(
        self, successor: InstanceRecord, roster: Sequence[RosterRow], opening_note: str
    ) -> InstanceRecord:
        """Makes the successor visible and names it on its predecessor, whose roster never changes (R36)."""
        encoded = encode_roster(roster)
        _COMPLETE_SUCCESSOR.execute(self.tx, {
            "k_run_id": successor.run_id, "k_agent_id": successor.agent_id, "roster": encoded,
            "opening_note": opening_note,
        })
        _NAME_SUCCESSOR.execute(self.tx, {
            "k_run_id": successor.run_id, "k_agent_id": successor.reserved_for,
            "successor_agent_id": successor.agent_id,
        })
        # The row as it now is (`successor` was read, locked, in this transaction), without reading it again.
        return replace(successor, roster=decode_roster(encoded), opening_note=opening_note, pending=False)

    def release(self, run_id: str, agent_id: str) -> None:
        """Drops a reservation: it stays invisible, and its predecessor can be reserved again."""
        self.conn.execute(
            update(_instances)
            .where(_instances.c.run_id == run_id, _instances.c.agent_id == agent_id, _instances.c.pending)
            .values(released=True, reserved_for=None)
        )

    def list_instances(self, run_id: str, after_seq: int, limit: int) -> list[InstanceRecord]:
        rows = self.conn.execute(
            select(_instances)
            .where(_instances.c.run_id == run_id, _instances.c.seq > after_seq, ~_instances.c.pending)
            .order_by(_instances.c.seq)
            .limit(limit)
        ).all()
        return [_instance_record(r) for r in rows]


def _run_record(row: Any) -> RunRecord:
    profiles, fsm = decode_spec(row.spec)
    return RunRecord(
        run_id=row.run_id,
        spec=RunSpec(row.name, profiles, bool(row.board_enabled), fsm),
        status=RunStatus(row.status),
        status_detail=row.status_detail,
        created_us=int(row.created_us),
        seq=int(row.seq),
    )


def _instance_record(row: Any) -> InstanceRecord:
    return InstanceRecord(
        run_id=row.run_id, agent_id=row.agent_id, profile=row.profile, parent_agent_id=row.parent_agent_id,
        cause=Cause(row.cause), fsm_state=row.fsm_state, roster=decode_roster(row.roster),
        created_us=int(row.created_us), seq=int(row.seq), pending=bool(row.pending),
        bind_request=bytes(row.bind_request or b""), reserved_for=row.reserved_for or "",
        released=bool(row.released), opening_note=row.opening_note, successor_agent_id=row.successor_agent_id,
    )
