"""The PostgreSQL write path in two round trips (storage/pg_pipeline.py, storage/modulestore/pg_write.py,
storage/pg_outbox_append.py): what it stores reads back the same as before (R28 stream seqs past one
varint byte), it takes two round trips per write, and a killed connection is replaced (R48: nothing
acknowledged is lost, the next write is served)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.server.modulestore.app import run_in_thread
from ggmodules.server.modulestore.servicer import ModuleStoreServicer
from ggmodules.storage import pg_pipeline
from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from tests.harness import drop_database, new_database_url
from tests.harness.backends import needs_postgres
from tests.harness.modulestore import messages, new_run

pytestmark = needs_postgres


@pytest.fixture
def servicer(tmp_path: Path) -> Iterator[tuple[ModuleStoreServicer, ModuleStoreRepository, str]]:
    url = new_database_url("postgres", "modulestore", tmp_path)
    repo = ModuleStoreRepository(make_engine(url))
    try:
        yield ModuleStoreServicer(repo, run_in_thread), repo, url
    finally:
        repo.close()
        drop_database(url)


def _append(run: str, agent: str, store: str, text: str) -> svc.WriteRequest:
    return svc.WriteRequest(request_id=uuid.uuid4().hex, run_id=run, agent_id=agent, store_id=store,
                            append_messages=svc.AppendMessages(messages=messages(text)))  # fmt: skip


async def _history(s: ModuleStoreServicer, run: str, agent: str) -> str:
    binding = ms.Binding(kind=c.KIND_HISTORY, action=ms.BIND_ACTION_CREATE, origin=c.ORIGIN_CREATED,
                         may_write=True)  # fmt: skip
    request = svc.BindInstanceRequest(request_id=uuid.uuid4().hex, run_id=run, agent_id=agent,
                                      profile="coder", cause="open", bindings=[binding])  # fmt: skip
    response = await s.BindInstance(request, None)  # type: ignore[arg-type]
    return str(response.roster[0].store_id)


def test_stream_seqs_written_in_the_statement_read_back_past_one_and_two_varint_bytes(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository, str],
) -> None:
    """A lone event's stream_seq is appended to its payload by the database: every event reads back with
    its stream's seq, in order, past 127 (two varint bytes); the row's column says the same."""
    s, repo, _ = servicer
    run, agent = new_run(), "coder-0"

    async def main() -> str:
        store = await _history(s, run, agent)
        for i in range(140):
            await s.write(_append(run, agent, store, f"m{i}"))
        return store

    asyncio.run(main())
    page = repo.read_outbox(0, 1000, run)
    mine = [e for e in page.events if e.agent_id == agent]
    assert [e.stream_seq for e in mine] == list(range(1, len(mine) + 1))
    assert len(mine) > 140
    written = [e.write.delta.history.messages[0].content for e in mine if e.WhichOneof("body") == "write"]
    assert written == [f"m{i}" for i in range(140)]
    assert all(e.origin == "modulestore" and e.time.seconds > 0 for e in mine)


def test_a_lone_append_takes_two_round_trips(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """BEGIN, the request id's claim and the store's load in one; the message, the head, the event (its
    stream_seq numbered when the outbox is read, storage/outbox_sequencing.py), the answer and COMMIT in
    the second."""
    s, _, _ = servicer
    run, agent = new_run(), "coder-0"
    sent: list[list[str]] = []
    real = pg_pipeline.send

    def counted(dbapi: object, waiting: list[tuple[str, object]], wanted: list[tuple[str, object]],
                *, commit: bool = False) -> list[pg_pipeline.Rows]:  # fmt: skip
        sent.append([sql.split()[0] for sql, _ in [*waiting, *wanted]] + (["COMMIT"] if commit else []))
        return real(dbapi, waiting, wanted, commit=commit)

    async def main() -> None:
        store = await _history(s, run, agent)
        await s.write(_append(run, agent, store, "warm"))
        monkeypatch.setattr(pg_pipeline, "send", counted)
        await s.write(_append(run, agent, store, "counted"))

    asyncio.run(main())
    assert sent == [
        ["BEGIN", "INSERT", "SELECT"],
        ["INSERT", "UPDATE", "INSERT", "UPDATE", "COMMIT"],
    ]


def test_a_write_after_its_connection_was_killed_is_served(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository, str],
) -> None:
    """The group-commit connection's server process is terminated between two writes: the next write
    finds it broken before anything was sent, replaces it and is applied once."""
    s, repo, url = servicer
    run, agent = new_run(), "coder-0"
    admin = make_url(url).set(drivername="postgresql", database="postgres")

    async def main() -> list[int]:
        store = await _history(s, run, agent)
        await s.write(_append(run, agent, store, "before"))
        with psycopg.connect(admin.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                         (make_url(url).database,))  # fmt: skip
        answers = []
        for text in ("after", "again"):
            answers.append((await s.write(_append(run, agent, store, text))).last_seq)
        return answers

    assert asyncio.run(main()) == [2, 3]
    page = repo.read_outbox(0, 100, run)
    written = [e.write.delta.history.messages[0] for e in page.events if e.WhichOneof("body") == "write"]
    assert [m.content for m in written] == ["before", "after", "again"]


def _pg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_a_connection_lost_at_commit_is_never_taken_for_nothing_committed(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository, str],
) -> None:
    """R48/R49: when the round trip that carries COMMIT loses its connection, whether COMMIT ran is unknown,
    so the failure must not say "before commit" (the group commit would then apply the batch again); a
    statement that fails ahead of COMMIT does say so (the pipeline stopped there, nothing committed)."""
    _, _, url = servicer
    with psycopg.connect(_pg_dsn(url), autocommit=True) as conn:
        pg_pipeline.send(conn, [("BEGIN", None)], [])
        with pytest.raises(psycopg.Error) as failed:
            pg_pipeline.send(conn, [], [("SELECT 1 / 0", None)], commit=True)
        assert failed.value.before_commit is True  # type: ignore[attr-defined]

    with psycopg.connect(_pg_dsn(url), autocommit=True) as conn, psycopg.connect(_pg_dsn(url)) as admin:
        pg_pipeline.send(conn, [("BEGIN", None)], [])
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        with pytest.raises(psycopg.Error) as lost:
            pg_pipeline.send(conn, [], [("SELECT 1", None)], commit=True)
        assert lost.value.before_commit is False  # type: ignore[attr-defined]


def test_a_statement_without_parameters_is_prepared_once_and_transaction_control_is_not(
    tmp_path: Path,
) -> None:
    """A query the server plans is parsed and planned once per connection, parameters or not (the stream
    heads' read of every numbering pass has none: planned each time it cost 170 µs of the server's)."""
    url = new_database_url("postgres", "pipeline", tmp_path)
    engine = make_engine(url)
    heads = "SELECT count(*) FROM pg_class WHERE relkind = 'r'"
    try:
        with engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            for _ in range(3):
                (rows,) = pg_pipeline.send(dbapi, [("BEGIN", None)], [(heads, {})], commit=True)
                assert rows.fetchone()[0] > 0  # type: ignore[index]
            (prepared,) = pg_pipeline.send(dbapi, [], [("SELECT statement FROM pg_prepared_statements", {})])
            statements = [s for (s,) in prepared.fetchall()]
        assert statements.count(heads) == 1
        assert not [s for s in statements if s.split()[0] in ("BEGIN", "COMMIT")]
    finally:
        engine.dispose()
        drop_database(url)


def test_lists_of_byte_strings_round_trip_whatever_their_bytes(tmp_path: Path) -> None:
    """The payload columns' arrays are sent in binary (storage/pg_pipeline.py `_format`; in text they took
    28 ms for 64 events of 20 kB): every byte value, quotes, backslashes, NUL, empty strings and NULL among
    them come back as they went, and a list of strings beside them is still typed by its cast."""
    url = new_database_url("postgres", "pipeline", tmp_path)
    engine = make_engine(url)
    payloads = [bytes(range(256)), b'"\\{},NULL', b"", None, b"\x00" * 3, bytes(range(255, -1, -1)) * 80]
    try:
        with engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            sql = "SELECT p, n FROM unnest(CAST(%(p)s AS bytea[]), CAST(%(n)s AS text[])) AS u(p, n)"
            names = [f"n{i}" for i in range(len(payloads))]
            (rows,) = pg_pipeline.send(dbapi, [], [(sql, {"p": payloads, "n": names})])
            got = rows.fetchall()
        assert [p if p is None else bytes(p) for p, _ in got] == payloads
        assert [n for _, n in got] == [f"n{i}" for i in range(len(payloads))]
    finally:
        engine.dispose()
        drop_database(url)
