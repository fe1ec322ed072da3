"""The console views (R37-R46) as Telemetry's Inspect RPCs answer them, for runs driven through the real
services, with the per-turn costs a runtime reported through ReportTurn."""

from __future__ import annotations

import random

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as S
from ggmodules.core.console import fold
from ggmodules.core.console.events import Roster
from ggmodules.core.kinds import Kind
from ggmodules.core.vocabulary import Origin
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.wire.console import detail_pb, events_from, folder_pb, overview_pb, profile_pb
from tests.harness import Suite, status_of
from tests.harness.console import (
    NONE_BY_CONSTRUCTION,
    UNMEASURED,
    Run,
    edge,
    fsm,
    full,
    measured,
    module,
    profile,
)

AGENT_SCOPE = S.MEMORY_SCOPE_AGENT


def test_r37_instance_folder_lists_own_files_then_modules_in_kind_order_then_successors_and_subagents(
    suite: Suite,
) -> None:
    run = Run.create(suite, full("planner"), profile("coder", tasks=module()))
    planner = run.open("planner")
    coder = run.spawn(planner, "coder")
    successor = run.exec(planner, "planner")
    views = run.views()
    folder = views.folder(planner)
    assert list(folder.files) == [
        "Overview", "Prompt", "Surface", "Activity", "Context", "Requests", "Metrics", "Compaction",
    ]
    assert [m.path for m in folder.modules] == [f"modules/{k.word}" for k in Kind]
    assert (list(folder.successors), list(folder.subagents)) == ([successor], [coder])
    assert not folder.running and views.folder(successor).running
    coder_files = [m.path for m in views.folder(coder).modules]
    assert coder_files == ["modules/history", "modules/tasks", "modules/board"]
    assert [f.agent_id for f in views.instances.instances] == [planner, coder, successor]


def test_r38_a_store_held_at_once_shows_a_link_and_count_and_a_handed_on_one_is_shared_nowhere(
    suite: Suite,
) -> None:
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history", "tasks"))
    run = Run.create(
        suite, full("planner", scope=AGENT_SCOPE), profile("coder", tasks=module()), machine=machine
    )
    a = run.open("planner")
    b = run.open("planner")
    copy = run.fork(a)
    coder = run.transition(a, "code")
    views = run.views()
    memories = views.file(b, Kind.MEMORIES).strip
    assert memories.shared and memories.link_count == 3 and not memories.handed_on
    history = views.file(coder, Kind.HISTORY).strip
    assert history.store_id == run.store(a, Kind.HISTORY)
    assert history.origin == Origin.TRANSFERRED
    assert history.handed_on and not history.shared and history.link_count == 0
    # The same on the other two grains: counted as shared nowhere.
    row = next(r for r in views.overview(Kind.HISTORY).stores if r.store_id == history.store_id)
    assert row.handed_on and not row.shared and list(row.holders) == [a, coder]
    assert views.overview(Kind.HISTORY).shared_stores == 0
    assert views.overview(Kind.MEMORIES).widest_share == 3
    detail = views.detail(history.store_id)
    assert detail.identity.handed_on and not detail.identity.shared
    assert views.folder(copy).cause == "fork"


def test_r38_the_board_passed_along_a_chain_is_handed_on_not_shared(suite: Suite) -> None:
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history"))
    run = Run.create(suite, profile("planner"), profile("coder"), machine=machine)
    a = run.open("planner")
    run.issue(a, "ship it")
    coder = run.transition(a, "code")
    board = run.views().file(coder, Kind.BOARD).strip
    assert board.origin == Origin.RUN
    assert board.handed_on and not board.shared and not board.dropped


def test_r39_the_history_file_carries_the_log_turn_by_turn_and_other_files_their_figures(
    suite: Suite,
) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    run.say(a, "plan the work", "and then some")
    run.say(a, "next turn")
    run.task(a, "write the parser")
    views = run.views()
    history = views.file(a, Kind.HISTORY)
    assert [(t.turn, [m.content for m in t.messages]) for t in history.turns] == [
        (1, ["plan the work", "and then some"]),
        (2, ["next turn"]),
    ]
    assert not history.HasField("figures")
    tasks = views.file(a, Kind.TASKS)
    assert len(tasks.turns) == 0 and tasks.HasField("figures")
    assert (tasks.figures.items, tasks.figures.writes) == (1, 1)


