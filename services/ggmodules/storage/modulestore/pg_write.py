"""PostgreSQL: a mutation of a group-commit batch in two round trips (storage/pg_pipeline.py).

`apply_once` (unit.py) claims the request id, then the use case loads the store it writes and its holders,
applies, persists, appends its events and the answer is recorded: nine round trips with BEGIN and COMMIT.
Here the claim and the load of the store the mutation names (`store`: the one it locks first, as a write
does) go to the server together, with BEGIN (or the batch's SAVEPOINT); what the use case then writes
waits in the transaction (Tx.deferring) and goes with the answer, the batch's RELEASE or COMMIT, in a
second. A use case that reads more (another store, read sets, a refusal's lookups) reads as before,
each read taking what waits with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from google.protobuf.message import Message
from sqlalchemy.engine import Connection

from ggmodules.storage.idempotency import RequestKey, RequestLog
from ggmodules.storage.modulestore.unit import HolderRow, ModuleStoreUnit, holders_statement
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.prepared import Tx

M = TypeVar("M", bound=Message)


def open_deferring(conn: Connection) -> tuple[Tx, Callable[[bool], None]]:
    """A transaction on `conn` (in autocommit) that defers: its BEGIN goes with its first statements, and
    its COMMIT (`Tx.send(commit=True)`) or ROLLBACK (`Tx.rollback`) through the pipeline too; how it ends
    (`end`) only tells SQLAlchemy, should a Core statement have begun a transaction there, that it is over
    (psycopg then has nothing to send). SQLAlchemy's own begin and commit cost ~40 us a write."""
    tx = Tx(conn)
    tx.deferring(begin=True)

    def end(commit: bool) -> None:
        if conn.in_transaction():
            if commit:
                conn.commit()
            else:
                conn.rollback()

    return tx, end


def apply_once(
    tx: Tx,
    outbox: Outbox,
    requests: RequestLog,
    key: RequestKey | None,
    apply: Callable[[ModuleStoreUnit], M],
    response_type: type[M],
    store: tuple[str, ...],
) -> M:
    """unit.apply_once on a deferring `tx`, the holders of `store` (run id, store id; or nothing) read
    with the claim."""
    wanted: list[tuple[str, Any]] = []
    if key is not None:
        wanted.append(requests.claim_statement(tx, key.method, key.request_id, key.request_hash))
    if len(store) == 2:
        wanted.append(holders_statement(tx, store[0], store[1]))
    cursors = tx.send(wanted) if wanted else []
    if key is not None:
        won = bool(cursors[0].fetchall())
        first = requests.claimed(tx, won, key.method, key.request_id, key.request_hash)
        if first is not None:
            return response_type.FromString(first)
    unit = ModuleStoreUnit(tx, outbox)
    if len(store) == 2:
        unit.preloaded = ((store[0], store[1]), [HolderRow(*r) for r in cursors[-1].fetchall()])
    response = apply(unit)
    if key is not None:
        requests.answer(tx, key.method, key.request_id, response.SerializeToString(deterministic=True))
    return response
