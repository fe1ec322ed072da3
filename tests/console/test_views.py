"""The console model (R37-R46) folded from what the real services reported for runs driven through them."""

from __future__ import annotations

import random

from ggmodules.common.v1 import common_pb2 as S
from ggmodules.core.console import fold
from ggmodules.core.console.views import (
    AGENT_FILES,
    NONE_BY_CONSTRUCTION,
    UNMEASURED,
    Badge,
    measured,
)
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import ArchiveContents, BoardContents, HistoryContents
from ggmodules.core.vocabulary import Origin
from ggmodules.wire.console import events_from
from tests.console.runs import Run, edge, fsm, full, module, profile
from tests.harness import Suite

AGENT_SCOPE = S.MEMORY_SCOPE_AGENT


def _folder(model, agent):  # type: ignore[no-untyped-def]
    return next(f for f in model.instances().instances if f.agent_id == agent)


def _file(model, agent, kind):  # type: ignore[no-untyped-def]
    return next(m for m in _folder(model, agent).modules if m.path == f"modules/{kind.word}")


def _overview(model, kind):  # type: ignore[no-untyped-def]
    return next(o for o in model.modules().kinds if o.kind == kind)


def _row(model, profile_name, kind):  # type: ignore[no-untyped-def]
    section = next(p for p in model.agents().profiles if p.profile == profile_name)
    return next(r for r in section.modules if r.kind == kind)


def test_r37_instance_folder_lists_own_files_then_modules_in_kind_order_then_successors_and_subagents(
    suite: Suite,
) -> None:
    run = Run.create(suite, full("planner"), profile("coder", tasks=module()))
    planner = run.open("planner")
    coder = run.spawn(planner, "coder")
    successor = run.exec(planner, "planner")
    model = run.fold()
    folder = _folder(model, planner)
    assert folder.files == AGENT_FILES == (
        "Overview", "Prompt", "Surface", "Activity", "Context", "Requests", "Metrics", "Compaction",
    )
    assert [m.path for m in folder.modules] == [f"modules/{k.word}" for k in Kind]
    assert folder.successors == (successor,) and folder.subagents == (coder,)
    assert not folder.running and _folder(model, successor).running
    coder_files = [m.path for m in _folder(model, coder).modules]
    assert coder_files == ["modules/history", "modules/tasks", "modules/board"]
    assert [f.agent_id for f in model.instances().instances] == [planner, coder, successor]


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
    model = run.fold()
    memories = _file(model, b, Kind.MEMORIES).strip
    assert memories.shared and memories.link_count == 3 and not memories.handed_on
    history = _file(model, coder, Kind.HISTORY).strip
    assert history.store_id == run.store(a, Kind.HISTORY)
    assert history.origin == Origin.TRANSFERRED
    assert history.handed_on and not history.shared and history.link_count == 0
    # The same on the other two grains: counted as shared nowhere.
    row = next(r for r in _overview(model, Kind.HISTORY).stores if r.store_id == history.store_id)
    assert row.handed_on and not row.shared and row.holders == (a, coder)
    assert _overview(model, Kind.HISTORY).shared_stores == 0
    assert _overview(model, Kind.MEMORIES).widest_share == 3
    assert _folder(model, copy).cause == "fork"