def test_r40_identity_strip_names_origin_access_lifetime_costs_co_holders_and_dropped(suite: Suite) -> None:
    reader = profile(
        "reader",
        memories=module(strategy=S.MEMORY_STRATEGY_SCRATCHPAD, scope=AGENT_SCOPE, read_only=True),
    )
    run = Run.create(suite, full("planner", scope=AGENT_SCOPE), reader, profile("coder"))
    a = run.open("planner")
    copy = run.fork(a)
    run.pad(a, "remember the milk")
    coder = run.exec(a, "coder")  # the coder holds no memories: planner's copy still does
    r = run.open("reader")
    run.report(copy, 3, memories=40)
    run.report(coder, 1, history=7)
    views = run.views()
    strip = views.file(copy, Kind.MEMORIES).strip
    assert (strip.store_id, strip.kind, strip.origin, strip.may_write) == (
        run.store(a, Kind.MEMORIES), Kind.MEMORIES, Origin.PROFILE, True,
    )
    assert [(c.agent_id, c.file) for c in strip.co_holders] == [(a, "modules/memories")]
    assert [(e.what, e.agent_id, e.cause) for e in strip.lifetime] == [
        ("created", a, "open"),
        ("shared (profile)", copy, f"fork of {a}"),
        ("written (write_pad)", a, ""),
        ("drained", a, f"exec {a} -> {coder}"),
    ]
    assert strip.cost_this_window == measured(40) and strip.cost_all_holders == measured(40)
    assert not strip.dropped and strip.shared and strip.link_count == 2
    # The reader's profile store is its own; it holds it read-only.
    assert views.file(r, Kind.MEMORIES).strip.may_write is False
    # The planner's tasks went with nobody (the coder has none): every holder let go.
    tasks = views.file(a, Kind.TASKS).strip
    assert tasks.dropped and tasks.lifetime[-1].what == "drained"
    assert tasks.cost_all_holders == UNMEASURED
    assert views.file(coder, Kind.HISTORY).strip.cost_this_window == measured(7)


def test_r41_the_modules_view_is_offered_only_when_a_profile_enables_more_than_the_window(
    suite: Suite,
) -> None:
    bare = Run.create(suite, profile("chat"), board=False)
    agent = bare.open("chat")
    views = bare.views()
    assert not views.instances.modules_view and not views.modules.modules_view
    assert len(views.modules.kinds) == 0
    history = views.file(agent, Kind.HISTORY)
    assert history.path == "modules/history" and not history.strip.links_to_modules_view
    rich = Run.create(suite, profile("chat", tasks=module()), board=False)
    agent = rich.open("chat")
    views = rich.views()
    assert views.instances.modules_view and views.modules.modules_view
    assert views.file(agent, Kind.HISTORY).strip.links_to_modules_view


def test_r42_each_kind_overview_counts_stores_holders_running_sharing_cost_and_never_written(
    suite: Suite,
) -> None:
    run = Run.create(suite, full("planner", scope=AGENT_SCOPE))
    a = run.open("planner")
    b = run.open("planner")
    c = run.open("planner")
    run.pad(a, "shared notes")
    run.task(b, "only b writes tasks")
    successor = run.exec(c, "planner")
    run.report(a, 1, memories=10, tasks=3)
    run.report(b, 1, memories=12, tasks=0)
    run.report(successor, 1, memories=5, tasks=1)
    views = run.views()
    memories = views.overview(Kind.MEMORIES)
    assert (memories.store_count, memories.holders, memories.running) == (1, 4, 3)
    assert (memories.shared_stores, memories.widest_share) == (1, 3)
    assert memories.cost_per_turn == measured(27)
    assert memories.never_written == tel.Figure(count=0)
    tasks = views.overview(Kind.TASKS)
    assert (tasks.store_count, tasks.holders, tasks.running, tasks.shared_stores) == (3, 4, 3, 0)
    assert tasks.never_written == tel.Figure(count=2) and tasks.cost_per_turn == measured(4)
    assert [r.store_id for r in tasks.stores] == [run.store(a, Kind.TASKS), run.store(b, Kind.TASKS),
                                                 run.store(c, Kind.TASKS)]
    assert list(tasks.stores[2].holders) == [c, successor]


