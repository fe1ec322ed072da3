"""`ggmodules console RUN --once` against real service processes: ModuleStore and Registry report to
Telemetry, and the console prints the three views of the run from Telemetry's stream."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.core.kinds import Kind
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc
from tests.console._support.text import agent_rows, plain, section
from tests.harness import ROOT, ServiceProcess, open_channel, processes
from tests.harness import stubs as service_stubs
from tests.harness.console import Run, Stubs, full, module, profile


@pytest.fixture()
def services(tmp_path: Path) -> Iterator[list[ServiceProcess]]:
    db = tmp_path.as_posix()
    with processes(("modulestore", ("--database-url", f"sqlite:///{db}/ms.db"))) as (ms,), processes(
        ("registry", ("--database-url", f"sqlite:///{db}/reg.db", "--modulestore-address", ms.address)),
    ) as (reg,):
        args = ("--database-url", f"sqlite:///{db}/tel.db", "--modulestore-address", ms.address,
                "--registry-address", reg.address)
        with processes(("telemetry", args)) as (tel,):
            yield [ms, reg, tel]


def test_r37_r42_r45_console_once_prints_the_three_views_of_a_live_run(
    services: list[ServiceProcess],
) -> None:
    ms, reg, tel = services
    stubs = Stubs(
        service_stubs(open_channel(reg.address), "registry"),
        service_stubs(open_channel(ms.address), "modulestore"),
        transfer_service_pb2_grpc.TransferServiceStub(open_channel(ms.address)),  # not called
        telemetry_service_pb2_grpc.TelemetryServiceStub(open_channel(tel.address)),
    )
    run = Run.create(None, full("planner"), profile("coder", tasks=module()), stubs=stubs)
    a = run.open("planner")
    coder = run.spawn(a, "coder")
    run.say(a, "hello from the planner")
    run.settle()
    out = subprocess.run(
        [sys.executable, "-m", "ggmodules.cli.main", "console", run.run_id, "--once",
         "--telemetry-address", tel.address],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert [line for line in text.splitlines() if line.startswith("== ")] == [
        "== Instances ==", "== Modules ==", "== Agents ==",
    ]
    instances = plain(section(text, "Instances"))
    assert instances[0].split()[0] == a and "running" in instances[0] and f"subagents: {coder}" in instances
    assert any(line.split()[:2] == ["turn", "1"] and line.endswith("user: hello from the planner")
               for line in instances)
    board = next(line for line in section(text, "Modules") if line.startswith("board:"))
    assert [part.strip() for part in board.split("·")][:4] == [
        "board: 1 stores", "2 holders", "2 running", "1 shared (widest 2)",
    ]
    assert agent_rows(text)[("planner", "board")] == ("run-global", [run.store(a, Kind.BOARD)])


def test_console_reports_an_unknown_run_and_exits_non_zero(services: list[ServiceProcess]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ggmodules.cli.main", "console", "run-000000000000", "--once",
         "--telemetry-address", services[2].address],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )
    assert out.returncode == 1 and "has no telemetry" in out.stderr
