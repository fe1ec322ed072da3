"""The console as Telemetry serves it (the Inspect RPCs' answers, after ReportTurn) and as a person reads it
(the text the `ggmodules console` command prints from Telemetry's stream)."""

from __future__ import annotations

import re

import grpc
import pytest

from ggmodules.cli.console import caught_up, telemetry_address
from ggmodules.cli.console_text import LINK
from ggmodules.common.v1 import common_pb2 as S
from ggmodules.core.kinds import Kind
from ggmodules.server.telemetry.console import Console, repository_loader
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from tests.console._support.text import agent_rows, cells, module_lines, plain, section, text_of
from tests.harness import Suite, error_metadata, status_of
from tests.harness.console import Run, full, measured, module, profile


def test_r37_r42_r43_r44_r45_the_inspect_rpcs_answer_the_views_with_reported_costs(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=S.MEMORY_SCOPE_AGENT), profile("coder", tasks=module()))
    a = run.open("planner")
    b = run.open("planner")
    coder = run.spawn(a, "coder")
    run.pad(b, "notes")
    run.report(a, 1, memories=5)
    last = run.report(b, 1, memories=6)
    views = run.views()

    assert views.instances.cursor == views.modules.cursor == views.agents.cursor == last
    assert views.instances.modules_view
    assert [f.agent_id for f in views.instances.instances] == [a, b, coder]
    memories = views.file(b, Kind.MEMORIES).strip
    assert memories.shared and memories.link_count == 2
    assert (memories.cost_this_window, memories.cost_all_holders) == (measured(6), measured(11))
    assert [c.agent_id for c in memories.co_holders] == [a]

    assert [o.kind for o in views.modules.kinds] == [k for k in S.Kind.values() if k != S.KIND_UNSPECIFIED]
    assert views.overview(Kind.HISTORY).never_written.WhichOneof("value") == "withheld"
    assert views.overview(Kind.ARCHIVE).cost_per_turn.WhichOneof("value") == "none_by_construction"
    assert views.overview(Kind.MEMORIES).cost_per_turn == measured(11)

    row = views.row("planner", Kind.MEMORIES)
    assert row.badge == tel.BADGE_AGENT_SCOPED
    assert [e.body for e in row.inline_contents.memories.entries] == ["notes"]

    detail = views.detail(run.store(a, Kind.MEMORIES))
    assert [(h.agent_id, h.cost) for h in detail.holders] == [(a, measured(5)), (b, measured(6))]
    assert detail.summed_live_cost == measured(11)
    assert [e.body for e in detail.contents.memories.entries] == ["notes"]
    assert [e.cursor for e in detail.lifetime] == sorted(e.cursor for e in detail.lifetime)


def test_inspecting_an_unknown_run_or_store_is_not_found(suite: Suite) -> None:
    run = Run.create(suite, profile("chat"))
    run.open("chat")
    run.settle()
    telemetry = run.stubs.telemetry
    with pytest.raises(grpc.RpcError) as caught:
        telemetry.InspectAgents(pb.InspectAgentsRequest(run_id="run-000000000000"), timeout=30)
    assert status_of(caught.value) == (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")
    assert error_metadata(caught.value) == {"run_id": "run-000000000000"}
    with pytest.raises(grpc.RpcError) as caught:
        telemetry.GetStoreDetail(pb.GetStoreDetailRequest(run_id=run.run_id, store_id="tasks-9"), timeout=30)
    assert status_of(caught.value) == (grpc.StatusCode.NOT_FOUND, "STORE_NOT_FOUND")
    assert error_metadata(caught.value) == {"run_id": run.run_id, "store_id": "tasks-9"}


def test_r38_r43_r45_the_text_console_shows_links_handed_on_withheld_figures_and_badges(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=S.MEMORY_SCOPE_AGENT), profile("coder", tasks=module()))
    a = run.open("planner")
    b = run.open("planner")
    run.say(a, "hello there")
    successor = run.exec(a, "planner")
    run.report(successor, 1, history=30, memories=0)
    text = text_of(run)
    assert [line for line in text.splitlines() if line.startswith("== ")] == [
        "== Instances ==", "== Modules ==", "== Agents ==",
    ]
    window = module_lines(text, successor)["history"].split()
    assert window[0] == run.store(a, Kind.HISTORY) and "handed on" in " ".join(window)
    mine = module_lines(text, successor)["memories"]
    assert f"{LINK} 2" in mine and "cost this window: 0 tokens" in mine
    assert "cost this window: 30 tokens" in module_lines(text, successor)["history"]
    assert "cost this window: unmeasured" in module_lines(text, b)["memories"]
    overview = {line.split(":", 1)[0]: line for line in section(text, "Modules") if not line.startswith(" ")}
    assert "never written withheld" in overview["history"]
    assert "cost/turn none by construction" in overview["archive"]
    rows = agent_rows(text)
    assert rows[("planner", "memories")] == ("agent-scoped", [run.store(a, Kind.MEMORIES)])
    assert rows[("planner", "history")][0] == "per instance"
    instances = plain(section(text, "Instances"))
    assert f"successors: {successor}" in instances
    assert any(line.split()[:2] == ["turn", "1"] and line.endswith("user: hello there") for line in instances)


def test_r41_the_text_console_leaves_out_the_modules_view_of_a_run_without_one(suite: Suite) -> None:
    run = Run.create(suite, profile("chat"), board=False)
    agent = run.open("chat")
    text = text_of(run)
    titles = [line for line in text.splitlines() if line.startswith("== ")]
    assert titles == ["== Instances ==", "== Agents =="]
    assert list(module_lines(text, agent)) == ["history"]


