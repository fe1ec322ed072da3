"""Replicas starting and serving (issue 9): eight ModuleStore replicas migrating an empty PostgreSQL
database at once (`ggmodules migrate modulestore`, the migration a replica runs as it starts) all succeed,
one after the other under the service's advisory lock; a replica's health
follows its database (NOT_SERVING while it does not answer, SERVING again once it does); an address may name
several replicas; the cross-replica LISTEN connects where `--listen-database-url` says."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from ggmodules.runtime.channels import channel_target
from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import head_revision
from tests.harness import (
    ROOT,
    ServiceProcess,
    _admin,
    drop_database,
    eventually,
    needs_postgres,
    new_database_url,
    open_channel,
)
from tests.replicas._support import cluster

REPLICAS = 8


@needs_postgres
def test_eight_replicas_migrating_an_empty_database_together_all_come_up(tmp_path: Path) -> None:
    url = new_database_url("postgres", "h9rep_migrate", tmp_path)
    try:
        start = threading.Barrier(REPLICAS)
        results: list[subprocess.CompletedProcess[str] | None] = [None] * REPLICAS

        def migrate(i: int) -> None:
            start.wait()
            results[i] = subprocess.run(
                [sys.executable, "-m", "ggmodules.cli.main", "migrate", "modulestore", "--database-url", url],
                capture_output=True, text=True, cwd=ROOT, timeout=120,
            )

        threads = [threading.Thread(target=migrate, args=(i,)) for i in range(REPLICAS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        failed = [r.stderr[-600:] for r in results if r is None or r.returncode != 0]
        assert failed == [], f"{len(failed)} of {REPLICAS} replicas failed migrating: {failed[0]}"
        engine = create_engine(url)
        try:
            head = head_revision(engine, "modulestore")
        finally:
            engine.dispose()
        assert head
        # Exactly one of them found the tables missing and made them; the others found them at head.
        said = sorted(r.stdout.strip() for r in results if r)
        assert said == sorted(
            [f"migrated modulestore: (empty) -> {head}"]
            + [f"migrated modulestore: {head} -> {head}"] * (REPLICAS - 1)
        )
    finally:
        drop_database(url)


def watch_until(stub: health_pb2_grpc.HealthStub, wanted: int) -> None:
    """Follows Health.Watch until the server reports `wanted` (grpc.health.v1 sends every change)."""
    for answer in stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30):
        if answer.status == wanted:
            return


@needs_postgres
def test_health_is_not_serving_while_the_database_is_unreachable_and_serving_once_it_answers(
    tmp_path: Path,
) -> None:
    url = new_database_url("postgres", "h9rep_health", tmp_path)
    proc = ServiceProcess("registry", "--database-url", url, "--log-level", "warning")
    try:
        with open_channel(proc.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            check = health_pb2.HealthCheckRequest(service="ggmodules.registry.v1.RegistryService")
            assert stub.Check(check, timeout=5).status == health_pb2.HealthCheckResponse.SERVING
            drop_database(url)  # the database goes away under the running replica
            watch_until(stub, health_pb2.HealthCheckResponse.NOT_SERVING)
            assert stub.Check(check, timeout=5).status == health_pb2.HealthCheckResponse.NOT_SERVING
            assert proc.proc.poll() is None
            parsed = make_url(url)
            _admin(parsed.set(database="postgres").render_as_string(hide_password=False),
                   f'CREATE DATABASE "{parsed.database}"')
            watch_until(stub, health_pb2.HealthCheckResponse.SERVING)
            assert stub.Check(check, timeout=5).status == health_pb2.HealthCheckResponse.SERVING
        assert "database unreachable: not serving" in proc.log_text()
    finally:
        proc.kill()
        drop_database(url)


@pytest.mark.parametrize(
    ("address", "target"),
    [
        ("127.0.0.1:50051", "127.0.0.1:50051"),
        ("dns:///localhost:50051", "dns:///localhost:50051"),
        ("127.0.0.1:1, 127.0.0.2:2", "ipv4:127.0.0.1:1,127.0.0.2:2"),
        ("localhost:1,127.0.0.1:2", "ipv4:127.0.0.1:1,127.0.0.1:2"),
        ("[::1]:1,[::1]:2", "ipv6:[::1]:1,[::1]:2"),
    ],
)
def test_an_address_names_one_replica_several_or_a_dns_name(address: str, target: str) -> None:
    assert channel_target(address) == target


def test_an_address_that_is_not_host_and_port_is_refused_with_what_to_give() -> None:
    with pytest.raises(ValueError, match="not host:port"):
        channel_target("127.0.0.1:1,nowhere")
    with pytest.raises(ValueError, match="mix IPv4 and IPv6"):
        channel_target("127.0.0.1:1,[::1]:2")



@needs_postgres
def test_a_cluster_that_fails_to_start_leaves_no_replica_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replica rig's own hygiene: when the last services of a cluster cannot start (here Transfer, given
    a lease it refuses), the replicas already started are stopped, so they hold no PostgreSQL connections
    for the rest of the suite."""
    started: list[ServiceProcess] = []
    real = cluster.start_together

    def recording(specs: Any) -> list[ServiceProcess]:
        got = real(specs)
        started.extend(got)
        return got

    monkeypatch.setattr(cluster, "start_together", recording)
    monkeypatch.setattr(cluster, "LEASE_SECONDS", "not-a-number")
    with pytest.raises(AssertionError, match="did not start"):
        cluster.Cluster(tmp_path, "sql").close()
    assert sorted(p.service for p in started) == ["modulestore", "modulestore", "registry", "registry"]
    for p in started:
        assert p.proc.wait(timeout=30) is not None, f"a {p.service} replica was left running"


@needs_postgres
def test_the_cross_replica_listen_connects_where_listen_database_url_says(tmp_path: Path) -> None:
    """Behind PgBouncer in transaction mode a LISTEN made through the pooler is lost as its transaction ends,
    and other replicas' commits would wake nothing: `--listen-database-url` sends the listeners straight to
    the server. Here both URLs reach one database, the listening one under its own application_name, so
    pg_stat_activity shows which connections listen."""
    url = new_database_url("postgres", "h9rep_listen", tmp_path)
    direct = "ggm-listen-direct"
    replica = ServiceProcess("modulestore", "--database-url", url, "--log-level", "warning",
                             "--listen-database-url", f"{url}?application_name={direct}")
    admin = create_engine(make_url(url).set(drivername="postgresql+psycopg"))
    try:
        def listening() -> set[str]:
            with admin.connect() as conn:
                rows = conn.exec_driver_sql(
                    "SELECT application_name FROM pg_stat_activity "
                    "WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
                ).all()
            return {str(r[0]) for r in rows}

        eventually(lambda: bool(listening()), "ModuleStore listening for its outbox's commits", 30)
        assert listening() == {direct}
    finally:
        replica.kill()
        admin.dispose()
        drop_database(url)


def test_a_listen_url_is_refused_for_anything_but_postgresql(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--listen-database-url"):
        make_engine(f"sqlite:///{tmp_path}/x.db", listen_url="postgresql+psycopg://127.0.0.1:5432/x")
    with pytest.raises(ValueError, match="--listen-database-url"):
        make_engine("postgresql+psycopg://127.0.0.1:5432/x", listen_url=f"sqlite:///{tmp_path}/x.db")