def test_r38_the_board_passed_along_a_chain_is_handed_on_not_shared(suite: Suite) -> None:
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history"))
    run = Run.create(suite, profile("planner"), profile("coder"), machine=machine)
    a = run.open("planner")
    run.issue(a, "ship it")
    coder = run.transition(a, "code")
    model = run.fold()
    board = _file(model, coder, Kind.BOARD).strip
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
    model = run.fold()
    history = _file(model, a, Kind.HISTORY)
    assert [(t.turn, [m.content for m in t.messages]) for t in history.turns] == [
        (1, ["plan the work", "and then some"]),
        (2, ["next turn"]),
    ]
    assert history.figures is None
    tasks = _file(model, a, Kind.TASKS)
    assert tasks.turns == () and tasks.figures is not None
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
    model = run.fold(run.turn(copy, 3, memories=40), run.turn(coder, 1, history=7))
    strip = _file(model, copy, Kind.MEMORIES).strip
    assert (strip.store_id, strip.kind, strip.origin, strip.may_write) == (
        run.store(a, Kind.MEMORIES), Kind.MEMORIES, Origin.PROFILE, True,
    )
    assert [c.agent_id for c in strip.co_holders] == [a] and strip.co_holders[0].file == "modules/memories"
    assert [(e.what, e.agent_id, e.cause) for e in strip.lifetime] == [
        ("created", a, "open"),
        ("shared (profile)", copy, f"fork of {a}"),
        ("written (write_pad)", a, ""),
        ("drained", a, f"exec {a} -> {coder}"),
    ]
    assert strip.cost_this_window == measured(40) and strip.cost_all_holders == measured(40)
    assert not strip.dropped and strip.shared and strip.link_count == 2
    # The reader's profile store is its own; it holds it read-only.
    assert _file(model, r, Kind.MEMORIES).strip.may_write is False
    # The planner's tasks went with nobody (the coder has none): every holder let go.
    tasks = _file(model, a, Kind.TASKS).strip
    assert tasks.dropped and tasks.lifetime[-1].what == "drained"
    assert tasks.cost_all_holders == UNMEASURED


def test_r41_the_modules_view_is_offered_only_when_a_profile_enables_more_than_the_window(
    suite: Suite,
) -> None:
    bare = Run.create(suite, profile("chat"), board=False)
    agent = bare.open("chat")
    model = bare.fold()
    assert not model.instances().modules_view and model.modules().kinds == ()
    history = _file(model, agent, Kind.HISTORY)
    assert history.path == "modules/history" and not history.strip.links_to_modules_view
    rich = Run.create(suite, profile("chat", tasks=module()), board=False)
    agent = rich.open("chat")
    model = rich.fold()
    assert model.instances().modules_view and model.modules().modules_view
    assert _file(model, agent, Kind.HISTORY).strip.links_to_modules_view


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
    model = run.fold(
        run.turn(a, 1, memories=10, tasks=3), run.turn(b, 1, memories=12, tasks=0),
        run.turn(successor, 1, memories=5, tasks=1),
    )
    memories = _overview(model, Kind.MEMORIES)
    assert (memories.store_count, memories.holders, memories.running) == (1, 4, 3)
    assert (memories.shared_stores, memories.widest_share) == (1, 3)
    assert memories.cost_per_turn == measured(27)
    assert memories.never_written.count == 0
    tasks = _overview(model, Kind.TASKS)
    assert (tasks.store_count, tasks.holders, tasks.running, tasks.shared_stores) == (3, 4, 3, 0)
    assert tasks.never_written.count == 2 and tasks.cost_per_turn == measured(4)
    assert [r.store_id for r in tasks.stores] == sorted(
        (r.store_id for r in tasks.stores), key=lambda s: int(s.split("-")[1])
    )
    assert [r.holders for r in tasks.stores][2] == (c, successor)


def test_r43_withheld_figures_history_never_written_archive_cost_and_unmeasured_versus_zero(
    suite: Suite,
) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    b = run.open("planner")
    run.archive(a, "old thread")
    model = run.fold(run.turn(a, 2, tasks=0, history=120))
    history = _overview(model, Kind.HISTORY)
    assert history.never_written.count is None and history.never_written.withheld
    assert _overview(model, Kind.TASKS).never_written.count == 2
    archive = _overview(model, Kind.ARCHIVE)
    assert archive.cost_per_turn == NONE_BY_CONSTRUCTION
    assert _file(model, a, Kind.ARCHIVE).strip.cost_this_window == NONE_BY_CONSTRUCTION
    assert _file(model, a, Kind.TASKS).strip.cost_this_window == measured(0)
    assert _file(model, b, Kind.TASKS).strip.cost_this_window == UNMEASURED
    assert _file(model, a, Kind.MEMORIES).strip.cost_this_window == UNMEASURED  # reported turn, not listed
    # One window measured, one not: the sum over both is not passed off as a number.
    assert _overview(model, Kind.TASKS).cost_per_turn == UNMEASURED
    assert _overview(model, Kind.HISTORY).cost_per_turn == UNMEASURED


