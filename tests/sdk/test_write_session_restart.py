"""The SDK's write session across a ModuleStore crash: kill -9 with writes sent and not yet acknowledged, a
restart on the same address, and the session carries on. The writes still unanswered are sent again on a
new session under their request ids, so each is applied exactly once and in the order sent (R48, R49)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from ggmodules.sdk import Client, ClientConfig, RetryPolicy
from tests.harness import BACKENDS, ServiceProcess, drop_database, new_database_url
from tests.sdk.conftest import PROFILES

QUIET = ("--log-level", "warning")
# Patient enough to outlast a restart (about 10 s of pauses), for the session's reconnects.
PATIENT = RetryPolicy(max_attempts=9, initial_backoff=0.2, max_backoff=2.0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def service(name: str, *args: str) -> Iterator[ServiceProcess]:
    proc = ServiceProcess(name, *args, *QUIET)
    try:
        yield proc
    finally:
        if proc.proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("backend", BACKENDS)
def test_r48_r49_a_session_resends_what_a_crash_left_unanswered_and_applies_it_once(
    backend: str, tmp_path: Path
) -> None:
    urls = {name: new_database_url(backend, name, tmp_path) for name in ("modulestore", "registry")}
    port = str(free_port())
    try:
        with service("modulestore", "--database-url", urls["modulestore"], "--port", port) as modulestore, \
                service("registry", "--database-url", urls["registry"],
                        "--modulestore-address", modulestore.address) as registry:
            config = replace(ClientConfig.from_env(), retry=PATIENT)
            with Client(registry.address, modulestore.address, config=config) as gg:
                run = gg.create_run("restart", PROFILES)
                planner = gg.open_instance(run.id, "planner")
                with planner.session() as s:
                    assert s.history.append("user", "before").last_seq == 1
                    acks = [s.submit(s.history.append, "user", f"in flight {i}") for i in range(20)]
                    modulestore.kill()  # some of them applied, some not; none acknowledged to us yet
                    with service("modulestore", "--database-url", urls["modulestore"], "--port", port):
                        assert [a.result().last_seq for a in acks] == list(range(2, 22))
                        assert s.history.append("user", "after").last_seq == 22
                        window = planner.history.contents()
        assert [m.content for m in window.messages] == (
            ["before"] + [f"in flight {i}" for i in range(20)] + ["after"])
    finally:
        for url in urls.values():
            drop_database(url)
