"""The console defects issue 11 names, read through Telemetry's Inspect RPCs for runs driven through the real
services: each would mislead a person looking at the console."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as S
from ggmodules.core.kinds import Kind
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from tests.harness import Suite
from tests.harness.console import Run, full, module, profile

SCRATCHPAD = S.MEMORY_STRATEGY_SCRATCHPAD


def test_r45_a_store_an_exec_brought_in_and_a_spawn_spread_inside_the_profile_is_agent_scoped(
    suite: Suite,
) -> None:
    """Who spawned matters, not who held the store first: the lead's scratchpad reached the worker profile by
    an exec and then a worker spawned another worker that inherited it."""
    run = Run.create(
        suite,
        profile("lead", memories=module(strategy=SCRATCHPAD, scope=S.MEMORY_SCOPE_INSTANCE)),
        profile("worker", memories=module(strategy=SCRATCHPAD, scope=S.MEMORY_SCOPE_INHERITED)),
    )
    lead = run.open("lead")
    run.pad(lead, "the lead's notes")
    w0 = run.exec(lead, "worker")
    w1 = run.spawn(w0, "worker")
    assert run.store(w0, Kind.MEMORIES) == run.store(w1, Kind.MEMORIES) == run.store(lead, Kind.MEMORIES)
    views = run.views()
    row = views.row("worker", Kind.MEMORIES)
    assert row.badge == tel.BADGE_AGENT_SCOPED
    assert [e.body for e in row.inline_contents.memories.entries] == ["the lead's notes"]
    # A spawner of another profile still makes the store run-global.
    run2 = Run.create(
        suite,
        profile("lead", memories=module(strategy=SCRATCHPAD, scope=S.MEMORY_SCOPE_INSTANCE)),
        profile("worker", memories=module(strategy=SCRATCHPAD, scope=S.MEMORY_SCOPE_INHERITED)),
    )
    run2.spawn(run2.open("lead"), "worker")
    assert run2.views().row("worker", Kind.MEMORIES).badge == tel.BADGE_RUN_GLOBAL


def test_r44_history_contents_carry_open_views_and_pinned_blocks_and_a_close_takes_one_away(
    suite: Suite,
) -> None:
    run = Run.create(suite, profile("solo"), board=False)
    a = run.open("solo")
    run.say(a, "read the readme")
    run.write(a, Kind.HISTORY, open_view=svc.OpenView(view_id="readme", content="# CLI"))
    run.write(a, Kind.HISTORY, open_view=svc.OpenView(view_id="notes", content="draft"))
    run.write(a, Kind.HISTORY, pin_block=svc.PinBlock(block_id="goal", content="ship it"))
    run.write(a, Kind.HISTORY, close_view=svc.CloseView(view_id="notes"))
    copy = run.fork(a)
    history = run.views().detail(run.store(a, Kind.HISTORY)).contents.history
    assert [(b.id, b.content) for b in history.open_views] == [("readme", "# CLI")]
    assert [(b.id, b.content) for b in history.pinned_blocks] == [("goal", "ship it")]
    assert [m.content for m in history.messages] == ["read the readme"]
    # A fork's window starts with its source's views and pins.
    forked = run.views().detail(run.store(copy, Kind.HISTORY)).contents.history
    assert [b.id for b in forked.open_views] == ["readme"]
    assert [b.id for b in forked.pinned_blocks] == ["goal"]


def test_r44_a_never_written_store_shows_its_empty_contents(suite: Suite) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    views = run.views()
    tasks = views.detail(run.store(a, Kind.TASKS))
    assert tasks.contents.WhichOneof("contents") == "tasks" and list(tasks.contents.tasks.tasks) == []
    memories = views.detail(run.store(a, Kind.MEMORIES)).contents
    assert memories.WhichOneof("contents") == "memories"
    assert memories.memories.strategy == SCRATCHPAD and list(memories.memories.entries) == []
    assert views.detail(run.store(a, Kind.BOARD)).contents.WhichOneof("contents") == "board"
    row = next(r for r in views.overview(Kind.TASKS).stores if r.store_id == run.store(a, Kind.TASKS))
    assert not row.written


def test_r40_a_finished_runs_holders_are_shown_dropped_on_every_grain(suite: Suite) -> None:
    run = Run.create(suite, full("planner", scope=S.MEMORY_SCOPE_AGENT))
    a = run.open("planner")
    b = run.open("planner")
    run.task(a, "write the parser")
    before = run.views()
    assert not before.file(a, Kind.TASKS).strip.dropped
    run.finish()
    views = run.views()
    for agent in (a, b):
        assert not views.folder(agent).running
        assert all(m.strip.dropped for m in views.folder(agent).modules)
    tasks = run.store(a, Kind.TASKS)
    assert next(r for r in views.overview(Kind.TASKS).stores if r.store_id == tasks).dropped
    detail = views.detail(tasks)
    assert detail.identity.dropped and not any(h.active for h in detail.holders)
    assert detail.lifetime[-1].what == "dropped (run finished)"
    assert views.overview(Kind.MEMORIES).running == 0


def test_r37_forks_are_listed_in_their_source_instances_folder(suite: Suite) -> None:
    run = Run.create(suite, full("planner"))
    a = run.open("planner")
    c1 = run.fork(a)
    c2 = run.fork(a)
    grandchild = run.fork(c1)
    views = run.views()
    assert list(views.folder(a).forks) == [c1, c2]
    assert list(views.folder(c1).forks) == [grandchild]
    assert list(views.folder(c2).forks) == [] and list(views.folder(a).subagents) == []