def test_r43_withheld_figures_history_never_written_archive_cost_and_unmeasured_versus_zero(
    suite: Suite,
) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    b = run.open("planner")
    run.archive(a, "old thread")
    run.report(a, 2, tasks=0, history=120)
    views = run.views()
    history = views.overview(Kind.HISTORY)
    assert history.never_written.WhichOneof("value") == "withheld" and history.never_written.withheld
    assert views.overview(Kind.TASKS).never_written == tel.Figure(count=2)
    assert views.overview(Kind.ARCHIVE).cost_per_turn == NONE_BY_CONSTRUCTION
    assert views.file(a, Kind.ARCHIVE).strip.cost_this_window == NONE_BY_CONSTRUCTION
    assert views.file(a, Kind.TASKS).strip.cost_this_window == measured(0)
    assert views.file(b, Kind.TASKS).strip.cost_this_window == UNMEASURED
    assert views.file(a, Kind.MEMORIES).strip.cost_this_window == UNMEASURED  # reported turn, not listed
    # One window measured, one not: the sum over both is not passed off as a number.
    assert views.overview(Kind.TASKS).cost_per_turn == UNMEASURED
    assert views.overview(Kind.HISTORY).cost_per_turn == UNMEASURED
    assert views.file(a, Kind.HISTORY).strip.cost_this_window == measured(120)


def test_r44_store_detail_has_identity_holders_lifetime_costs_and_contents(suite: Suite) -> None:
    run = Run.create(suite, full("planner"), profile("coder", tasks=module()))
    a = run.open("planner")
    coder = run.spawn(a, "coder")
    run.issue(coder, "deploy")
    run.say(a, "hello")
    run.archive(a, "kept thread")
    run.report(a, 1, board=9)
    run.report(coder, 1, board=11)
    views = run.views()
    board = views.detail(run.store(a, Kind.BOARD))
    assert board.identity.store_id == run.store(a, Kind.BOARD) and board.identity.shared
    assert [(h.agent_id, h.origin, h.active, h.cost) for h in board.holders] == [
        (a, Origin.RUN, True, measured(9)),
        (coder, Origin.RUN, True, measured(11)),
    ]
    assert board.summed_live_cost == measured(20)
    assert [(e.what, e.cause) for e in board.lifetime] == [
        ("created", "open"),
        ("shared (run)", f"spawn by {a}"),
        ("written (create_issue)", ""),
    ]
    assert [e.cursor for e in board.lifetime] == sorted(e.cursor for e in board.lifetime)
    assert board.contents.WhichOneof("contents") == "board"
    assert [i.id for i in board.contents.board.issues] == ["OPS-1"]
    history = views.detail(run.store(a, Kind.HISTORY))
    assert [m.content for m in history.contents.history.messages] == ["hello"]
    archive = views.detail(run.store(a, Kind.ARCHIVE))
    assert [t.title for t in archive.contents.archive.threads] == ["kept thread"]
    with pytest.raises(grpc.RpcError) as caught:
        views.detail("tasks-999")
    assert status_of(caught.value) == (grpc.StatusCode.NOT_FOUND, "STORE_NOT_FOUND")


