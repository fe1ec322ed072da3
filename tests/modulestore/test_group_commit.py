"""Group commit (storage/modulestore/group_commit.py): concurrent writes share a transaction and keep every
rule of a write alone (R23 caps, R28 events, R48 durability, R49 request ids): a refused write changes
nothing, the others stand, each is answered after its commit, and writers of one store keep their order."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import create_engine, text

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.errors import FailedPrecondition
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import HistoryContents
from ggmodules.core.roster import Binding, BindPlan
from ggmodules.core.vocabulary import BindAction, Cause
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.storage.engine import make_engine
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.modulestore.group_commit import GroupCommit
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.modulestore.unit import ModuleStoreUnit
from ggmodules.storage.prepared import Tx
from ggmodules.usecases.modulestore import write as writing
from ggmodules.usecases.modulestore.bind import bind
from ggmodules.wire import modulestore as convert
from tests.harness import (
    BACKENDS,
    ServiceProcess,
    Suite,
    drop_database,
    new_database_url,
    open_channel,
    status_of,
    stubs,
)
from tests.harness.modulestore import Stub, contents, events, messages, new_run, open_agent, write


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = new_database_url(request.param, "modulestore", tmp_path)
    yield url
    drop_database(url)


def _request_ids(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {r[0] for r in conn.execute(text("SELECT request_id FROM ms_requests"))}
    finally:
        engine.dispose()


def test_refused_writes_among_concurrent_ones_change_nothing_and_the_others_stand(
    modulestore: Stub, suite: Suite
) -> None:
    run = new_run()
    agent = open_agent(modulestore, run, "coder-0", caps=c.Caps(max_items=12))
    other = open_agent(modulestore, run, "coder-1")
    first = write(modulestore, agent, c.KIND_HISTORY, request_id=f"{run}-reused",
                  append_messages=svc.AppendMessages(messages=messages("first")))

    def create(i: int) -> Any:
        return lambda: write(modulestore, agent, c.KIND_TASKS, request_id=f"{run}-task-{i}",
                             create_task=svc.CreateTask(title=f"task {i}"))

    def say(content: str, request_id: str = "", store: str = "") -> Any:
        return lambda: modulestore.Write(svc.WriteRequest(
            request_id=request_id, run_id=run, agent_id=agent.agent_id,
            store_id=store or agent[c.KIND_HISTORY],
            append_messages=svc.AppendMessages(messages=messages(content))))

    calls: dict[str, Any] = {f"task {i}": create(i) for i in range(15)}  # 3 over the cap of 12
    calls |= {f"say {i}": say(f"say {i}") for i in range(8)}
    calls |= {f"twice {i}": say("said once", f"{run}-once") for i in range(3)}  # one request sent 3 times
    calls |= {f"reuse {i}": say(f"other {i}", f"{run}-reused") for i in range(3)}  # another write's id
    calls |= {f"not held {i}": say("not mine", store=other[c.KIND_HISTORY]) for i in range(3)}

    def outcome(name: str) -> Any:
        try:
            return calls[name]()
        except grpc.RpcError as err:
            return err

    with ThreadPoolExecutor(len(calls)) as pool:
        answers = dict(zip(calls, pool.map(outcome, calls), strict=True))

    created = {n: a for n, a in answers.items() if n.startswith("task") and not isinstance(a, grpc.RpcError)}
    over = {n: a for n, a in answers.items() if n.startswith("task") and isinstance(a, grpc.RpcError)}
    assert len(created) == 12 and len(over) == 3
    assert {status_of(err) for err in over.values()} == {(grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED")}
    store = contents(modulestore, agent, c.KIND_TASKS)
    assert store.store.figures.items == 12 and store.store.figures.writes == 12
    assert sorted(t.title for t in store.contents.tasks.tasks) == sorted(created)
    assert sorted(a.task_id for a in created.values()) == list(range(1, 13))

    for i in range(3):
        assert status_of(answers[f"reuse {i}"]) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")
        assert answers[f"not held {i}"].code() == grpc.StatusCode.PERMISSION_DENIED
    twice = [answers[f"twice {i}"] for i in range(3)]
    assert twice[0] == twice[1] == twice[2]  # one request, applied once, answered alike

    history = contents(modulestore, agent, c.KIND_HISTORY).contents.history
    said = [m.content for m in history.messages]
    assert sorted(said) == sorted(["first", "said once", *(f"say {i}" for i in range(8))])
    assert [m.seq for m in history.messages] == list(range(1, 11))
    for name, answer in answers.items():  # each acknowledged append sits at the seq it was told
        if name.startswith(("say", "twice")):
            assert said[answer.last_seq - 1] == ("said once" if name.startswith("twice") else name)
    assert first.last_seq == 1 and said[0] == "first"
    assert not contents(modulestore, other, c.KIND_HISTORY).contents.history.messages

    # The outbox: one write event per acknowledged write, none for a refused one.
    written = [e for e in events(modulestore, run) if e.WhichOneof("body") == "write"]
    task_events = [e for e in written if e.store_id == agent[c.KIND_TASKS]]
    assert len(task_events) == 12  # a task write's delta is the list as it stands after it
    assert sorted(t.title for t in task_events[-1].write.delta.tasks.tasks) == sorted(created)
    assert not {t.title for e in task_events for t in e.write.delta.tasks.tasks} & set(over)
    history_events = [e for e in written if e.store_id == agent[c.KIND_HISTORY]]
    assert sorted(m.content for e in history_events for m in e.write.delta.history.messages) == sorted(said)
    assert not [e for e in written if e.store_id == other[c.KIND_HISTORY]]
    # The request log: the acknowledged writes' ids, none of a refused one (a retry of it runs anew).
    logged = _request_ids(suite.urls["modulestore"])
    task_id = {n: f"{run}-task-{n.split()[1]}" for n in (*created, *over)}
    assert {f"{run}-reused", f"{run}-once", *(task_id[n] for n in created)} <= logged
    assert not {task_id[n] for n in over} & logged


def _plan(run: str, agent: str) -> BindPlan:
    history = Binding(Kind.HISTORY, BindAction.CREATE, may_write=True)
    return BindPlan(Cause.OPEN, "coder", "", (history,), run_id=run, agent_id=agent)


def test_one_batch_is_one_transaction_and_a_refusal_in_it_is_rolled_back_alone(database_url: str) -> None:
    """Mutations queued together run in one transaction; one that wrote and then refused leaves nothing
    (messages, figures, events, request log) while the others of its transaction are applied, in order."""
    sqlite = database_url.startswith("sqlite")
    repo = ModuleStoreRepository(make_engine(database_url), pinned=sqlite)
    run, agent = new_run(), "coder-0"
    roster = repo.mutate(None, lambda unit: convert.bind_response(bind(unit, _plan(run, agent))),
                         svc.BindInstanceResponse).roster
    store = roster[0].store_id
    # PostgreSQL: one worker, so the first mutation runs alone and every later one waits for the next batch.
    group = GroupCommit(repo.transactions, workers=1)
    seen: list[Tx] = []

    def apply(i: int) -> Any:
        def run_it(unit: ModuleStoreUnit) -> svc.WriteResponse:
            seen.append(unit.tx)
            request = svc.WriteRequest(run_id=run, agent_id=agent, store_id=store,
                                       append_messages=svc.AppendMessages(messages=messages(f"m{i}")))
            op = convert.op_from(request)
            response = convert.write_response(writing.write(unit, run, agent, store, op))
            if i % 4 == 3:  # it wrote, then is refused: all it wrote must go
                raise FailedPrecondition(f"refused m{i}")
            return response

        return run_it

    async def main() -> list[Any]:
        calls = [group.mutate(RequestKey("Write", f"r{i}", f"h{i}"), apply(i), svc.WriteResponse,
                              order=(run, store)) for i in range(20)]
        return await asyncio.gather(*calls, return_exceptions=True)

    try:
        answers = asyncio.run(main())
        kept = [i for i in range(20) if i % 4 != 3]
        for i, answer in enumerate(answers):
            if i in kept:
                assert isinstance(answer, svc.WriteResponse)
                assert answer.last_seq == kept.index(i) + 1  # in arrival order, no seq left by a refusal
            else:
                assert isinstance(answer, FailedPrecondition) and answer.message == f"refused m{i}"
        if sqlite:  # all in one, committed; before it, the same batch tried without savepoints until the
            # first refusal (i=3) and rolled back whole (group_commit.py)
            assert len({id(tx) for tx in seen[-20:]}) == 1 and len(seen) == 24
            assert {id(tx) for tx in seen[:4]}.isdisjoint({id(tx) for tx in seen[-20:]})
        else:  # the first alone, the rest in one
            assert len({id(tx) for tx in seen}) == 2
        view = repo.get_store(run, store, agent, 0, 100)
        assert isinstance(view.contents, HistoryContents)
        assert [m.content for m in view.contents.messages] == [f"m{i}" for i in kept]
        assert view.store.figures.items == len(kept) and view.store.figures.writes == len(kept)
        page = repo.read_outbox(0, 1000, run)
        written = [e for e in page.events if e.WhichOneof("body") == "write"]
        assert [e.write.delta.history.messages[0].content for e in written] == [f"m{i}" for i in kept]
        assert [e.stream_seq for e in page.events] == list(range(1, len(page.events) + 1))
        logged = _request_ids(database_url)
        assert {f"r{i}" for i in kept} <= logged
        assert not {f"r{i}" for i in range(20) if i not in kept} & logged
    finally:
        group.close()
        repo.close()


def test_every_acknowledged_write_survives_kill_9_in_the_middle_of_batches(database_url: str) -> None:
    """Sixteen callers, two per window, append as fast as they are answered; ModuleStore is killed -9 while
    batches are in flight. After a restart every acknowledged append is there, at the seq it was told, and
    each caller's appends are in the order it made them."""
    run = new_run()
    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
    acked: dict[str, int] = {}  # content -> seq it was acknowledged at
    order: dict[int, list[str]] = {n: [] for n in range(16)}
    try:
        with open_channel(proc.address) as channel:
            stub = stubs(channel, "modulestore")
            agents = [open_agent(stub, run, f"coder-{i}") for i in range(8)]

            def caller(n: int) -> None:
                for i in range(10_000):
                    content = f"caller {n} message {i}"
                    try:
                        answer = write(stub, agents[n % 8], c.KIND_HISTORY, request_id=uuid.uuid4().hex,
                                       append_messages=svc.AppendMessages(messages=messages(content)))
                    except grpc.RpcError:
                        return  # the service is gone
                    acked[content] = answer.last_seq
                    order[n].append(content)
                    if len(acked) >= 300 and proc.proc.poll() is None:
                        proc.proc.kill()  # in the middle of the other callers' batches

            with ThreadPoolExecutor(16) as pool:
                list(pool.map(caller, range(16)))
    finally:
        proc.kill()
    assert len(acked) >= 300

    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
    try:
        with open_channel(proc.address) as channel:
            stub = stubs(channel, "modulestore")
            stored: dict[str, int] = {}
            for agent in agents:
                history = contents(stub, agent, c.KIND_HISTORY).contents.history
                assert [m.seq for m in history.messages] == list(range(1, len(history.messages) + 1))
                stored |= {m.content: m.seq for m in history.messages}
            assert {content: stored.get(content) for content in acked} == acked
            for made in order.values():  # each caller's appends in the order it made them
                assert [acked[x] for x in made] == sorted(acked[x] for x in made)
    finally:
        proc.terminate()


