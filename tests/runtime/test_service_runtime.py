"""Every service process: health, reflection, the ready line, graceful SIGTERM, configuration."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ggmodules.common.v1 import outbox_service_pb2 as ob
from ggmodules.internal.v1 import outbox_service_pb2_grpc as ob_grpc
from ggmodules.runtime.config import ServiceConfig
from tests.harness import ROOT, ServiceProcess, open_channel, status_of


@pytest.fixture()
def modulestore_process(tmp_path: Path):
    proc = ServiceProcess("modulestore", "--database-url", f"sqlite:///{tmp_path / 'ms.db'}")
    yield proc
    if proc.proc.poll() is None:
        proc.kill()


def test_health_reports_serving_for_the_server_and_each_service(modulestore_process: ServiceProcess) -> None:
    with open_channel(modulestore_process.address) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        for name in ("", "ggmodules.modulestore.v1.ModuleStoreService"):
            resp = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING
        with pytest.raises(grpc.RpcError) as err:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


def test_reflection_lists_the_service_for_generic_clients(modulestore_process: ServiceProcess) -> None:
    with open_channel(modulestore_process.address) as ch:
        stub = reflection_pb2_grpc.ServerReflectionStub(ch)
        req = reflection_pb2.ServerReflectionRequest(list_services="")
        names = {
            s.name
            for resp in stub.ServerReflectionInfo(iter([req]), timeout=5)
            for s in resp.list_services_response.service
        }
    assert "ggmodules.modulestore.v1.ModuleStoreService" in names
    assert "grpc.health.v1.Health" in names


def test_sigterm_stops_gracefully_and_logs_it(modulestore_process: ServiceProcess) -> None:
    modulestore_process.proc.send_signal(signal.SIGTERM)
    assert modulestore_process.proc.wait(15) == 0
    events = [
        json.loads(line)["event"]
        for line in modulestore_process.log_text().splitlines()
        if line.startswith("{")
    ]
    assert events[-2:] == ["stopping", "stopped"]


def test_a_stopping_service_ends_its_open_streams_unavailable_at_once_instead_of_waiting_out_its_grace(
    tmp_path: Path,
) -> None:
    """A replica stopping (SIGTERM: a rolling restart) with a stream open on it, as every ModuleStore and
    Registry has (Telemetry's relay follows its outbox): the stream is ended UNAVAILABLE, saying to resume
    elsewhere, and the process exits. It used to hold the stream until the grace ran out (5.2-5.7 s of each
    stop in a rolling restart at the default grace; here the grace is 120 s, so old code does not exit in
    the 30 s given: the stream ends DEADLINE_EXCEEDED)."""
    proc = ServiceProcess("registry", "--database-url", f"sqlite:///{tmp_path / 'reg.db'}",
                          "--modulestore-address", "127.0.0.1:1", "--grace-seconds", "120")
    try:
        stub = ob_grpc.OutboxServiceStub(open_channel(proc.address))
        watch = stub.WatchOutbox(ob.WatchOutboxRequest(after_origin_seq=0, heartbeat_ms=100), timeout=30)
        next(watch)  # the stream is open: its first heartbeat arrived
        proc.proc.send_signal(signal.SIGTERM)
        with pytest.raises(grpc.RpcError) as ended:
            for _ in watch:
                pass
        assert status_of(ended.value) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
        assert "resume the stream after the last" in (ended.value.details() or "")
        assert proc.proc.wait(30) == 0
    finally:
        if proc.proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--event-log", "nats://127.0.0.1:4222?duplicate_window=soon"),
         "duplicate_window='soon' in the event log's URL: give seconds, more than 0"),
        (("--trace", "jaeger"), "--trace 'jaeger': use one of console, otlp (or leave it unset)"),
        (("--port", "70000"),
         "--port (GGMODULES_PORT) is '70000': give a whole number at least 0 and at most 65535"),
    ],
)  # fmt: skip
def test_a_refused_setting_ends_the_service_with_one_line_naming_it(
    tmp_path: Path, flags: tuple[str, ...], said: str
) -> None:
    """An operator's typo gets the setting and what to give, on standard error, and a non-zero exit: no
    traceback to read through."""
    done = subprocess.run(
        [sys.executable, "-m", "ggmodules.cli.main", "modulestore", "--port", "0",
         "--database-url", f"sqlite:///{tmp_path / 'ms.db'}", *flags],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == f"ggmodules modulestore: {said}"
    assert "Traceback" not in done.stderr


def test_a_database_that_does_not_answer_at_start_ends_the_service_with_one_line_without_its_password(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ggmodules.cli.main", "registry", "--port", "0",
         "--database-url", "postgresql+psycopg://nobody:secret@127.0.0.1:1/ggm"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ggmodules registry: the database at postgresql+psycopg://nobody:***@127.0.0.1:1/ggm"
                           " does not answer: ")  # fmt: skip
    assert "Traceback" not in done.stderr and "secret" not in done.stderr


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        ("port", "-1", "give a whole number at least 0 and at most 65535"),
        ("port", "50051.5", "give a whole number at least 0 and at most 65535"),
        ("metrics-port", "65536", "give a whole number at least 0 and at most 65535"),
        ("grace-seconds", "-4", "give a number at least 0"),
        ("grace-seconds", "nan", "give a number at least 0"),
        ("pool-size", "0", "give a whole number at least 1"),
        ("pool-max-overflow", "-1", "give a whole number at least 0"),
        ("lease-seconds", "0", "give a number more than 0"),
        ("lease-scan-seconds", "inf", "give a number more than 0"),
    ],
)
def test_a_number_out_of_its_range_is_refused_naming_its_flag_and_variable(
    setting: str, value: str, said: str
) -> None:
    """A negative lease would have every replica take over every transfer at once; a scan every 0 s spins;
    a pool of 0 serves nothing. Each was accepted as given."""
    variable = "GGMODULES_" + setting.upper().replace("-", "_")
    for argv, env in (([f"--{setting}", value], {}), ([], {variable: value})):
        with pytest.raises(ValueError) as refused:
            ServiceConfig.load("transfer", argv, env)
        assert str(refused.value) == f"--{setting} ({variable}) is {value!r}: {said}"


def test_config_precedence_is_flag_then_service_env_then_suite_env_then_default() -> None:
    env = {
        "GGMODULES_DATABASE_URL": "sqlite:///suite.db",
        "GGMODULES_REGISTRY_DATABASE_URL": "sqlite:///reg.db",
        "GGMODULES_PORT": "7000",
    }
    assert ServiceConfig.load("modulestore", [], env).database_url == "sqlite:///suite.db"
    assert ServiceConfig.load("registry", [], env).database_url == "sqlite:///reg.db"
    assert ServiceConfig.load("registry", ["--database-url", "sqlite:///flag.db"], env).database_url == (
        "sqlite:///flag.db"
    )
    assert ServiceConfig.load("registry", [], env).port == 7000
    assert ServiceConfig.load("registry", [], {}).port == 50051
    assert ServiceConfig.load("modulestore", [], {}).database_url == "sqlite:///var/modulestore.db"


def test_a_service_freezes_its_start_up_heap_before_it_says_ready(tmp_path: Path) -> None:
    """Issue 10: what start-up built (~136,000 objects in ModuleStore) is out of the cyclic collector's
    reach once serving (`gc.freeze`, runtime/server.py), so no full collection walks it under load (~70 ms
    of CPU each, once per ~8,000 writes before). The test launcher adds the frozen count to the ready line."""
    from tests.tools.heap import LAUNCHER

    url = f"sqlite:///{tmp_path / 'ms.db'}"
    proc = ServiceProcess("modulestore", "--database-url", url, launcher=LAUNCHER)
    try:
        frozen = proc.ready_line.rsplit("frozen=", 1)[1]
        assert int(frozen) > 50_000, proc.ready_line
        with open_channel(proc.address) as ch:  # and it serves
            check = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
            assert check.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        assert proc.terminate() == 0
