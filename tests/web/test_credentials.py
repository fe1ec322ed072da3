"""Both consoles send the caller's credential with every call to Telemetry as
`authorization: Bearer <jwt>` (`--token`, else GGMODULES_TOKEN). Telemetry does not check credentials yet
(issue 6), so the Telemetry here is a gRPC server that only records what each call carried and refuses a
call without the expected credential UNAUTHENTICATED, as the checking Telemetry will."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as pb_grpc
from ggmodules.web.telemetry import credential_metadata, token_of
from tests.harness import ROOT
from tests.web.conftest import WebConsole

TOKEN = "eyJhbGciOiJFZERTQSJ9.eyJydW4iOiJydW4tMSJ9.c2ln"


class Recorder(pb_grpc.TelemetryServiceServicer):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def _check(self, method: str, context: grpc.ServicerContext) -> None:
        carried = dict(context.invocation_metadata()).get("authorization", "")
        self.seen.append((method, carried))
        if carried != f"Bearer {TOKEN}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "a credential is required: pass --token")

    def Subscribe(self, request: pb.SubscribeRequest, context: grpc.ServicerContext) -> Iterator[object]:
        self._check("Subscribe", context)
        yield pb.SubscribeResponse(heartbeat=tel.Heartbeat(head_cursor=0))
        context.cancel()

    def InspectInstances(self, request: object, context: grpc.ServicerContext) -> pb.InspectInstancesResponse:
        self._check("InspectInstances", context)
        return pb.InspectInstancesResponse(cursor=1)

    def InspectModules(self, request: object, context: grpc.ServicerContext) -> pb.InspectModulesResponse:
        self._check("InspectModules", context)
        return pb.InspectModulesResponse(cursor=1)

    def InspectAgents(self, request: object, context: grpc.ServicerContext) -> pb.InspectAgentsResponse:
        self._check("InspectAgents", context)
        return pb.InspectAgentsResponse(cursor=1)


@pytest.fixture()
def telemetry() -> Iterator[tuple[str, Recorder]]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    recorder = Recorder()
    pb_grpc.add_TelemetryServiceServicer_to_server(recorder, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}", recorder
    finally:
        server.stop(0)


def console(address: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ggmodules.cli.main", "console", "run-1", "--once", "--telemetry-address",
         address, *extra],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env={**os.environ, **(env or {})},
    )


def test_the_token_comes_from_the_flag_then_the_environment() -> None:
    assert token_of("a", {"GGMODULES_TOKEN": "b"}) == "a"
    assert token_of(None, {"GGMODULES_TOKEN": "b"}) == "b"
    assert token_of(None, {}) == "" and credential_metadata("") == ()
    assert credential_metadata("t") == (("authorization", "Bearer t"),)


def test_the_terminal_console_sends_its_credential_on_every_call(telemetry: tuple[str, Recorder]) -> None:
    address, recorder = telemetry
    out = console(address, "--token", TOKEN)
    assert out.returncode == 0, out.stderr
    calls = ["Subscribe", "InspectInstances", "InspectModules", "InspectAgents"]
    assert [m for m, _ in recorder.seen] == calls
    assert {c for _, c in recorder.seen} == {f"Bearer {TOKEN}"}
    recorder.seen.clear()
    out = console(address, env={"GGMODULES_TOKEN": TOKEN})
    assert out.returncode == 0 and {c for _, c in recorder.seen} == {f"Bearer {TOKEN}"}
    refused = console(address, env={"GGMODULES_TOKEN": ""})
    assert refused.returncode == 2 and "UNAUTHENTICATED: a credential is required" in refused.stderr


def test_the_web_console_sends_its_credential_and_shows_a_refusal(telemetry: tuple[str, Recorder]) -> None:
    address, recorder = telemetry
    web = WebConsole(address, "--token", TOKEN)
    try:
        with urllib.request.urlopen(f"{web.url}/runs/run-1/agents", timeout=30) as answer:
            assert answer.status == 200
        assert ("InspectAgents", f"Bearer {TOKEN}") in recorder.seen
        assert {c for _, c in recorder.seen} == {f"Bearer {TOKEN}"}
    finally:
        web.close()
    anonymous = WebConsole(address)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{anonymous.url}/runs/run-1/agents", timeout=30)
        assert refused.value.code == 401
        assert "a credential is required" in refused.value.read().decode()
    finally:
        anonymous.close()