@pytest.mark.parametrize("backend", BACKENDS[1:])
def test_a_one_connection_pool_still_serves_batches_and_reads(backend: str, tmp_path: Path) -> None:
    """With PostgreSQL and a pool of one connection, the batch worker takes it per batch and gives it back:
    concurrent writes are all applied and a read between them is served."""
    url = new_database_url(backend, "modulestore", tmp_path)
    repo = ModuleStoreRepository(make_engine(url, pool_size=1, max_overflow=0))
    run, agent = new_run(), "coder-0"
    try:
        roster = repo.mutate(None, lambda unit: convert.bind_response(bind(unit, _plan(run, agent))),
                             svc.BindInstanceResponse).roster
        store = roster[0].store_id

        def apply(i: int) -> Any:
            request = svc.WriteRequest(run_id=run, agent_id=agent, store_id=store,
                                       append_messages=svc.AppendMessages(messages=messages(f"m{i}")))
            op = convert.op_from(request)
            return lambda unit: convert.write_response(writing.write(unit, run, agent, store, op))

        async def main() -> list[Any]:
            loop = asyncio.get_running_loop()
            writes = [repo.batched.mutate(RequestKey("Write", f"{run}-{i}", "h"), apply(i), svc.WriteResponse,
                                          order=(run, store)) for i in range(10)]
            read = loop.run_in_executor(None, repo.get_store, run, store, agent, 0, 100)
            return await asyncio.gather(*writes, read)

        *answers, _ = asyncio.run(main())
        assert sorted(a.last_seq for a in answers) == list(range(1, 11))
        view = repo.get_store(run, store, agent, 0, 100)
        assert view.store.figures.items == 10
    finally:
        repo.close()
        drop_database(url)

