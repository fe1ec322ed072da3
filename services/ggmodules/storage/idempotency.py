"""Request ids (R49): a retried mutation returns the first answer and applies nothing twice.

A mutation claims its request id first thing in its transaction (the request-log row, inserted with an
empty answer) and fills the answer in before it commits, so a crash loses both or keeps both. A concurrent
call with the same request id stops at the claim until the first one's transaction ends: it reads the
first answer when that committed, and claims the id itself when it rolled back (a refusal records nothing;
the retry then runs again). No call can act on the state the first one is changing before it has its answer.

Where the transaction already holds the database's only write lock from its start (SQLite's BEGIN
IMMEDIATE: one writer at a time) no concurrent claim can come between, so the claim is a lookup
(`recall`) and the row is inserted once, with its answer, at the end (`record`): one write of the row
instead of an insert and an update that grows it (ModuleStore's write path, storage/modulestore/unit.py).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message
from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from ggmodules.core.errors import AlreadyExists, Reason
from ggmodules.storage.columns import SEQ
from ggmodules.storage.prepared import Prepared, Tx


class IdempotencyRow(SQLModel):
    method: str = Field(primary_key=True)
    request_id: str = Field(primary_key=True)
    request_hash: str
    response: bytes
    # When the request id was first claimed (Unix seconds): rows older than the retention window are
    # pruned (storage/outbox_pruning.py), and a retry arriving after that is answered as a new request.
    created_at: int = Field(default=0, sa_type=SEQ, index=True)


def fingerprint(request_bytes: bytes) -> str:
    return hashlib.sha256(request_bytes).hexdigest()


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A mutation's request id, the method it was sent to and a fingerprint of the whole request."""

    method: str
    request_id: str
    request_hash: str

    @classmethod
    def of(cls, method: str, request: Message) -> RequestKey | None:
        """None for an empty request id: the call is then applied as a new request."""
        request_id: str = getattr(request, "request_id", "")
        if not request_id:
            return None
        return cls(method, request_id, fingerprint(request.SerializeToString(deterministic=True)))


def request_id_reused(method: str, request_id: str) -> AlreadyExists:
    return AlreadyExists(
        f"request_id {request_id!r} was already used for a different {method} request; "
        "use a new request id for a new request",
        reason=Reason.REQUEST_ID_REUSED,
        metadata={"request_id": request_id, "method": method},
    )


class RequestLog:
    """One service's request log, with its statements prepared (see prepared.py)."""

    def __init__(self, row: type[IdempotencyRow]) -> None:
        table: Table = row.__table__  # type: ignore[attr-defined]
        self._claim = {"sqlite": _claim(sqlite, table), "postgresql": _claim(postgresql, table)}
        self._recall = Prepared(
            select(table.c.request_hash, table.c.response).where(
                table.c.method == bindparam("method"), table.c.request_id == bindparam("request_id")
            )
        )
        self._record = Prepared(
            table.insert().values(
                method=bindparam("method"),
                request_id=bindparam("request_id"),
                request_hash=bindparam("request_hash"),
                response=bindparam("response"),
                created_at=bindparam("created_at"),
            )
        )
        self._answer = Prepared(
            update(table)
            .where(table.c.method == bindparam("k_method"), table.c.request_id == bindparam("k_request_id"))
            .values(response=bindparam("v_response"))
        )

    def claim(self, conn: Connection | Tx, method: str, request_id: str, request_hash: str) -> bytes | None:
        """None: the request id is this transaction's now; apply the request, then `answer` it. Otherwise
        the first answer to it (after waiting for a concurrent first attempt to end)."""
        tx = Tx.of(conn)
        won = self._claim[tx.dialect.name].one(tx, self._claim_params(method, request_id, request_hash))
        return self.claimed(tx, won is not None, method, request_id, request_hash)

    def claim_statement(self, tx: Tx, method: str, request_id: str, request_hash: str) -> tuple[str, Any]:
        """The claim as a statement to send with others (storage/pg_pipeline.py); its result, a row when
        the claim was won, goes to `claimed`."""
        return self._claim[tx.dialect.name].bound(tx, self._claim_params(method, request_id, request_hash))

    def claimed(self, tx: Tx, won: bool, method: str, request_id: str, request_hash: str) -> bytes | None:
        """What `claim` returns, given whether its statement inserted the row."""
        if won:
            return None
        answer = self.recall(tx, method, request_id, request_hash)
        if answer is None:  # the claim that won is gone again: let the transaction run again
            raise ClaimLost(method, request_id)
        return answer

    @staticmethod
    def _claim_params(method: str, request_id: str, request_hash: str) -> dict[str, Any]:
        return {
            "method": method,
            "request_id": request_id,
            "request_hash": request_hash,
            "response": b"",
            "created_at": int(time.time()),
        }

    def recall(self, conn: Connection | Tx, method: str, request_id: str, request_hash: str) -> bytes | None:
        """The first answer to this request id, or None if new. Reuse with other content is refused."""
        row = self._recall.one(conn, {"method": method, "request_id": request_id})
        return None if row is None else recalled(row[0], row[1], method, request_id, request_hash)

    def record(
        self, conn: Connection | Tx, method: str, request_id: str, request_hash: str, response: bytes
    ) -> None:
        """Inserts the request id with its answer, in a transaction that looked it up (`recall`) while it
        held the write lock, which it has held since (SQLite's BEGIN IMMEDIATE): the row no other writer
        can have inserted meanwhile. Should one have (another process on the file), the insert fails on
        the key and the transaction is run again (storage.contention), to find the first answer."""
        self._record.execute(
            conn,
            {
                "method": method,
                "request_id": request_id,
                "request_hash": request_hash,
                "response": response,
                "created_at": int(time.time()),
            },
        )

    def answer(self, conn: Connection | Tx, method: str, request_id: str, response: bytes) -> None:
        """Records the answer of the request id this transaction claimed."""
        self._answer.execute(conn, {"k_method": method, "k_request_id": request_id, "v_response": response})


def recalled(
    stored_hash: str | None, response: bytes | None, method: str, request_id: str, request_hash: str
) -> bytes | None:
    """What `recall` returns given the request log's row as read (None, None: no row), by it or by a query
    that reads the row with others (storage/modulestore/unit.py)."""
    if stored_hash is None:
        return None
    if stored_hash != request_hash:
        raise request_id_reused(method, request_id)
    return bytes(response or b"")


def _claim(dialect: Any, table: Table) -> Prepared:
    stmt = dialect.insert(table).values(
        method=bindparam("method"),
        request_id=bindparam("request_id"),
        request_hash=bindparam("request_hash"),
        response=bindparam("response"),
        created_at=bindparam("created_at"),
    )
    return Prepared(
        stmt.on_conflict_do_nothing(index_elements=["method", "request_id"]).returning(table.c.request_id)
    )


class ClaimLost(Exception):
    """A claim seen taken is not there when read (its row was pruned in between, past the retention
    window): the transaction is run again like one that lost to a concurrent one (see storage.contention),
    and then claims the request id as new."""

    def __init__(self, method: str, request_id: str) -> None:
        super().__init__(f"the claim of request id {request_id!r} ({method}) vanished; run again")
