"""PostgreSQL: a transaction's statements sent together, in one round trip (libpq's pipeline mode).

A transaction that defers (`Tx.deferring`, storage/prepared.py) keeps the statements whose results it
does not read (an INSERT, an UPDATE, SAVEPOINT, and BEGIN itself on a connection in autocommit) until it
needs a result or ends; `send` then sends them, the statements whose results it wants, and COMMIT when
asked, with one Sync: the server runs them in order and one wait covers them all. On a loaded machine each
round trip costs a wake-up of the server process and of the caller's thread, often more than the statement
(issue 10: a history append went from nine round trips to two).

The statements go through psycopg's libpq wrapper (`pgconn`) directly: psycopg's cursors cost some tens of
microseconds of Python per statement, several times what the server spends on these. Parameters are dumped
and rows loaded by psycopg's own adapters (`Transformer`, so values are what a cursor gives); each
statement is prepared once per connection (names `_ggm_<n>`, beside psycopg's `_pg3_<n>`). psycopg drops
every prepared statement of a session on ROLLBACK (DEALLOCATE ALL): a deferring transaction rolls back
through `send` too (`rollback`), and should a statement be gone all the same (26000), the cache is cleared
and the transaction fails as one lost to concurrency (storage/contention.py: run again).

Errors are those of the statements: the first failing one is raised once the pipeline is read, and the
ones after it in the same pipeline do not run (the transaction is then aborted, as after any failed
statement; the caller rolls back).
"""

from __future__ import annotations

import re
import select
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer

_PARAM = re.compile(r"%\((\w+)\)s|%%")
# Statements the server plans, prepared even without parameters: a query parsed and planned anew each time
# costs more than its execution (the stream heads' read of storage/outbox_sequencing.py: 170 µs a pass).
_PLANNED = re.compile(r"\s*(SELECT|WITH|INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_FATAL = pq.ExecStatus.FATAL_ERROR
_SYNC = pq.ExecStatus.PIPELINE_SYNC
_LOST_STATEMENT = "26000"  # invalid_sql_statement_name: a prepared statement the session no longer has


class Rows:
    """A wanted statement's rows, read like a cursor's, and how many rows it returned or changed."""

    __slots__ = ("_at", "_rows", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int = -1) -> None:
        self._rows = rows
        self._at = 0
        self.rowcount = rowcount

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._at = self._rows[self._at :], len(self._rows)
        return rows

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]


class _Session:
    """What one connection has prepared, and its adapters."""

    def __init__(self, conn: Any) -> None:
        self.transformer = Transformer(conn)
        self.names: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self.serial = 0


_sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
_converted: dict[str, tuple[bytes, tuple[str, ...]]] = {}


