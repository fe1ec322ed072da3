"""A sibling call fails over (issue 9): a Registry configured with both ModuleStore replicas
(`--modulestore-address A,B`) keeps opening instances after one of them is killed with SIGKILL, or frozen
with SIGSTOP (a replica that stops answering without closing its connections: a hung process, a host that
lost power, a partition); none of its answers is UNAVAILABLE, and the test client sends nothing twice. The
Python SDK given both replicas goes on through the live one too, its writes and its Telemetry subscriptions.

A frozen replica's connections stay open, so only keepalive pings tell (runtime/channels.py
KEEPALIVE_OPTIONS): without them every call round_robin sent to it waited out its deadline, for as long as
it stayed frozen."""

from __future__ import annotations

import os
import queue
import signal
import threading
from dataclasses import replace
from pathlib import Path

import pytest
import structlog
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError

from ggmodules.core.errors import Unavailable
from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from ggmodules.runtime.interceptors import refusal_of
from ggmodules.sdk import Client as SdkClient
from ggmodules.sdk import ClientConfig
from ggmodules.storage.engine import IDLE_IN_TRANSACTION_MS, make_engine
from ggmodules.telemetry.v1 import telemetry_pb2
from tests.harness import (
    ServiceProcess,
    drop_database,
    eventually,
    needs_postgres,
    new_database_url,
    open_channel,
)
from tests.harness.registry import create_run, full_profile

BEFORE, AFTER = 4, 12


QUIET = ("--log-level", "warning")


def modulestore_and_registry(url: str, started: list[ServiceProcess]) -> registry_pb2.Run:
    """One ModuleStore and one Registry on `url`, appended to `started`; a run of one "planner" profile."""
    started.append(ServiceProcess("modulestore", *QUIET, "--database-url", url))
    started.append(ServiceProcess("registry", *QUIET, "--database-url", url, "--modulestore-address",
                                  started[0].address))
    with open_channel(started[1].address) as channel:
        return create_run(reg_grpc.RegistryServiceStub(channel), full_profile("planner"))


def kill(process: ServiceProcess) -> None:
    process.kill()  # SIGKILL: the replica dies, the kernel closes its connections


def freeze(process: ServiceProcess) -> None:
    os.kill(process.proc.pid, signal.SIGSTOP)  # it stays, answering nothing; its connections stay open


@needs_postgres
@pytest.mark.parametrize("stop", [kill, freeze], ids=["killed", "frozen"])
def test_registry_whose_modulestore_replica_died_keeps_working_through_the_other(
    tmp_path: Path, stop: object
) -> None:
    url = new_database_url("postgres", "h9rep_failover", tmp_path)
    started: list[ServiceProcess] = []
    try:
        common = ("--database-url", url, "--log-level", "warning")
        started += [ServiceProcess("modulestore", *common) for _ in range(2)]
        both = ",".join(p.address for p in started)
        registry_process = ServiceProcess("registry", *common, "--modulestore-address", both)
        started.append(registry_process)
        with open_channel(registry_process.address) as channel:
            registry = reg_grpc.RegistryServiceStub(channel)
            run = create_run(registry, full_profile("planner"))

            def open_one(n: int) -> str:
                request = reg.OpenInstanceRequest(request_id=f"{run.run_id}/{n}", run_id=run.run_id,
                                                  profile="planner")
                return str(registry.OpenInstance(request, timeout=30).instance.agent_id)

            opened = [open_one(n) for n in range(BEFORE)]
            config = replace(ClientConfig.from_env(), registry=registry_process.address, modulestore=both)
            with SdkClient(config=config) as gg:
                agent = gg.open_instance(run.run_id, "planner")
                agent.history.append("user", "before")
                stop(started[0])  # type: ignore[operator]
                opened += [open_one(n) for n in range(BEFORE, BEFORE + AFTER)]
                for n in range(AFTER):  # each write goes to the live replica, or fails over to it
                    agent.history.append("user", f"after {n}")
                said = [m.content for m in agent.history.contents().messages]
        assert len(set(opened)) == BEFORE + AFTER
        assert said == ["before", *(f"after {n}" for n in range(AFTER))]
        assert started[1].proc.poll() is None
    finally:
        for p in started:
            if p.proc.poll() is None:
                p.kill()
        drop_database(url)


