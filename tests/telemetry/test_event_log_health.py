"""Telemetry with its event log on a NATS server that goes away: health says NOT_SERVING (and SERVING again
once it is back), and a subscriber is refused UNAVAILABLE, never an internal error."""

from __future__ import annotations

import queue
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.harness import DEADLINE, Suite, status_of

NATS_SERVER = shutil.which("nats-server") or "/usr/sbin/nats-server"
needs_nats_server = pytest.mark.skipif(
    not Path(NATS_SERVER).exists(), reason="no nats-server binary to start a NATS of the test's own"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OwnNats:
    """A nats-server with JetStream of this test's own, on a port of its own."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.directory = directory
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [NATS_SERVER, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(self.directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=False,
        )
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # ready once it says so
            if b"Server is ready" in line:
                break
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(15)


@pytest.fixture()
def own_nats(tmp_path: Path) -> Iterator[OwnNats]:
    nats = OwnNats(tmp_path / "jetstream")
    yield nats
    nats.kill()


def health_changes(suite: Suite) -> tuple[Any, queue.Queue[int]]:
    """Telemetry's overall health as it changes (Health.Watch), drained into a queue."""
    stub = health_pb2_grpc.HealthStub(suite.channel(suite.telemetry.address))  # type: ignore[union-attr]
    call = stub.Watch(health_pb2.HealthCheckRequest(service=""))
    changes: queue.Queue[int] = queue.Queue()

    def drain() -> None:
        try:
            for item in call:
                changes.put(item.status)
        except grpc.RpcError:
            pass

    threading.Thread(target=drain, daemon=True).start()
    return call, changes


def next_status(changes: queue.Queue[int], wanted: int) -> None:
    while (status := changes.get(timeout=DEADLINE)) != wanted:
        assert status in (health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING)


@needs_nats_server
def test_health_follows_the_event_log_and_subscribers_are_refused_unavailable_while_it_is_away(
    tmp_path: Path, own_nats: OwnNats
) -> None:
    suite = Suite("sqlite", tmp_path, transfer=False, event_log=f"nats://127.0.0.1:{own_nats.port}")
    try:
        suite.start_telemetry()
        call, changes = health_changes(suite)
        next_status(changes, health_pb2.HealthCheckResponse.SERVING)

        own_nats.kill()
        next_status(changes, health_pb2.HealthCheckResponse.NOT_SERVING)
        code, reason = status_of(suite.subscribe().error(DEADLINE * 2))
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")

        own_nats.start()
        next_status(changes, health_pb2.HealthCheckResponse.SERVING)
        call.cancel()
    finally:
        suite.close()