def _convert(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """`%(name)s` placeholders (psycopg's paramstyle, as SQLAlchemy compiles) to `$n`, and their names."""
    found = _converted.get(sql)
    if found is None:
        names: list[str] = []

        def number(m: re.Match[str]) -> str:
            if m.group(1) is None:
                return "%"
            if m.group(1) not in names:
                names.append(m.group(1))
            return f"${names.index(m.group(1)) + 1}"

        found = _converted[sql] = (_PARAM.sub(number, sql).encode(), tuple(names))
    return found


def send(
    dbapi: Any,
    waiting: Sequence[tuple[str, Any]],
    wanted: Sequence[tuple[str, Any]],
    *,
    commit: bool = False,
) -> list[Rows]:
    """Runs `waiting` (results dropped), then `wanted` (their rows returned), then COMMIT if asked, in one
    pipeline on the psycopg connection behind `dbapi`."""
    return send_then(dbapi, waiting, wanted, (), commit=commit)[0]


def send_then(
    dbapi: Any,
    waiting: Sequence[tuple[str, Any]],
    wanted: Sequence[tuple[str, Any]],
    then: Sequence[tuple[str, Any]],
    *,
    commit: bool = False,
) -> tuple[list[Rows], list[Rows] | None]:
    """`send`, and in the same round trip, after its Sync, `then`: read-only statements in an implicit
    transaction of their own (after COMMIT; on read committed, each on a snapshot taken after the one
    before). Their failure is theirs alone, not the transaction's: their rows are then None."""
    conn = getattr(dbapi, "dbapi_connection", dbapi)  # SQLAlchemy's pool proxy -> psycopg's connection
    session = _sessions.get(conn)
    if session is None:
        session = _sessions[conn] = _Session(conn)
    commands = [*waiting, *wanted, *([("COMMIT", None)] if commit else [])]
    with conn.lock:
        try:
            results, after = _run(conn.pgconn, session, commands, then)
        except errors.Error as exc:
            # Only a result the server sent says where the pipeline stopped (`command`, set by _run; -1 for a
            # failed PREPARE): a statement before COMMIT failed, so COMMIT did not run and nothing of the
            # transaction is committed. A connection lost part way carries no `command`: COMMIT may have run
            # (the answer was lost, not the commit), so it is never taken as "nothing committed" — the batch
            # would be applied again.
            stopped = getattr(exc, "command", None)
            exc.before_commit = commit and stopped is not None and stopped < len(commands) - 1  # type: ignore[attr-defined]
            raise
    first = len(waiting)
    out = _loaded(session, results[first : first + len(wanted)])
    return out, (None if after is None else _loaded(session, after))


def _loaded(session: _Session, results: Sequence[Any]) -> list[Rows]:
    out = []
    t = session.transformer
    for result in results:
        t.set_pgresult(result)
        rows = t.load_rows(0, result.ntuples, tuple) if result.ntuples else []
        out.append(Rows(rows, result.command_tuples if result.command_tuples is not None else -1))
    return out


def rollback(dbapi: Any) -> None:
    """Rolls the transaction back without psycopg seeing it (which would drop every prepared statement)."""
    send(dbapi, [("ROLLBACK", None)], [])


def _run(
    pg: Any, session: _Session, commands: Sequence[tuple[str, Any]], then: Sequence[tuple[str, Any]] = ()
) -> tuple[list[Any], list[Any] | None]:
    """Each command's result, in order, then each of `then`'s (sent after a Sync of their own; None when one
    of them failed); raises the first error of `commands`."""
    segments: list[list[tuple[str, bytes | None, tuple[str, tuple[int, ...]] | None]]] = []  # what, name
    synced = 0
    pg.enter_pipeline_mode()
    try:
        for part in (commands, then) if then else (commands,):
            segments.append([])
            _queue(pg, session, part, segments[-1])
            pg.pipeline_sync()
            synced += 1
        got = _communicate(pg, synced)
    except BaseException:
        _drain(pg, synced)
        for sent in segments:
            for what, _name, key in sent:  # whether they were prepared is not known: prepare anew next time
                if what == "prepare" and key is not None:
                    session.names.pop(key, None)
        raise
    pg.exit_pipeline_mode()
    results, error = _results(session, segments[0], got[0])
    after: list[Any] | None = None
    if len(segments) > 1:
        after, failed = _results(session, segments[1], got[1])
        if failed is not None:
            after = None
    if error is not None:
        raise error
    return results, after


def _results(
    session: _Session,
    sent: list[tuple[str, bytes | None, tuple[str, tuple[int, ...]] | None]],
    got: list[Any],
) -> tuple[list[Any], Exception | None]:
    """One segment's results of its commands (not of the preparing), and its first error."""
    error: Exception | None = None
    results: list[Any] = []
    for (what, _name, key), result in zip(sent, got, strict=True):
        if result.status == _FATAL and error is None:
            error = errors.error_from_result(result, encoding=session.transformer.encoding)
            error.command = len(results) if what == "run" else -1  # type: ignore[attr-defined]
        if what == "prepare":
            if result.status != pq.ExecStatus.COMMAND_OK and key is not None:
                session.names.pop(key, None)  # not prepared: prepare again next time
            continue
        results.append(result)
    if getattr(error, "sqlstate", None) == _LOST_STATEMENT:
        session.names.clear()
    return results, error


def _queue(
    pg: Any,
    session: _Session,
    commands: Sequence[tuple[str, Any]],
    sent: list[tuple[str, bytes | None, tuple[str, tuple[int, ...]] | None]],
) -> None:
    """Queues `commands` (and the preparing of those not prepared yet); notes each in `sent`."""
    t = session.transformer
    for sql, args in commands:
        query, names = _convert(sql)
        if not names and not _PLANNED.match(sql):  # BEGIN, COMMIT, SAVEPOINT, SET: nothing to plan
            pg.send_query_params(query, None)
            sent.append(("run", None, None))
            continue
        values = [args[n] for n in names] if isinstance(args, Mapping) else list(args or ())
        params = t.dump_sequence(values, [_format(v) for v in values])
        types = tuple(t.types or ())
        formats = list(t.formats or ())
        key = (sql, types)
        name = session.names.get(key)
        if name is None:
            session.serial += 1
            name = b"_ggm_%d" % session.serial
            pg.send_prepare(name, query, param_types=types)
            session.names[key] = name
            sent.append(("prepare", name, key))
        pg.send_query_prepared(name, params, param_formats=formats)
        sent.append(("run", name, None))


def _format(value: Any) -> PyFormat:
    """How a parameter is sent: a list of byte strings (the payload columns' `unnest`) in binary, the rest as
    psycopg would choose. psycopg's choice for such a list is text: each element hex-escaped, then quoted and
    backslash-escaped again by a regular expression in Python, twice its size on the wire. A block of 64
    events of 20 kB took 28 ms to dump so against 0.5 ms in binary; under a crowd of writers on shared stores
    (large snapshots) it was a fifth of Telemetry's CPU."""
    if type(value) is list:
        for item in value:
            if item is not None:
                return PyFormat.BINARY if isinstance(item, (bytes, bytearray, memoryview)) else PyFormat.AUTO
    return PyFormat.AUTO


def _communicate(pg: Any, syncs: int) -> list[list[Any]]:
    """Sends what is buffered and reads every command's result up to each of the pipeline's `syncs` syncs:
    per sync, one result per command (its last), in order."""
    fd = pg.socket
    while pg.flush() == 1:  # the socket's buffer is full: wait until it takes more (reading meanwhile)
        select.select([fd], [fd], [])
        pg.consume_input()
    segments: list[list[Any]] = []
    got: list[Any] = []
    current: list[Any] = []
    while True:
        pg.consume_input()
        while not pg.is_busy():
            r = pg.get_result()
            if r is None:
                if not current:
                    break
                got.append(current[-1])
                current = []
            elif r.status == _SYNC:
                segments.append(got)
                if len(segments) == syncs:
                    return segments
                got = []
            else:
                current.append(r)
        select.select([fd], [], [])



def _drain(pg: Any, synced: int) -> None:
    """After a failure part way: what was queued is run to its end, then the pipeline left (a connection
    that fails here is broken; its next use says so). `synced`: the syncs queued before the failure; what
    follows the last of them is read up to a sync of its own."""
    try:
        pg.pipeline_sync()
        _communicate(pg, synced + 1)
        pg.exit_pipeline_mode()
    except Exception:  # the original failure is the one raised
        pass
