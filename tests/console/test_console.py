"""The console as Telemetry serves it (the Inspect RPCs' answers) and as a person reads it (text)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from ggmodules.cli.console import follow, telemetry_address
from ggmodules.cli.console_text import LINK, render
from ggmodules.common.v1 import common_pb2 as S
from ggmodules.common.v1 import event_pb2
from ggmodules.core.console import ConsoleModel, fold
from ggmodules.core.errors import NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.server.telemetry.console import Console
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.wire.console import events_from
from tests.console.runs import Run, full, module, profile
from tests.harness import Suite


def _stored(events: Sequence[event_pb2.Event]) -> list[tel.StreamEvent]:
    """As Telemetry's log serves them: cursors with gaps (other runs' events in between)."""
    return [tel.StreamEvent(cursor=10 * i, event=e) for i, e in enumerate(events, 1)]


def _console(by_run: dict[str, list[tel.StreamEvent]]) -> Console:
    async def load(run_id: str, after: int) -> list[tel.StreamEvent]:
        return [e for e in by_run.get(run_id, []) if e.cursor > after]

    return Console(load)


def test_r37_r42_r44_r45_inspect_rpcs_answer_the_folded_views_with_the_log_cursor(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=S.MEMORY_SCOPE_AGENT), profile("coder", tasks=module()))
    a = run.open("planner")
    b = run.open("planner")
    coder = run.spawn(a, "coder")
    run.pad(b, "notes")
    stored = _stored([*run.events(), run.turn(a, 1, memories=5), run.turn(b, 1, memories=6)])
    console = _console({run.run_id: stored})

    instances = asyncio.run(console.inspect_instances(pb.InspectInstancesRequest(run_id=run.run_id)))
    assert instances.cursor == stored[-1].cursor and instances.modules_view
    assert [f.agent_id for f in instances.instances] == [a, b, coder]
    memories = next(m for m in instances.instances[1].modules if m.path == "modules/memories")
    assert memories.strip.shared and memories.strip.link_count == 2
    assert memories.strip.cost_all_holders.measured_tokens == 11
    assert memories.strip.co_holders[0].agent_id == a

    modules = asyncio.run(console.inspect_modules(pb.InspectModulesRequest(run_id=run.run_id)))
    assert [o.kind for o in modules.kinds] == [k for k in S.Kind.values() if k != S.KIND_UNSPECIFIED]
    history = modules.kinds[0]
    assert history.never_written.WhichOneof("value") == "withheld"
    assert modules.kinds[-1].cost_per_turn.WhichOneof("value") == "none_by_construction"
    assert modules.kinds[1].cost_per_turn.measured_tokens == 11

    agents = asyncio.run(console.inspect_agents(pb.InspectAgentsRequest(run_id=run.run_id)))
    planner = agents.profiles[0]
    row = next(r for r in planner.modules if r.kind == S.KIND_MEMORIES)
    assert row.badge == tel.BADGE_AGENT_SCOPED and row.inline_contents.memories.entries[0].body == "notes"

    store_id = run.store(a, Kind.MEMORIES)
    request = pb.GetStoreDetailRequest(run_id=run.run_id, store_id=store_id)
    detail = asyncio.run(console.get_store_detail(request))
    assert [h.agent_id for h in detail.detail.holders] == [a, b]
    assert detail.detail.summed_live_cost.measured_tokens == 11
    assert detail.detail.contents.memories.entries[0].body == "notes"
    assert [e.cursor for e in detail.detail.lifetime] == sorted(e.cursor for e in detail.detail.lifetime)


def test_inspecting_an_unknown_run_or_store_is_not_found() -> None:
    console = _console({})
    with pytest.raises(NotFound) as caught:
        asyncio.run(console.inspect_agents(pb.InspectAgentsRequest(run_id="run-000000000000")))
    assert caught.value.reason == Reason.RUN_NOT_FOUND
    roster = event_pb2.Event(run_id="run-1", agent_id="a-0", roster=event_pb2.RosterEvent(profile="a"))
    console = _console({"run-1": _stored([roster])})
    with pytest.raises(NotFound) as caught:
        asyncio.run(console.get_store_detail(pb.GetStoreDetailRequest(run_id="run-1", store_id="tasks-9")))
    assert caught.value.reason == Reason.STORE_NOT_FOUND


def test_r38_r43_r45_the_text_console_shows_links_handed_on_withheld_figures_and_badges(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=S.MEMORY_SCOPE_AGENT), profile("coder", tasks=module()))
    a = run.open("planner")
    run.open("planner")
    run.say(a, "hello there")
    successor = run.exec(a, "planner")
    text = render(run.fold(run.turn(successor, 1, history=30, memories=0)))
    sections = [line for line in text.splitlines() if line.startswith("== ")]
    assert sections == ["== Instances ==", "== Modules ==", "== Agents =="]
    assert f"{LINK} 2" in text
    assert "handed on" in text
    assert "turn 1 #1 user: hello there" in text
    assert "never written withheld" in text  # history
    assert "cost/turn none by construction" in text  # archive
    assert "cost this window: 30 tokens" in text and "cost this window: 0 tokens" in text
    assert "unmeasured" in text
    assert f"successors: {successor}" in text
    assert "  memories  agent-scoped" in text and "  history   per instance" in text


def test_r41_the_text_console_leaves_out_the_modules_view_of_a_run_without_one(suite: Suite) -> None:
    run = Run.create(suite, profile("chat"), board=False)
    run.open("chat")
    text = render(run.fold())
    assert "== Modules ==" not in text and "modules/" in text and "history" in text


def test_the_live_console_folds_the_subscription_and_renders_each_time_it_catches_up(suite: Suite) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    run.say(a, "one")
    stored = _stored(run.events())
    responses = [pb.SubscribeResponse(event=e) for e in stored[:3]]
    responses.append(pb.SubscribeResponse(heartbeat=tel.Heartbeat(head_cursor=stored[2].cursor)))
    responses += [pb.SubscribeResponse(event=e) for e in stored[3:]]
    responses.append(pb.SubscribeResponse(heartbeat=tel.Heartbeat(head_cursor=stored[-1].cursor)))
    seen = [(m.cursor, render(m)) for m in follow(responses, ConsoleModel())]
    assert [c for c, _ in seen] == [stored[2].cursor, stored[-1].cursor]
    assert seen[-1][1] == render(fold(events_from(stored)))
    assert "turn 1 #1 user: one" in seen[-1][1] and "#1 user: one" not in seen[0][1]


def test_the_console_finds_telemetry_by_flag_then_environment_then_default() -> None:
    assert telemetry_address("h:1", {"GGMODULES_TELEMETRY_ADDRESS": "h:2"}) == "h:1"
    assert telemetry_address(None, {"GGMODULES_TELEMETRY_ADDRESS": "h:2"}) == "h:2"
    env = {"GGMODULES_TELEMETRY_ADDRESS": "h:2", "GGMODULES_CONSOLE_TELEMETRY_ADDRESS": "h:3"}
    assert telemetry_address(None, env) == "h:3"
    assert telemetry_address(None, {}) == "127.0.0.1:50054"


def test_a_kept_model_reads_and_folds_only_what_arrived_since_the_last_request(suite: Suite) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    by_run = {run.run_id: _stored(run.events())}
    asked_after: list[int] = []

    async def load(run_id: str, after: int) -> list[tel.StreamEvent]:
        asked_after.append(after)
        return [e for e in by_run.get(run_id, []) if e.cursor > after]

    console = Console(load)
    request = pb.InspectInstancesRequest(run_id=run.run_id)
    first = asyncio.run(console.inspect_instances(request))
    b = run.open("planner")
    by_run[run.run_id] = _stored(run.events())  # the same cursors for what was there, then the new ones
    second = asyncio.run(console.inspect_instances(request))

    assert [f.agent_id for f in first.instances] == [a]
    assert [f.agent_id for f in second.instances] == [a, b]
    assert asked_after == [0, first.cursor]
    assert second == asyncio.run(_console(by_run).inspect_instances(request))  # as a fresh fold reads it
