"""ReportTurn refuses what cannot be a turn report (R43, R47, R48): a figure for the archive (none by
construction), an agent no one knows, a kind or store the agent does not hold, a turn repeated or going
backwards. Each refusal has its reason and records nothing; an agent Telemetry has not ingested yet is
confirmed with the Registry rather than refused."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.registry.v1 import registry_pb2
from ggmodules.storage.telemetry import TelemetryRepository
from tests.harness import (
    InProcessTelemetry,
    Refusal,
    Suite,
    credit,
    drop_database,
    new_database_url,
    refused,
    status_of,
)
from tests.harness.registry import create_run, full_profile, open_instance, profile, store_ids
from tests.telemetry._support.runs import Tokens, report


def refusal(suite: Suite, run: str, agent: str, turn: int, *modules: Tokens, request_id: str = "") -> Refusal:
    """The code, reason, ErrorInfo metadata and message of a refused report."""
    return refused(lambda: report(suite, run, agent, turn, *modules, request_id=request_id))


def reported_turns(suite: Suite, run: str, agent: str, last_cursor: int) -> list[tuple[int, int]]:
    """(turn, stream_seq) of every turn report on the agent's stream, up to the one at `last_cursor`."""
    stream = suite.subscribe(run, agent)
    got = []
    while True:
        cursor, ev = stream.next_event()
        if ev.origin == "telemetry":
            got.append((ev.turn.turn, ev.stream_seq))
        if cursor >= last_cursor:
            return got


def coder(suite: Suite, *profiles: registry_pb2.Profile) -> registry_pb2.Instance:
    run = create_run(suite.reg, full_profile("coder"), *profiles).run_id
    return open_instance(suite.reg, run, "coder")


def test_r43_a_figure_for_the_archive_is_refused_as_none_by_construction(suite: Suite) -> None:
    agent = coder(suite)
    ids = store_ids(agent)

    code, reason, metadata, message = refusal(
        suite, agent.run_id, agent.agent_id, 1, (c.KIND_HISTORY, ids["history"], 900), (c.KIND_ARCHIVE, "", 0)
    )

    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "COST_NONE_BY_CONSTRUCTION")
    assert metadata["kind"] == "archive" and "none by construction" in message
    # The same turn without the archive is the agent's first report: the refusal recorded nothing. A
    # board figure is a figure like any other (a measured zero here).
    cursor = report(
        suite, agent.run_id, agent.agent_id, 1, (c.KIND_HISTORY, ids["history"], 900), (c.KIND_BOARD, "", 0)
    )
    assert reported_turns(suite, agent.run_id, agent.agent_id, cursor) == [(1, 1)]


def test_r47_a_report_for_an_agent_no_one_knows_is_refused_not_found(suite: Suite) -> None:
    agent = coder(suite)
    # Valid credentials for agents the suite never opened: what is refused is the agent, not the caller.
    credit(agent.run_id, "ghost-0")
    credit("run-000000000000", agent.agent_id)

    code, reason, metadata, message = refusal(suite, agent.run_id, "ghost-0", 1)
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")
    assert metadata["agent_id"] == "ghost-0" and "ghost-0" in message and "Registry" in message
    code, reason, _, _ = refusal(suite, "run-000000000000", agent.agent_id, 1)
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")
    code, reason, _, _ = refusal(suite, agent.run_id, "ghost-0", 1, request_id="ghost-turn")
    assert reason == "AGENT_NOT_FOUND"  # a request id does not make it known


def test_r43_a_figure_for_a_kind_or_a_store_the_agent_does_not_hold_is_refused(suite: Suite) -> None:
    agent = coder(suite, profile("lean"))  # lean: history only
    lean = open_instance(suite.reg, agent.run_id, "lean")
    theirs = store_ids(agent)

    code, reason, metadata, _ = refusal(suite, lean.run_id, lean.agent_id, 1, (c.KIND_TASKS, "", 10))
    assert (code, reason, metadata["kind"]) == (grpc.StatusCode.FAILED_PRECONDITION, "KIND_NOT_HELD", "tasks")
    code, reason, metadata, message = refusal(
        suite, lean.run_id, lean.agent_id, 1, (c.KIND_HISTORY, theirs["history"], 10)
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_A_HOLDER")
    assert metadata["held"] == store_ids(lean)["history"] and theirs["history"] in message

    cursor = report(suite, lean.run_id, lean.agent_id, 1, (c.KIND_HISTORY, store_ids(lean)["history"], 10))
    assert reported_turns(suite, lean.run_id, lean.agent_id, cursor) == [(1, 1)]


def test_r47_turns_only_go_forward_and_a_repeated_turn_is_already_reported(suite: Suite) -> None:
    agent = coder(suite)
    run, me = agent.run_id, agent.agent_id

    first = report(suite, run, me, 3, request_id="turn-3")
    assert report(suite, run, me, 3, request_id="turn-3") == first  # a retry: the first answer (R49)

    code, reason, metadata, _ = refusal(suite, run, me, 3, request_id="turn-3-again")
    assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "TURN_ALREADY_REPORTED")
    assert (metadata["last_turn"], metadata["cursor"]) == ("3", str(first))
    assert refusal(suite, run, me, 3)[1] == "TURN_ALREADY_REPORTED"  # without a request id as well
    code, reason, metadata, message = refusal(suite, run, me, 2, request_id="turn-2")
    assert (code, reason, metadata["last_turn"]) == (
        grpc.StatusCode.FAILED_PRECONDITION, "TURN_OUT_OF_ORDER", "3"
    )
    assert "turn 2" in message and "turn 3" in message

    later = report(suite, run, me, 7)  # a gap is fine
    assert reported_turns(suite, run, me, later) == [(3, 1), (7, 2)]


