"""The SQLite write path (storage/modulestore/unit.py `apply_once`, storage/idempotency.py): a write's
request id is looked up in the query that loads its store, and its request-log row is written once, with
its answer, before COMMIT. What a caller sees of request ids is unchanged (R49): a retry returns the first
answer, the same id with other content is refused, a refused write records nothing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.errors import DomainError, Reason
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.server.modulestore.app import run_inline
from ggmodules.server.modulestore.servicer import ModuleStoreServicer
from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from tests.harness.modulestore import messages, new_run


@pytest.fixture
def servicer(tmp_path: Path) -> Iterator[tuple[ModuleStoreServicer, ModuleStoreRepository]]:
    repo = ModuleStoreRepository(make_engine(f"sqlite:///{tmp_path / 'ms.db'}"), pinned=True)
    try:
        yield ModuleStoreServicer(repo, run_inline), repo
    finally:
        repo.close()


def _append(run: str, store: str, text: str, request_id: str = "") -> svc.WriteRequest:
    op = svc.AppendMessages(messages=messages(text))
    return svc.WriteRequest(request_id=request_id or uuid.uuid4().hex, run_id=run, agent_id="coder-0",
                            store_id=store, append_messages=op)  # fmt: skip


async def _history(s: ModuleStoreServicer, run: str) -> str:
    binding = ms.Binding(kind=c.KIND_HISTORY, action=ms.BIND_ACTION_CREATE, origin=c.ORIGIN_CREATED,
                         may_write=True)  # fmt: skip
    request = svc.BindInstanceRequest(request_id=uuid.uuid4().hex, run_id=run, agent_id="coder-0",
                                      profile="coder", cause="open", bindings=[binding])  # fmt: skip
    response = await s.BindInstance(request, None)  # type: ignore[arg-type]
    return str(response.roster[0].store_id)


def test_an_append_is_one_read_and_writes_its_request_log_row_once(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository],
) -> None:
    """BEGIN, the store with its holders and the request id read together, the message, the store's head,
    the event, the request log, COMMIT: seven statements, the request-log row inserted once with its
    answer (it was claimed empty, then updated: eight statements, the row written twice)."""
    s, repo = servicer

    async def go() -> list[str]:
        run = new_run()
        store = await _history(s, run)
        await s.write(_append(run, store, "warm up"))
        statements: list[str] = []
        raw = repo.transactions.pinned_dbapi
        raw.set_trace_callback(statements.append)
        try:
            await s.write(_append(run, store, "hello"))
        finally:
            raw.set_trace_callback(None)
        return statements

    statements = asyncio.run(go())
    assert len(statements) == 7, statements
    on_log = [x for x in statements if "ms_requests" in x]
    assert len(on_log) == 2, on_log  # read with the store, inserted once
    assert on_log[1].lstrip().startswith("INSERT INTO ms_requests")


def test_request_ids_hold_on_the_one_read(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository],
) -> None:
    """A retry returns the first answer and appends nothing; the same id with other content is refused
    REQUEST_ID_REUSED; a write refused (a store that is not there) records nothing, so its id is free."""
    s, _ = servicer

    async def go() -> None:
        run = new_run()
        store = await _history(s, run)
        first = await s.write(_append(run, store, "once", "r-1"))
        again = await s.write(_append(run, store, "once", "r-1"))
        assert again == first
        with pytest.raises(DomainError) as reused:
            await s.write(_append(run, store, "other", "r-1"))
        assert reused.value.reason == Reason.REQUEST_ID_REUSED
        with pytest.raises(DomainError):
            await s.write(_append(run, "history-9", "nowhere", "r-2"))
        after = await s.write(_append(run, store, "now", "r-2"))
        assert after.last_seq == first.last_seq + 1  # "once" appended once; "now" is new

    asyncio.run(go())


def test_a_batch_of_appends_takes_no_savepoints_until_one_of_them_is_refused(
    servicer: tuple[ModuleStoreServicer, ModuleStoreRepository],
) -> None:
    """Issue 10 (P2): concurrent appends on SQLite share one transaction with no SAVEPOINT around each (two
    statements of six a batched append, before). A batch in which one write is refused is rolled back
    whole and run again with a savepoint each: the refused write changes nothing, a retry returns its first
    answer, the others are applied once, in order, under one COMMIT (R23, R28, R49 as for a write alone)."""
    s, repo = servicer
    raw = repo.transactions.pinned_dbapi

    async def batch(requests: list[svc.WriteRequest]) -> tuple[list[Any], list[str]]:
        statements: list[str] = []
        raw.set_trace_callback(statements.append)
        try:
            answers = await asyncio.gather(*(s.write(r) for r in requests), return_exceptions=True)
        finally:
            raw.set_trace_callback(None)
        return list(answers), [" ".join(x.split()[:2]).upper() for x in statements]

    async def go() -> None:
        run = new_run()
        store = await _history(s, run)
        sent = [_append(run, store, f"a{i}") for i in range(8)]
        answers, verbs = await batch(sent)
        assert [a.last_seq for a in answers] == list(range(1, 9))
        assert verbs.count("BEGIN IMMEDIATE") == 1 and verbs.count("COMMIT") == 1, verbs
        assert not [v for v in verbs if v.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK"))], verbs

        mixed = [_append(run, store, "b0"), sent[3], _append(run, "history-9", "nowhere"),
                 _append(run, store, "b3")]  # fmt: skip
        again, verbs = await batch(mixed)
        assert isinstance(again[2], DomainError) and again[2].reason == Reason.STORE_NOT_FOUND
        assert again[1] == answers[3]  # a retry: the first answer, nothing appended
        assert [again[0].last_seq, again[3].last_seq] == [9, 10]
        assert verbs.count("COMMIT") == 1, verbs
        assert verbs.count("ROLLBACK") == 1, verbs  # the first try, undone whole
        assert verbs.count("SAVEPOINT GC") == 4 and verbs.count("ROLLBACK TO") == 1, verbs  # then each alone
        view = repo.get_store(run, store, "coder-0", 0, 100)
        assert [m.content for m in view.contents.messages] == [*(f"a{i}" for i in range(8)), "b0", "b3"]

    asyncio.run(go())