@needs_postgres
def test_a_transaction_a_frozen_replica_left_open_gives_up_its_locks(tmp_path: Path) -> None:
    """A replica frozen between two statements of a transaction holds its row locks; every other replica's
    write to those rows (and, in ModuleStore, every write queued behind it in the group commit) waited for
    as long as it stayed frozen. The services' connections have the server end such a transaction after
    IDLE_IN_TRANSACTION_MS: the lock is free again, and the frozen one's transaction is gone, not
    committed."""
    url = new_database_url("postgres", "h9rep_idle", tmp_path)
    engines = [make_engine(url) for _ in range(2)]
    try:
        with engines[0].begin() as conn:
            conn.execute(text("CREATE TABLE held (id int PRIMARY KEY, v text)"))
            conn.execute(text("INSERT INTO held VALUES (1, 'before')"))
        frozen = engines[0].connect()
        frozen.begin()
        frozen.execute(text("UPDATE held SET v = 'never committed' WHERE id = 1"))  # the lock, then nothing

        def take_the_lock() -> bool:
            with engines[1].begin() as conn:
                try:
                    conn.execute(text("SELECT v FROM held WHERE id = 1 FOR UPDATE NOWAIT"))
                except OperationalError:  # lock_not_available: still held
                    return False
                conn.execute(text("UPDATE held SET v = 'after' WHERE id = 1"))
                return True

        assert not take_the_lock()
        eventually(take_the_lock, "the frozen transaction's lock released", IDLE_IN_TRANSACTION_MS / 1000 * 4)
        with pytest.raises(DBAPIError) as ended:  # the server ended the frozen one's session
            frozen.execute(text("SELECT 1"))
        frozen.invalidate()
        # Should the replica wake and a caller still wait, it is told UNAVAILABLE (retry), not INTERNAL.
        told = refusal_of(ended.value, structlog.get_logger())
        assert isinstance(told, Unavailable) and "idle-in-transaction" in told.message
        with engines[1].connect() as conn:
            assert conn.execute(text("SELECT v FROM held")).scalar_one() == "after"
    finally:
        for engine in engines:
            engine.dispose()
        drop_database(url)


