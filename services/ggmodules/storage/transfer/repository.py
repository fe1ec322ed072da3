"""The Transfer journal repository: one unit of work per transaction, over SQLAlchemy Core.

The journal row, unique per request id, is a transfer's claim (R49): a second call with the same request id
racing the first waits on its insert until the first commits, collides, and the unit runs again and finds
the first one's row. A unit that loses to a concurrent one is run again (storage.contention).

A pending transfer is driven by one replica at a time, the holder of its lease (`lease`): the lease is
taken, renewed and released with conditional updates on the row, timed on the database's clock (so replicas'
clocks need not agree), and every later step is journaled only by the holder (`save` with `owner`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import BigInteger, ColumnElement, bindparam, cast, delete, func, literal, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import NoResultFound

from ggmodules.core.errors import AlreadyExists, NotFound, Reason
from ggmodules.core.transfer.record import TransferRecord
from ggmodules.core.vocabulary import TransferKind, TransferState
from ggmodules.storage.contention import DEFAULT, Retries
from ggmodules.storage.migrations import migrate
from ggmodules.storage.named import Counted, NamedPrepared
from ggmodules.storage.pinned import Transact
from ggmodules.storage.prepared import Prepared, Tx
from ggmodules.storage.transfer.tables import TrTransferRow

T = TypeVar("T")
_transfers = TrTransferRow.__table__  # type: ignore[attr-defined]
_MUTABLE = (
    "from_state", "successor_profile", "successor_fsm_state", "state", "step", "plan", "opening_note",
    "successor_agent_id", "handover", "failure", "failure_code", "failure_reason", "failure_metadata",
    "completed_us",
)
_ASKED = (
    "transfer_id", "request_id", "request_hash", "run_id", "kind", "predecessor_agent_id", "to_state",
    "leave_fsm", "created_us", "lease_owner",
)

# A transfer's own path runs prepared statements (storage.prepared): building and running a Core statement
# costs more than SQLite running it.
_BY_REQUEST = NamedPrepared(select(_transfers).where(_transfers.c.request_id == bindparam("request_id")))
_BY_ID = NamedPrepared(select(_transfers).where(_transfers.c.transfer_id == bindparam("transfer_id")))


def _db_now_us(dialect: str) -> ColumnElement[int]:
    """The database's clock in microseconds (SQLite: this process's, the only one on its file)."""
    if dialect == "postgresql":
        return cast(func.extract("epoch", func.clock_timestamp()) * 1_000_000, BigInteger)
    return bindparam("now_us", type_=BigInteger)


def _add(dialect: str) -> Prepared:
    """The insert of a new transfer; its lease, if it has an owner, runs `lease_us` on the database's
    clock."""
    leased = _db_now_us(dialect) + bindparam("lease_us", type_=BigInteger)
    values: dict[str, Any] = {name: bindparam(name) for name in (*_ASKED, *_MUTABLE)}
    return Prepared(_transfers.insert().values({**values, "lease_expires_us": leased}))


_ADD = {dialect: _add(dialect) for dialect in ("sqlite", "postgresql")}


def _save(owner: bool, ended: bool) -> Counted:
    """A later step: only onto a pending transfer not past it, only by its lease holder (`owner`); an ended
    transfer gives its lease up with it."""
    conditions = [
        _transfers.c.transfer_id == bindparam("k_transfer_id"),
        _transfers.c.state == int(TransferState.PENDING),
        _transfers.c.step <= bindparam("k_step"),
    ]
    if owner:
        conditions.append(_transfers.c.lease_owner == bindparam("k_owner"))
    values: dict[str, Any] = {name: bindparam(name) for name in _MUTABLE}
    if ended:
        values.update(lease_owner="", lease_expires_us=0)
    return Counted(update(_transfers).where(*conditions).values(values))


_SAVE: dict[tuple[bool, bool], Counted] = {
    (owner, ended): _save(owner, ended) for owner in (False, True) for ended in (False, True)
}


def now_us() -> int:
    return time.time_ns() // 1000


def prune_ended(conn: Connection, window_seconds: float, batch: int) -> int:
    """Deletes at most `batch` transfers that completed or failed longer than `window_seconds` ago (the
    journal row is the transfer's request id's claim: past the window, as a request log forgets an id,
    GetTransfer no longer finds it and its request id starts a new transfer); returns how many. A pending
    transfer is never pruned."""
    cutoff = now_us() - int(window_seconds * 1_000_000)
    oldest = (
        select(_transfers.c.seq)
        .where(_transfers.c.completed_us > 0, _transfers.c.completed_us < cutoff)
        .where(_transfers.c.state != int(TransferState.PENDING))
        .order_by(_transfers.c.completed_us)
        .limit(batch)
    )
    gone = delete(_transfers).where(_transfers.c.seq.in_(oldest.scalar_subquery()))
    return int(conn.execute(gone).rowcount)


class TransferRepository:
    def __init__(self, engine: Engine, retries: Retries = DEFAULT) -> None:
        self.engine = engine
        self.retries = retries
        # SQLite: the event loop's transactions (inline) on a connection of their own (storage.pinned).
        self._transact = Transact(engine, retries)

    def create_tables(self) -> None:
        migrate(self.engine, "transfer")

    def transact(self, work: Callable[[TransferUnit], T]) -> T:
        """Runs `work` in one transaction, again when it loses to a concurrent one."""
        return self._transact(lambda tx: work(TransferUnit(tx)))

    def close(self) -> None:
        self._transact.close()
        self.engine.dispose()


class TransferUnit:
    def __init__(self, tx: Tx) -> None:
        self.tx = tx
        self.conn = tx.conn

    def by_request(self, request_id: str, request_hash: str) -> TransferRecord | None:
        """The transfer journaled under this request id; reuse with another request is refused."""
        row = _BY_REQUEST.first(self.tx, {"request_id": request_id})
        if row is None:
            return None
        if row.request_hash != request_hash:
            raise AlreadyExists(
                f"request_id {request_id!r} was already used for a different transfer request; "
                "use a new request id for a new transfer",
                reason=Reason.REQUEST_ID_REUSED,
                metadata={"request_id": request_id, "transfer_id": row.transfer_id},
            )
        return _record(row)

    def find(self, run_id: str, *, transfer_id: str = "", request_id: str = "") -> TransferRecord:
        column, value = (
            (_transfers.c.transfer_id, transfer_id) if transfer_id else (_transfers.c.request_id, request_id)
        )
        stmt = select(_transfers).where(column == value, _transfers.c.run_id == run_id)
        row = self.conn.execute(stmt).first()
        if row is None:
            what = f"transfer {transfer_id!r}"
            if not transfer_id:
                what = f"a transfer asked with request id {request_id!r}"
            raise NotFound(
                f"{what} does not exist in run {run_id}; check the run and the id (a transfer that ended is"
                " kept for GGMODULES_REQUEST_LOG_RETENTION_SECONDS, one day by default)",
                reason=Reason.ENTRY_NOT_FOUND,
                metadata={"run_id": run_id, "transfer_id": transfer_id, "request_id": request_id},
            )
        return _record(row)

    def get(self, transfer_id: str) -> TransferRecord:
        row = _BY_ID.first(self.tx, {"transfer_id": transfer_id})
        if row is None:
            raise NoResultFound(f"no transfer {transfer_id!r} in the journal")
        return _record(row)

    def add(self, record: TransferRecord, owner: str = "", lease_seconds: float = 0) -> None:
        """Journals a new transfer, its lease held by `owner` (the replica that will drive it) if given."""
        values = _values(record)
        values.update(
            transfer_id=record.transfer_id, request_id=record.request_id or None,
            request_hash=record.request_hash, run_id=record.run_id, kind=int(record.kind),
            predecessor_agent_id=record.predecessor_agent_id, to_state=record.to_state,
            leave_fsm=record.leave_fsm, created_us=record.created_us, lease_owner=owner,
            now_us=now_us(), lease_us=int(lease_seconds * 1_000_000),
        )
        if not owner:  # no lease: expired from the start, on any clock
            values.update(now_us=0, lease_us=0)
            _ADD["sqlite"].execute(self.tx, values)
            return
        _ADD[self.tx.dialect.name].execute(self.tx, values)

    def save(self, record: TransferRecord, owner: str = "") -> bool:
        """Journals a later step of a pending transfer; False when it has already moved past it, or when
        `owner` (if given) no longer holds its lease. A transfer that ended gives its lease up with it."""
        values = _values(record)
        values.update(k_transfer_id=record.transfer_id, k_step=record.step, k_owner=owner)
        save = _SAVE[(bool(owner), record.state is not TransferState.PENDING)]
        return bool(save.count(self.tx, values))

    def lease(self, transfer_id: str, owner: str, seconds: float) -> bool:
        """Takes or renews the lease of a pending transfer for `seconds`: True when `owner` holds it now
        (it held it already, or nobody did, or the holder's lease expired)."""
        now = self._now_us()
        result = self.conn.execute(
            update(_transfers)
            .where(
                _transfers.c.transfer_id == transfer_id,
                _transfers.c.state == int(TransferState.PENDING),
                or_(_transfers.c.lease_owner == owner, _transfers.c.lease_expires_us < now),
            )
            .values(lease_owner=owner, lease_expires_us=now + int(seconds * 1_000_000))
        )
        return bool(result.rowcount)

    def release(self, transfer_id: str, owner: str) -> None:
        """Gives the lease up (the transfer stays pending): any replica's next scan may take it."""
        self.conn.execute(
            update(_transfers)
            .where(_transfers.c.transfer_id == transfer_id, _transfers.c.lease_owner == owner,
                   _transfers.c.state == int(TransferState.PENDING))
            .values(lease_owner="", lease_expires_us=0)
        )

    def pending_ids(self) -> list[str]:
        """Pending transfers nobody holds a live lease on, oldest first."""
        rows = self.conn.execute(
            select(_transfers.c.transfer_id)
            .where(_transfers.c.state == int(TransferState.PENDING),
                   _transfers.c.lease_expires_us < self._now_us())
            .order_by(_transfers.c.seq)
        ).all()
        return [r.transfer_id for r in rows]

    def _now_us(self) -> ColumnElement[int]:
        """The database's clock in microseconds (SQLite: this process's, the only one on its file)."""
        if self.conn.dialect.name == "postgresql":
            return cast(func.extract("epoch", func.clock_timestamp()) * 1_000_000, BigInteger)
        return literal(now_us(), BigInteger)


def _values(record: TransferRecord) -> dict[str, Any]:
    values = {name: getattr(record, name) for name in _MUTABLE}
    values["state"] = int(record.state)
    values["plan"] = record.plan or None
    values["handover"] = record.handover or None
    values["failure_metadata"] = json.dumps(record.failure_metadata, sort_keys=True)
    return values


def _record(row: Any) -> TransferRecord:
    return TransferRecord(
        transfer_id=row.transfer_id, request_id=row.request_id or "", request_hash=row.request_hash,
        run_id=row.run_id, kind=TransferKind(row.kind), predecessor_agent_id=row.predecessor_agent_id,
        state=TransferState(row.state), step=int(row.step), created_us=int(row.created_us),
        from_state=row.from_state, to_state=row.to_state, successor_profile=row.successor_profile,
        successor_fsm_state=row.successor_fsm_state, leave_fsm=bool(row.leave_fsm),
        plan=bytes(row.plan or b""),
        opening_note=row.opening_note,
        successor_agent_id=row.successor_agent_id, handover=bytes(row.handover or b""), failure=row.failure,
        failure_code=row.failure_code, failure_reason=row.failure_reason,
        failure_metadata=json.loads(row.failure_metadata or "{}"), completed_us=int(row.completed_us),
    )