def test_r45_profiles_badge_each_kind_by_how_its_stores_are_distributed(suite: Suite) -> None:
    inherited = module(strategy=S.MEMORY_STRATEGY_SCRATCHPAD, scope=S.MEMORY_SCOPE_INHERITED)
    run = Run.create(
        suite,
        full("planner", scope=AGENT_SCOPE),
        profile("coder", tasks=module()),
        profile("helper", memories=inherited),
    )
    a = run.open("planner")
    b = run.open("planner")
    run.pad(b, "the planners' notes")
    c0 = run.open("coder")
    run.open("coder")
    run.exec(c0, "coder")
    run.spawn(a, "helper")
    views = run.views()
    memories = views.row("planner", Kind.MEMORIES)
    assert memories.badge == tel.BADGE_AGENT_SCOPED
    assert [e.body for e in memories.inline_contents.memories.entries] == ["the planners' notes"]
    assert views.row("planner", Kind.TASKS).badge == tel.BADGE_PER_INSTANCE
    assert not views.row("planner", Kind.TASKS).HasField("inline_contents")
    assert views.row("planner", Kind.BOARD).badge == tel.BADGE_RUN_GLOBAL
    assert views.row("helper", Kind.MEMORIES).badge == tel.BADGE_RUN_GLOBAL
    coder_tasks = views.row("coder", Kind.TASKS)
    assert coder_tasks.badge == tel.BADGE_PER_INSTANCE and len(coder_tasks.store_ids) == 2
    # Split: the planner profile's memories after an exec brought a coder's own store in.
    run2 = Run.create(suite, full("planner", scope=AGENT_SCOPE), full("coder"))
    run2.open("planner")
    run2.open("planner")
    run2.exec(run2.open("coder"), "planner")
    assert run2.views().row("planner", Kind.MEMORIES).badge == tel.BADGE_SPLIT
    # Handed on: one window passed along a chain of one profile.
    run3 = Run.create(suite, profile("solo"))
    run3.exec(run3.open("solo"), "solo")
    assert run3.views().row("solo", Kind.HISTORY).badge == tel.BADGE_HANDED_ON


def test_r46_declared_scope_against_observed_distribution_carries_a_note(suite: Suite) -> None:
    inherit = full("helper", scope=S.MEMORY_SCOPE_INHERITED)
    run = Run.create(suite, inherit, full("planner", scope=AGENT_SCOPE), full("coder"))
    h0 = run.open("helper")
    run.open("helper")
    run.open("planner")
    successor = run.exec(run.open("coder"), "planner")
    views = run.views()
    helper = views.row("helper", Kind.MEMORIES)
    assert helper.badge == tel.BADGE_PER_INSTANCE
    assert "declared scope: inherited" in helper.note and "each instance got its own" in helper.note
    planner = views.row("planner", Kind.MEMORIES)
    assert "declared scope: agent" in planner.note and f"-> {successor}" in planner.note
    assert views.row("coder", Kind.MEMORIES).note == ""

    # Notes only from what instances reported in their rosters: the same stream without the second
    # helper's roster has one helper and no note for it; without any roster, no profile sections at all
    # (the stores are still there, so nothing is made up from them).
    events = events_from(run.stream())
    second_helper = [e for e in events if isinstance(e.body, Roster) and e.body.profile == "helper"][1]
    partial = fold(e for e in events if e is not second_helper).agents()
    section = next(p for p in partial.profiles if p.profile == "helper")
    assert list(section.instances) == [h0]
    assert next(r for r in section.modules if r.kind == Kind.MEMORIES).note == ""
    silent = fold(e for e in events if not isinstance(e.body, Roster))
    assert silent.agents().profiles == () and len(silent.modules().kinds) == len(views.modules.kinds)


def test_the_inspect_answers_are_the_fold_of_the_stream_in_any_order(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=AGENT_SCOPE), full("coder"))
    a = run.open("planner")
    run.spawn(a, "coder")
    run.fork(a)
    run.say(a, "x")
    run.report(a, 1, history=3)
    run.exec(a, "coder")
    views = run.views()
    events = events_from(run.stream())
    first = fold(events)
    assert [folder_pb(f) for f in first.instances().instances] == list(views.instances.instances)
    assert [overview_pb(o) for o in first.modules().kinds] == list(views.modules.kinds)
    assert [profile_pb(p) for p in first.agents().profiles] == list(views.agents.profiles)
    history = run.store(a, Kind.HISTORY)
    detail = first.store_detail(history)
    assert detail is not None and detail_pb(detail) == views.detail(history)
    # Folding the same events again, twice over and shuffled, gives the same views.
    shuffled = list(events) * 2
    random.Random(7).shuffle(shuffled)
    again = fold(shuffled)
    for view in ("instances", "modules", "agents"):
        assert getattr(first, view)() == getattr(again, view)()
    assert first.store_detail(history) == again.store_detail(history)