@needs_postgres
def test_a_frozen_replicas_sessions_queued_for_one_store_do_not_hold_it_in_turn(tmp_path: Path) -> None:
    """A frozen replica often has more than one session on one store: a transaction holding its row lock,
    and others (its group commit, a single write) queued behind it. When the server ended the holder's
    transaction, the next of those was granted the lock and, frozen too, held it for another
    IDLE_IN_TRANSACTION_MS: the live replica's writes to that store waited through each in turn and missed
    their deadlines. The services' sessions wait LOCK_TIMEOUT_MS at most for a lock: the queued session is
    refused and holds nothing, and the live replica's write, retried, answers within the time the holder
    alone takes to be ended (with a margin below a 2 x IDLE_IN_TRANSACTION_MS deadline)."""
    url = new_database_url("postgres", "h9rep_queue", tmp_path)
    started: list[ServiceProcess] = []
    frozen_replica = make_engine(url)
    release = threading.Event()
    queued: list[BaseException | None] = []
    try:
        run = modulestore_and_registry(url, started)
        deadline = 1.6 * IDLE_IN_TRANSACTION_MS / 1000
        config = replace(ClientConfig.from_env(), registry=started[1].address, modulestore=started[0].address,
                         timeout=deadline)
        with SdkClient(config=config) as gg:
            agent = gg.open_instance(run.run_id, "planner")
            agent.history.append("user", "before")
            stores = {"run": run.run_id}
            holder = frozen_replica.connect()
            holder.begin()
            holder.execute(text("SELECT store_id FROM ms_stores WHERE run_id = :run FOR UPDATE"), stores)

            def queue_behind_the_holder() -> None:
                with frozen_replica.connect() as conn:
                    conn.begin()
                    try:
                        conn.execute(text("UPDATE ms_stores SET writes = writes WHERE run_id = :run"), stores)
                        queued.append(None)  # granted: it keeps the lock, as a frozen replica would
                        release.wait()
                    except DBAPIError as exc:
                        queued.append(exc)

            behind = threading.Thread(target=queue_behind_the_holder, daemon=True)
            behind.start()

            def waiting_for_the_lock() -> bool:
                with frozen_replica.connect() as conn:
                    return bool(conn.execute(text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND query LIKE 'UPDATE ms_stores%'")).scalar_one())

            eventually(waiting_for_the_lock, "the second session queued behind the first", 10)
            agent.history.append("user", "after")  # the live replica's write, within its deadline
            said = [m.content for m in agent.history.contents().messages]
            behind.join(timeout=IDLE_IN_TRANSACTION_MS / 1000 * 4)
        assert said == ["before", "after"]
        assert len(queued) == 1 and isinstance(queued[0], DBAPIError)
        assert getattr(queued[0].orig, "sqlstate", None) == "55P03"  # lock_not_available: it held nothing
        holder.invalidate()
    finally:
        release.set()
        for p in started:
            if p.proc.poll() is None:
                p.kill()
        frozen_replica.dispose()
        drop_database(url)


def thaw(process: ServiceProcess) -> None:
    os.kill(process.proc.pid, signal.SIGCONT)


@needs_postgres
def test_a_subscription_whose_telemetry_replica_froze_goes_on_from_the_other_missing_nothing(
    tmp_path: Path,
) -> None:
    """An SDK subscription given both Telemetry replicas (one log on PostgreSQL) while one, then the other, is
    frozen: the stream on the frozen one goes quiet with its connection open; the keepalive pings end it and
    the subscription resumes after its last cursor on the live replica. Every write arrives, in order, once.
    Which replica served the stream is not known, so each is frozen in turn (thawed before the next)."""
    url = new_database_url("postgres", "h9rep_telfreeze", tmp_path)
    started: list[ServiceProcess] = []
    arrived: queue.Queue[object] = queue.Queue()
    try:
        run = modulestore_and_registry(url, started)
        siblings = ("--modulestore-address", started[0].address, "--registry-address", started[1].address)
        telemetry = [ServiceProcess("telemetry", *QUIET, "--database-url", url, *siblings) for _ in range(2)]
        started += telemetry
        config = replace(ClientConfig.from_env(), registry=started[1].address, modulestore=started[0].address,
                         telemetry=",".join(t.address for t in telemetry))
        said: list[str] = []
        with SdkClient(config=config) as gg:
            agent = gg.open_instance(run.run_id, "planner")
            subscription = gg.subscribe(run.run_id, agent.instance.agent_id)

            def read() -> None:
                try:
                    for item in subscription:
                        arrived.put(item)
                except Exception as exc:  # handed to the test: it fails naming it
                    arrived.put(exc)

            threading.Thread(target=read, daemon=True).start()
            seen: list[telemetry_pb2.StreamEvent] = []

            def say_and_see(text: str) -> None:
                agent.history.append("user", text)
                said.append(text)
                while not seen or _said_in(seen[-1]) != text:  # keepalive: about 6 s for a frozen one
                    item = arrived.get(timeout=30)
                    assert isinstance(item, telemetry_pb2.StreamEvent), item
                    seen.append(item)

            say_and_see("before")
            for frozen in telemetry:
                freeze(frozen)
                for n in range(3):
                    say_and_see(f"{frozen.address} frozen {n}")
                thaw(frozen)
            say_and_see("after")
            subscription.close()
        assert [_said_in(e) for e in seen if _said_in(e)] == said  # none missed, none twice, in order
        assert [e.cursor for e in seen] == sorted({e.cursor for e in seen})
    finally:
        for p in started:
            if p.proc.poll() is None:
                thaw(p)
                p.kill()
        drop_database(url)


def _said_in(item: telemetry_pb2.StreamEvent) -> str:
    """The text of a history append's event ("" for any other event)."""
    event = item.event
    said = event.write.delta.history.messages if event.WhichOneof("body") == "write" else []
    return said[0].content if said else ""