def test_r47_one_turn_reported_at_once_by_many_is_recorded_once(suite: Suite) -> None:
    agent = coder(suite)
    answers: list[str] = []

    def one(n: int) -> None:
        try:
            report(suite, agent.run_id, agent.agent_id, 1, request_id=f"racer-{n}")
            answers.append("recorded")
        except grpc.RpcError as err:
            answers.append(status_of(err)[1])

    threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(answers) == ["TURN_ALREADY_REPORTED"] * 7 + ["recorded"]
    cursor = report(suite, agent.run_id, agent.agent_id, 2)
    assert reported_turns(suite, agent.run_id, agent.agent_id, cursor) == [(1, 1), (2, 2)]


# -- an agent Telemetry has not ingested: confirmed with the Registry, never refused for the lag


def dead_address() -> str:
    """A local port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture(scope="module")
def lagging(backend_module: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """A suite whose Telemetry cannot reach ModuleStore: no roster is ever ingested, as if ingestion lagged
    behind every OpenInstance for good. The Registry is reachable."""
    with Suite(backend_module, Path(tmp_path_factory.mktemp(f"lag-{backend_module}")), transfer=False) as s:
        s.start_telemetry(modulestore_address=dead_address())
        yield s


def test_r47_an_agent_not_ingested_yet_is_confirmed_with_the_registry(lagging: Suite) -> None:
    assert isinstance(lagging.telemetry, InProcessTelemetry)
    repo = lagging.telemetry.running.service.extra["repository"]
    assert isinstance(repo, TelemetryRepository)
    run = create_run(lagging.reg, full_profile("coder"), profile("lean")).run_id
    agent = open_instance(lagging.reg, run, "coder")
    lean = open_instance(lagging.reg, run, "lean")
    credit(run, "ghost-0")
    code, reason, _, message = refusal(lagging, run, "ghost-0", 1)
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND") and "Registry" in message
    assert repo.agent(run, agent.agent_id) is None  # its roster has not reached Telemetry

    history = store_ids(agent)["history"]
    first = report(lagging, run, agent.agent_id, 1, (c.KIND_HISTORY, history, 50), (c.KIND_TASKS, "", 5))
    assert first > 0
    known = repo.agent(run, agent.agent_id)
    assert known is not None and known.last_turn == 1 and len(known.held) == 6

    # The Registry's roster and the turns reported so far are checked as for an ingested agent.
    assert refusal(lagging, run, agent.agent_id, 1)[1] == "TURN_ALREADY_REPORTED"
    assert refusal(lagging, run, lean.agent_id, 1, (c.KIND_TASKS, "", 5))[1] == "KIND_NOT_HELD"
    assert repo.agent(run, lean.agent_id) is None  # a refused report remembers nothing


def test_r47_an_agent_not_ingested_while_the_registry_is_down_is_unavailable_and_retryable(
    backend_module: str, tmp_path: Path
) -> None:
    lagging = Suite(backend_module, tmp_path, transfer=False)
    url = new_database_url(backend_module, "telemetry-alone", tmp_path)
    try:
        lagging.start_telemetry(database_url=url, modulestore_address=dead_address(),
                                registry_address=dead_address())
        credit("run-000000000001", "coder-0")
        code, reason, metadata, message = refusal(lagging, "run-000000000001", "coder-0", 1, request_id="t1")
        assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
        assert metadata["dependency"] == "Registry"
        assert "retry with the same request_id" in message.lower()
    finally:
        lagging.close()
        drop_database(url)
