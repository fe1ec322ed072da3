"""A sibling call fails over (issue 9): a Registry configured with both ModuleStore replicas
(`--modulestore-address A,B`) keeps opening instances after one of them is killed with SIGKILL, or frozen
with SIGSTOP (a replica that stops answering without closing its connections: a hung process, a host that
lost power, a partition); none of its answers is UNAVAILABLE, and the test client sends nothing twice. The
Python SDK given both replicas goes on through the live one too.

A frozen replica's connections stay open, so only keepalive pings tell (runtime/channels.py
KEEPALIVE_OPTIONS): without them every call round_robin sent to it waited out its deadline, for as long as
it stayed frozen."""

from __future__ import annotations

import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest
import structlog
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, OperationalError

from ggmodules.core.errors import Unavailable
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from ggmodules.runtime.interceptors import refusal_of
from ggmodules.sdk import Client as SdkClient
from ggmodules.sdk import ClientConfig
from ggmodules.storage.engine import IDLE_IN_TRANSACTION_MS, make_engine
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