def test_text_console_format(suite: Suite) -> None:
    """The one golden test of the terminal console's layout (tree, tables, wording), line by line."""
    run = Run.create(suite, full("planner"), profile("coder", tasks=module()))
    a = run.open("planner")
    coder = run.spawn(a, "coder")
    run.say(a, "hello from the planner")
    run.task(coder, "ship it")
    run.report(a, 1, history=12)
    text = text_of(run)
    lines = text.splitlines()
    assert re.fullmatch(rf"run {run.run_id}  \(cursor \d+\)", lines[0])
    instances = section(text, "Instances")
    assert instances[:7] == [
        f"{a}  [planner, open, running]",
        "├── Overview  Prompt  Surface  Activity  Context  Requests  Metrics  Compaction",
        "├── modules/",
        "│   ├── history   history-0  created rw  cost this window: 12 tokens  all holders: 12 tokens",
        "│   │   ├── lifetime: 2 entries; last written (append_messages) by planner-0",
        "│   │   └── turn 1 #1 user: hello from the planner",
        "│   ├── memories  memories-0  created rw  cost this window: unmeasured  all holders: unmeasured",
    ]
    board = instances.index(
        f"│   ├── board     board-0  run rw  cost this window: unmeasured  all holders: unmeasured  {LINK} 2"
    )
    assert instances[board + 1] == f"│   │   ├── co-holders: {coder}:modules/board"
    assert f"└── subagents: {coder}" in instances
    coder_tasks = instances.index(
        "    ├── tasks     tasks-1  created rw  cost this window: unmeasured  all holders: unmeasured"
    )
    assert instances[coder_tasks + 2] == "    │   └── 1 items   7 bytes   1 writes"
    modules = section(text, "Modules")
    board = modules.index(
        "board: 1 stores · 2 holders · 2 running · 1 shared (widest 2) · cost/turn unmeasured · "
        "never written 1"
    )
    assert cells(modules[board + 2]) == ["store", "holders", "running", "marks", "written", "cost/turn"]
    assert cells(modules[board + 4]) == [
        "board-0", f"{a}, {coder}", "2", f"{LINK} 2", "never written", "unmeasured",
    ]
    agents = section(text, "Agents")
    assert agents[0] == f"planner: {a}"
    assert cells(agents[4]) == ["history", "per instance", "history-0", ""]
    assert ["board", "run-global", "board-0", ""] in [cells(line) for line in agents]


def test_the_live_console_redraws_from_the_inspect_rpcs_each_time_the_stream_catches_up(suite: Suite) -> None:
    """It redraws once at the first heartbeat, then after each burst of events, and never on an idle
    heartbeat; what it draws is what the Inspect RPCs answer."""
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    run.say(a, "one")
    stored = run.stream()
    beat = [pb.SubscribeResponse(heartbeat=tel.Heartbeat(head_cursor=stored[-1].cursor))]
    responses = [pb.SubscribeResponse(event=e) for e in stored[:3]] + beat + beat
    responses += [pb.SubscribeResponse(event=e) for e in stored[3:]] + beat + beat
    assert list(caught_up(responses)) == [stored[2].cursor, stored[-1].cursor]
    assert list(caught_up(beat)) == [0]
    assert "user: one" in text_of(run)


def test_the_console_finds_telemetry_by_flag_then_environment_then_default() -> None:
    assert telemetry_address("h:1", {"GGMODULES_TELEMETRY_ADDRESS": "h:2"}) == "h:1"
    assert telemetry_address(None, {"GGMODULES_TELEMETRY_ADDRESS": "h:2"}) == "h:2"
    env = {"GGMODULES_TELEMETRY_ADDRESS": "h:2", "GGMODULES_CONSOLE_TELEMETRY_ADDRESS": "h:3"}
    assert telemetry_address(None, env) == "h:3"
    assert telemetry_address(None, {}) == "127.0.0.1:50054"


def test_a_kept_model_reads_and_folds_only_what_arrived_since_the_last_request(suite: Suite) -> None:
    """Telemetry keeps each run's folded model between Inspect requests: the second request reads only what
    arrived after the first one's cursor (a Console over Telemetry's own log, its loads recorded), and
    answers as a fresh fold of the whole stream does."""
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    run.settle()
    repo = suite.telemetry.running.service.extra["repository"]
    loader = repository_loader(repo)
    asked_after: list[int] = []

    async def load(run_id: str, after: int) -> list[tel.StreamEvent]:
        asked_after.append(after)
        return await loader(run_id, after)

    console = Console(load)
    request = pb.InspectInstancesRequest(run_id=run.run_id)
    first = suite.loop.run(console.inspect_instances(request))
    b = run.open("planner")
    run.settle()
    second = suite.loop.run(console.inspect_instances(request))

    assert [f.agent_id for f in first.instances] == [a]
    assert [f.agent_id for f in second.instances] == [a, b]
    assert asked_after == [0, first.cursor]
    assert second == suite.loop.run(Console(loader).inspect_instances(request))  # as a fresh fold reads it
    assert second == run.views().instances  # and as Telemetry's own console answers


def test_the_text_console_draws_what_writers_chose_as_text_never_as_markup_or_terminal_control(
    suite: Suite,
) -> None:
    """A model's "[/INST]" in a message ended the console with rich's MarkupError; "[link=…]" became a
    link; an escape sequence in a message went to the operator's terminal as it was."""
    run = Run.create(suite, profile("chat"))
    a = run.open("chat")
    run.say(a, "done [/INST] see [link=http://x]y[/link] \x1b]0;title\x07 \x1b[31mred")
    text = text_of(run)
    assert "\x1b" not in text and "\x07" not in text
    said = "turn 1 #1 user: done [/INST] see [link=http://x]y[/link] \\x1b]0;title\\x07 \\x1b[31mred"
    assert any(line.endswith(said) for line in section(text, "Instances")), section(text, "Instances")
