"""Request ids (R49): a retried mutation returns the first answer and applies nothing twice.

The answer is recorded in the same transaction as the mutation, so a crash either loses both or keeps both.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from google.protobuf.message import Message
from sqlalchemy import select
from sqlalchemy.engine import Connection
from sqlmodel import Field, SQLModel

from ggmodules.core.errors import AlreadyExists, Reason


class IdempotencyRow(SQLModel):
    method: str = Field(primary_key=True)
    request_id: str = Field(primary_key=True)
    request_hash: str
    response: bytes


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
    def __init__(self, row: type[IdempotencyRow]) -> None:
        self._table = row.__table__  # type: ignore[attr-defined]

    def recall(self, conn: Connection, method: str, request_id: str, request_hash: str) -> bytes | None:
        """The first answer to this request id, or None if new. Reuse with other content is refused."""
        row = conn.execute(
            select(self._table.c.request_hash, self._table.c.response).where(
                self._table.c.method == method, self._table.c.request_id == request_id
            )
        ).first()
        if row is None:
            return None
        if row.request_hash != request_hash:
            raise request_id_reused(method, request_id)
        return bytes(row.response)

    def record(
        self, conn: Connection, method: str, request_id: str, request_hash: str, response: bytes
    ) -> None:
        conn.execute(
            self._table.insert().values(
                method=method, request_id=request_id, request_hash=request_hash, response=response
            )
        )
