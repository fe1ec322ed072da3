"""The typed TypeScript client (clients/typescript) runs the README's FSM scenario against the real services.

The test compiles the client with tsc (a type error fails it), runs `dist/examples/fsm.js` as a subprocess
against the harness's Registry, ModuleStore, Transfer and Telemetry, and checks its JSON lines, then reads
the same run back with the Python SDK: both languages see one state.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest

from ggmodules.registry.v1 import registry_service_pb2 as reg_pb2
from ggmodules.sdk import Client
from tests.harness import ROOT, Suite
from tests.harness.flaky import FlakyProxy

STEPS = ["open_instance", "planner_wrote", "transition", "coder_reads", "report_turn", "subscribe", "refusal"]

Lines = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def fsm_run(suite: Suite, ts_client: Path) -> Lines:
    proc = subprocess.run(
        ["node", str(ts_client / "examples" / "fsm.js"), "--registry", suite.registry.address,
         "--modulestore", suite.modulestore.address, "--transfer", suite.transfer.address,
         "--telemetry", suite.telemetry.address],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, f"fsm.js exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert [line["step"] for line in lines] == STEPS
    return {line["step"]: line for line in lines}


def test_r19_r24_the_typescript_client_takes_the_fsm_edge_and_the_coder_reads_the_planners_window(
    fsm_run: Lines,
) -> None:
    opened = fsm_run["open_instance"]
    assert (opened["agent_id"], opened["fsm_state"]) == ("planner-0", "plan")
    moved = fsm_run["transition"]
    assert (moved["successor"], moved["to_state"]) == ("coder-0", "code")
    assert [(o["kind"], o["outcome"], o["before"], o["after"]) for o in moved["outcomes"]] == [
        ("HISTORY", "CARRIED", "history-0", "history-0"),
        ("MEMORIES", "DROPPED", "memories-0", ""),
        ("TASKS", "CARRIED", "tasks-0", "tasks-0"),
        ("ARCHIVE", "FRESH", "", "archive-0"),
    ]
    assert moved["opening_note"].startswith("history and tasks arrived from planner-0; memories were dropped")
    assert moved["credential_sent"] is True  # auth is on: the successor's credential came with the answer
    reads = fsm_run["coder_reads"]
    assert reads == {"step": "coder_reads", "system_prompt": "You code.", "messages": ["Build a CLI"],
                     "tasks": ["write the parser"]}


def test_r36_r47_the_planners_write_after_the_handover_is_a_typed_handed_on_refusal(fsm_run: Lines) -> None:
    refusal = fsm_run["refusal"]
    assert (refusal["code"], refusal["reason"]) == ("PERMISSION_DENIED", "HANDED_ON")
    assert refusal["metadata"]["successor_agent_id"] == "coder-0" or "coder-0" in refusal["message"]


def test_r33_r43_the_typescript_client_reports_a_turn_and_follows_the_coders_stream(fsm_run: Lines) -> None:
    assert fsm_run["report_turn"]["cursor"] > 0
    bodies = fsm_run["subscribe"]["bodies"]
    assert bodies[0] == "roster" and bodies[-1] == "turn" and "write" in bodies


def test_r32_python_reads_back_what_the_typescript_client_did(fsm_run: Lines, suite: Suite) -> None:
    run_id = fsm_run["open_instance"]["run_id"]
    with Client(suite.registry.address, suite.modulestore.address, suite.transfer.address,
                suite.telemetry.address) as gg:
        planner, coder = gg.agent(run_id, "planner-0"), gg.agent(run_id, "coder-0")
        assert (coder.profile, coder.instance.fsm_state) == ("coder", "code")
        window = coder.history.contents()
        assert (window.system_prompt, [m.content for m in window.messages]) == ("You code.", ["Build a CLI"])
        # "one more" was refused
        assert [t.title for t in coder.tasks.contents().tasks] == ["write the parser"]
        assert coder.store_id("tasks") == planner.store_id("tasks") == "tasks-0"
        modules = gg.inspect_modules(run_id)
        history = next(k for k in modules.kinds if k.kind == 1)
        assert history.cost_per_turn.measured_tokens == 42


def create_run_through(
    ts_client: Path, address: str, name: str, profile: str = "planner"
) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(["node", str(ts_client / "examples" / "create-run.js"), "--registry", address,
                           "--name", name, "--profile", profile],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    return proc.returncode, json.loads(proc.stdout.splitlines()[-1])


def test_r47_a_refusal_quoting_a_10000_character_profile_name_reaches_the_typescript_client_typed(
    suite: Suite, ts_client: Path
) -> None:
    """The status travels in the trailers, which Node's HTTP/2 reads up to its header list limit (64 KiB by
    default); the services keep a refusal's under 12 KiB (runtime/errors.py) whatever it quotes: the client
    gets the typed GgError, its quote cut, and nothing was created."""
    code, answer = create_run_through(ts_client, suite.registry.address, "ts long profile", "p" * 10_000)
    assert code == 1, answer
    assert (answer["code"], answer["reason"]) == ("INVALID_ARGUMENT", "INVALID_FIELD"), answer
    assert "p" * 150 + "…" in answer["message"] and "p" * 201 not in answer["message"]
    assert answer["violations"] and all(len(v["field"]) <= 256 for v in answer["violations"])
    with Client(suite.registry.address, suite.modulestore.address) as gg:
        assert [r for r in gg.iter_runs() if r.name == "ts long profile"] == []


def test_r49_the_typescript_client_retries_by_the_service_config_with_one_request_id(
    suite: Suite, ts_client: Path
) -> None:
    proxy = FlakyProxy(suite.registry.address, fail=2)
    try:
        code, answer = create_run_through(ts_client, proxy.address, "ts retried")
        creates = proxy.attempts("CreateRun")
        assert code == 0, answer
        assert [a.answered for a in creates] == ["UNAVAILABLE", "UNAVAILABLE", "forwarded"]
        assert len({a.body for a in creates}) == 1 and len({a.metadata["x-request-id"] for a in creates}) == 1
        assert reg_pb2.CreateRunRequest.FromString(creates[0].body).request_id == creates[0].metadata[
            "x-request-id"]

        # CANCELLED sent by the service (a replica stopping cancels calls it had not started) too: gRPC's
        # spelling in the service config, Connect's Code.Canceled in the client.
        proxy.code, proxy.fail = grpc.StatusCode.CANCELLED, 2
        code, answer = create_run_through(ts_client, proxy.address, "ts cancelled")
        assert code == 0, answer
        cancelled = proxy.attempts("CreateRun")[3:]
        assert [a.answered for a in cancelled] == ["CANCELLED", "CANCELLED", "forwarded"]
        proxy.code = grpc.StatusCode.UNAVAILABLE

        proxy.fail = 10  # past the policy's 4 attempts: the refusal arrives typed
        code, answer = create_run_through(ts_client, proxy.address, "ts unreachable")
        assert (code, answer["code"]) == (1, "UNAVAILABLE")
        assert len(proxy.attempts("CreateRun")) == 3 + 3 + 4

        proxy.pushback = "-1"  # a service that retried its own dependency says not to retry (gRFC A6)
        code, answer = create_run_through(ts_client, proxy.address, "ts pushed back")
        assert (code, answer["code"]) == (1, "UNAVAILABLE")
        assert len(proxy.attempts("CreateRun")) == 3 + 3 + 4 + 1
    finally:
        proxy.close()
    with Client(suite.registry.address, suite.modulestore.address) as gg:
        assert [r.name for r in gg.iter_runs() if r.id == answer.get("run_id", "")] == []
        assert sum(r.name == "ts retried" for r in gg.iter_runs()) == 1
        assert sum(r.name == "ts cancelled" for r in gg.iter_runs()) == 1