def test_r44_store_detail_has_identity_holders_lifetime_costs_and_contents(suite: Suite) -> None:
    run = Run.create(suite, full("planner"), profile("coder", tasks=module()))
    a = run.open("planner")
    coder = run.spawn(a, "coder")
    run.issue(coder, "deploy")
    run.say(a, "hello")
    run.archive(a, "kept thread")
    model = run.fold(run.turn(a, 1, board=9), run.turn(coder, 1, board=11))
    board = model.store_detail(run.store(a, Kind.BOARD))
    assert board is not None
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
    assert isinstance(board.contents, BoardContents)
    assert [i.id for i in board.contents.issues] == ["OPS-1"]
    history = model.store_detail(run.store(a, Kind.HISTORY))
    assert history is not None and isinstance(history.contents, HistoryContents)
    assert [m.content for m in history.contents.messages] == ["hello"]
    archive = model.store_detail(run.store(a, Kind.ARCHIVE))
    assert archive is not None and isinstance(archive.contents, ArchiveContents)
    assert [t.title for t in archive.contents.threads] == ["kept thread"]
    assert model.store_detail("tasks-999") is None


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
    model = run.fold()
    assert _row(model, "planner", Kind.MEMORIES).badge == Badge.AGENT_SCOPED
    assert _row(model, "planner", Kind.MEMORIES).inline_contents is not None
    assert _row(model, "planner", Kind.TASKS).badge == Badge.PER_INSTANCE
    assert _row(model, "planner", Kind.BOARD).badge == Badge.RUN_GLOBAL
    assert _row(model, "helper", Kind.MEMORIES).badge == Badge.RUN_GLOBAL
    coder_tasks = _row(model, "coder", Kind.TASKS)
    assert coder_tasks.badge == Badge.PER_INSTANCE and len(coder_tasks.store_ids) == 2
    # Split: the planner profile's memories after an exec brought a coder's own store in.
    run2 = Run.create(suite, full("planner", scope=AGENT_SCOPE), full("coder"))
    run2.open("planner")
    run2.open("planner")
    run2.exec(run2.open("coder"), "planner")
    assert _row(run2.fold(), "planner", Kind.MEMORIES).badge == Badge.SPLIT
    # Handed on: one window passed along a chain of one profile.
    run3 = Run.create(suite, profile("solo"))
    run3.exec(run3.open("solo"), "solo")
    assert _row(run3.fold(), "solo", Kind.HISTORY).badge == Badge.HANDED_ON


def test_r46_declared_scope_against_observed_distribution_carries_a_note(suite: Suite) -> None:
    inherit = full("helper", scope=S.MEMORY_SCOPE_INHERITED)
    run = Run.create(suite, inherit, full("planner", scope=AGENT_SCOPE), full("coder"))
    run.open("helper")
    run.open("helper")
    run.open("planner")
    successor = run.exec(run.open("coder"), "planner")
    model = run.fold()
    helper = _row(model, "helper", Kind.MEMORIES)
    assert helper.badge == Badge.PER_INSTANCE
    assert "declared scope: inherited" in helper.note and "each instance got its own" in helper.note
    planner = _row(model, "planner", Kind.MEMORIES)
    assert "declared scope: agent" in planner.note and f"-> {successor}" in planner.note
    assert _row(model, "coder", Kind.MEMORIES).note == ""
    # Notes only for runs that reported rosters.
    silent = fold(e for e in events_from(run.events()) if type(e.body).__name__ != "Roster")
    assert all(r.note == "" for p in silent.agents().profiles for r in p.modules)


def test_folding_the_same_events_again_in_any_order_gives_the_same_views(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=AGENT_SCOPE), full("coder"))
    a = run.open("planner")
    run.spawn(a, "coder")
    run.fork(a)
    run.say(a, "x")
    run.exec(a, "coder")
    events = events_from([*run.events(), run.turn(a, 1, history=3)])
    first = fold(events)
    shuffled = list(events) * 2
    random.Random(7).shuffle(shuffled)
    again = fold(shuffled)
    for view in ("instances", "modules", "agents"):
        assert getattr(first, view)() == getattr(again, view)()
    assert first.store_detail(run.store(a, Kind.HISTORY)) == again.store_detail(run.store(a, Kind.HISTORY))
